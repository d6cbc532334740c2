// IPbus 2.0 target in RTL: what a board's firmware runs between its UDP engine and its register
// bus, checked byte for byte against the C++ target (protocol/ipbus/target.cpp) that it mirrors.
// docs/ipbus-rtl.md describes it as built.
//
// Datagrams in and out are AXI4-Stream, 32 bits, the UDP payload's first byte in tdata[31:24]
// (network order); tkeep marks the valid bytes of the last beat (1000, 1100, 1110 or 1111; every
// other beat 1111). Replies are whole words (no tkeep). A datagram is taken whole into the
// request buffer, then handled; nothing is taken while a reply goes out.
//
// Per datagram, as the C++ target's handle():
//   - longer than the MTU (1472 bytes): dropped (Oversized); not whole words or under 4 bytes:
//     dropped (Truncated); first word no IPbus 2.0 header in either byte order, reserved bits
//     set, or an unknown packet type: dropped (BadPacketHeader);
//   - status request (16 words, else dropped BadStatus): the status reply, always big-endian:
//     MTU, N_BUFFERS, the next expected control header, 16 bytes of traffic history, the last 4
//     control headers received and sent;
//   - resend request (1 word, else dropped BadResend): the stored reply of that packet id, as it
//     was sent; dropped (BadResend) when none is stored;
//   - control packet: id 0 is never sequence-checked; any other id must be the next expected
//     (else dropped OutOfSequence). Transactions run in order until the first in error, whose
//     header carries the error's info code; a transaction whose reply would pass the MTU, of a
//     bad version, type or info code, an RMW of other than 1 word, or with its body past the
//     packet's end is a BadHeader. Every bus access is checked whole before its first word moves
//     (windows and the generated register access rules), so a refused one changes nothing. The
//     reply goes back in the request's byte order; a sequence-checked packet's reply is kept in
//     one of N_BUFFERS buffers for resends.
//
// Cycles: requests in, bus words and reply words out each move a word a cycle; an access starts in
// the cycle its predecessor's response is taken, and the reply leaves through a 3-word FIFO. A
// datagram is store-and-forward at both ends (a dropped one makes no access; a transaction's
// reply header carries its outcome), so a block costs request + bus + reply words and 10 cycles.
//
// The bus: AXI4-Lite master, one transaction outstanding; byte address = IPbus word address x 4.
// Windows (word addresses): the controller 0x00000 + ocs_reg_pkg's map, the emulator control
// block 0x10000 + emu_reg_pkg's map (EMU_WINDOW; absent on a board), the scratch RAM 0x20000 +
// RAM_WORDS. A SLVERR/DECERR response ends the transaction with a read or write error; a bus that
// does not answer within AXI_TIMEOUT cycles, with a read or write timeout. An access to the
// emulator's block has no timeout: the emulator answers RUN_UNTIL and ADVANCE_NS once simulated
// time has passed (milliseconds), with this transactor clocked all the while.
`include "mxtb_assert.svh"
`include "axi_ports.svh"

module ipbus_transactor #(
  parameter int N_BUFFERS = 16,       // replies kept for resend requests (2..16)
  parameter int MTU_BYTES = 1472,     // an Ethernet MTU less the IP and UDP headers (smaller: proofs)
  parameter int RAM_WORDS = 4096,     // the board's scratch RAM at word address 0x20000
  parameter bit EMU_WINDOW = 1'b1,    // the emulator's control block at word address 0x10000
  parameter int AXI_TIMEOUT = 65535   // cycles a bus access may wait for its response
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  // request datagram (AXI4-Stream)
  `AXIS_SINK_PORTS(s_axis_),
  // reply datagram (AXI4-Stream)
  `AXIS_SOURCE_PORTS(m_axis_),
  // one pulse per datagram handled: its kind (0 control, 1 status, 2 resend, 3 dropped) and the
  // fault it met (protocol/ipbus/target.h's Fault order: 0 Oversized .. 7 BusError; 15 none)
  output logic        stat_valid_o,
  output logic [1:0]  stat_kind_o,
  output logic [3:0]  stat_fault_o,
  // AXI4-Lite master; the response bits it does not use are waived at the end
  `AXIL_MASTER_PORTS(m_axil_)
);

  // ---- constants of the protocol (protocol/ipbus/codec.h) ----
  localparam int MTU_WORDS = MTU_BYTES / 4;             // 368
  localparam int STATUS_WORDS = 16;
  localparam int SLOTS = N_BUFFERS + 1;                 // the last: replies of packets with id 0
  localparam int OUT_WORDS = SLOTS * MTU_WORDS;
  localparam int SW = $clog2(SLOTS);
  localparam int BW = $clog2(N_BUFFERS);
  localparam int OW = $clog2(OUT_WORDS);
  localparam int PW = 9;                                // positions in a packet: 0..MTU_WORDS
  localparam logic [31:0] EMU_BASE = 32'h0001_0000;
  localparam logic [31:0] RAM_BASE = 32'h0002_0000;
  localparam logic [32:0] CTRL_WORDS = 33'd1 << (ocs_reg_pkg::REG_ADDR_WIDTH - 2);
  localparam logic [32:0] EMU_WORDS = 33'd1 << (emu_reg_pkg::REG_ADDR_WIDTH - 2);
  localparam int TW = $clog2(AXI_TIMEOUT + 1);

  // Fault codes (protocol/ipbus/target.h, Fault) and traffic-history codes of the status reply.
  localparam logic [3:0] F_OVERSIZED = 4'd0, F_TRUNCATED = 4'd1, F_BAD_HEADER = 4'd2, F_BAD_STATUS = 4'd3,
                         F_BAD_RESEND = 4'd4, F_OUT_OF_SEQ = 4'd5, F_BAD_TX = 4'd6, F_BUS_ERROR = 4'd7,
                         F_NONE = 4'd15;
  localparam logic [7:0] H_CONTROL = 8'h01, H_STATUS = 8'h02, H_RESEND = 8'h03, H_DROPPED = 8'h0F;
  // Transaction types and info codes.
  localparam logic [3:0] T_READ = 4'd0, T_WRITE = 4'd1, T_NI_READ = 4'd2, T_NI_WRITE = 4'd3, T_RMW_BITS = 4'd4,
                         T_RMW_SUM = 4'd5;
  localparam logic [3:0] I_SUCCESS = 4'h0, I_BAD_HEADER = 4'h1, I_READ_ERROR = 4'h4, I_WRITE_ERROR = 4'h5,
                         I_READ_TIMEOUT = 4'h6, I_WRITE_TIMEOUT = 4'h7, I_REQUEST = 4'hF;

  function automatic logic [31:0] bswap(input logic [31:0] w);
    bswap = {w[7:0], w[15:8], w[23:16], w[31:24]};
  endfunction
  /* verilator lint_off UNUSEDSIGNAL */  // the version and qualifier nibbles are what it looks at
  function automatic logic looks_like_header(input logic [31:0] w);
    looks_like_header = w[31:28] == 4'h2 && w[7:4] == 4'hF;
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  // ---- state ----
  typedef enum logic [4:0] {
    S_RX, S_DECIDE, S_X_HDR_A, S_X_HDR, S_X_ADDR, S_X_TERM1, S_X_TERM2, S_X_CHECK, S_X_STREAM,
    S_X_RMW_WRITE, S_X_RMW_BUS, S_X_ERROR, S_X_NEXT, S_FINISH, S_TX, S_DONE
  } state_e;
  state_e state_q;

  // The request buffer, written by the receiver in the packet's byte order made big-endian, read
  // by the executor one cycle after the address.
  localparam int RXW = $clog2(MTU_WORDS);
  logic [31:0] rx_mem [MTU_WORDS];
  logic        rx_we;
  /* verilator lint_off UNUSEDSIGNAL */  // positions run to MTU_WORDS; the buffer's last is one less
  logic [PW-1:0] rx_wa, rx_ra;
  /* verilator lint_on UNUSEDSIGNAL */
  logic [31:0] rx_wd, rx_rd;
  always_ff @(posedge clk_i) begin
    if (rx_we) rx_mem[rx_wa[RXW-1:0]] <= rx_wd;
    rx_rd <= rx_mem[rx_ra[RXW-1:0]];
  end

  // The reply buffers: one per kept reply, and one for packets with id 0.
  logic [31:0] out_mem [OUT_WORDS];
  logic        out_we;
  logic [OW-1:0] out_wa, out_ra;
  logic [31:0] out_wd, out_rd;
  always_ff @(posedge clk_i) begin
    if (out_we) out_mem[out_wa] <= out_wd;
    out_rd <= out_mem[out_ra];
  end

  // The datagram being received or handled.
  logic [PW:0]   beats_q;       // saturates past the MTU
  logic [3:0]    keep_q;        // the last beat's
  logic          order_ok_q, little_q;
  logic [31:0]   hdr_q;         // word 0, big-endian
  logic [PW-1:0] n_q;           // words in the request buffer
  logic [1:0]    kind_q;
  logic [3:0]    fault_q;

  // Target state (the C++ target's members).
  logic [15:0]   next_id_q;
  logic [127:0]  history_q;     // newest in the top byte
  logic [31:0]   received_q [4], sent_q [4];
  logic [15:0]   slot_id_q [N_BUFFERS];
  logic [N_BUFFERS-1:0] slot_valid_q;
  logic [PW-1:0] slot_len_q [SLOTS];
  logic [SLOTS-1:0] slot_little_q;
  logic [BW-1:0] newest_q;      // the slot written last (a ring: the next one is the oldest)
  logic [BW-1:0] oldest_slot;
  assign oldest_slot = newest_q == BW'(N_BUFFERS - 1) ? '0 : newest_q + 1'b1;

  // The control packet in execution.
  logic [SW-1:0] slot_q;        // where its reply goes
  logic [PW-1:0] pos_q;         // its next transaction header
  logic [PW-1:0] optr_q;        // words of reply written
  logic [31:0]   th_q;          // transaction header
  logic [31:0]   addr_q, term1_q, term2_q, old_q;
  logic [8:0]    count_q, i_q;  // bus words of the transaction, done (answered without error)

  // Transmission: words read from the reply slot (or the status words) into a 3-word FIFO.
  logic          tx_status_q;   // the status reply, else a reply slot
  logic [SW-1:0] tx_slot_q;
  logic [PW-1:0] tx_rd_q, tx_len_q;   // the next word to read, the reply's words
  logic          tx_little_q;
  logic          pend_q, pend_last_q;  // a word read last cycle (out_rd, status_rd_q), the reply's last
  logic [31:0]   status_rd_q;
  logic [32:0]   fifo_q [3];    // {last, word}
  logic [1:0]    fifo_n_q, fifo_rd_q, fifo_wr_q;

  // ---- the transaction header being executed (valid in S_X_HDR from rx_rd, later from th_q) ----
  /* verilator lint_off UNUSEDSIGNAL */  // its id bits come back in the reply from th_q or rx_rd
  logic [31:0] th;
  /* verilator lint_on UNUSEDSIGNAL */
  assign th = state_q == S_X_HDR ? rx_rd : th_q;
  logic [3:0] th_type, th_info;
  logic [7:0] th_words;
  assign th_type = th[7:4];
  assign th_info = th[3:0];
  assign th_words = th[15:8];
  logic th_incr, th_write, th_rmw;
  assign th_incr = th_type == T_READ || th_type == T_WRITE;
  assign th_write = th_type == T_WRITE || th_type == T_NI_WRITE;
  assign th_rmw = th_type == T_RMW_BITS || th_type == T_RMW_SUM;
  logic [9:0] req_body, rep_body;   // words after the header in the request and in the reply
  always_comb begin
    unique case (th_type)
      T_READ, T_NI_READ: begin req_body = 10'd1; rep_body = {2'b0, th_words}; end
      T_WRITE, T_NI_WRITE: begin req_body = 10'd1 + {2'b0, th_words}; rep_body = 10'd0; end
      T_RMW_BITS: begin req_body = 10'd3; rep_body = 10'd1; end
      default: begin req_body = 10'd2; rep_body = 10'd1; end
    endcase
  end
  // Header checks in the C++ target's order; each a BadHeader reply that ends the packet.
  logic [9:0] body_end, reply_need;
  logic more;
  assign body_end = {1'b0, pos_q} + 10'd1 + req_body;
  assign more = body_end < {1'b0, n_q};
  assign reply_need = {1'b0, optr_q} + 10'd1 + rep_body + {9'd0, more};
  logic th_bad;
  assign th_bad = th[31:28] != 4'h2 || th_type > T_RMW_SUM || th_info != I_REQUEST || (th_rmw && th_words != 8'd1) ||
                  body_end > {1'b0, n_q} || reply_need > 10'(MTU_WORDS);

  // ---- the whole access checked before its first word moves (the emulator's BusPort rules) ----
  // From the registered header only: the check runs in S_X_CHECK, and keeping the request
  // buffer's output out of it keeps the adder chains off the block RAM's path.
  logic [7:0] q_words;
  logic q_incr, q_write, q_rmw;
  assign q_words = th_q[15:8];
  assign q_incr = th_q[7:4] == T_READ || th_q[7:4] == T_WRITE;
  assign q_write = th_q[7:4] == T_WRITE || th_q[7:4] == T_NI_WRITE;
  assign q_rmw = th_q[7:4] == T_RMW_BITS || th_q[7:4] == T_RMW_SUM;
  logic [8:0]  span_ram, span_win, n_check;
  logic [32:0] addr_end_ram, addr_end_win;
  logic in_ram, in_ram_window, in_ctrl, in_emu, rules_ok, access_ok;
  logic [7:0] run_r, run_w;
  always_comb begin
    span_ram = q_incr ? {1'b0, q_words} : 9'd1;
    span_win = q_incr ? (q_words == 8'd0 ? 9'd1 : {1'b0, q_words}) : 9'd1;
    n_check = q_incr ? {1'b0, q_words} : (q_words == 8'd0 ? 9'd0 : 9'd1);
    addr_end_ram = {1'b0, addr_q} + {24'd0, span_ram};
    addr_end_win = {1'b0, addr_q} + {24'd0, span_win};
    in_ram = addr_q >= RAM_BASE && addr_end_ram <= {1'b0, RAM_BASE} + 33'(RAM_WORDS);
    in_ram_window = addr_q >= RAM_BASE && {1'b0, addr_q} < {1'b0, RAM_BASE} + 33'(RAM_WORDS);
    in_ctrl = addr_end_win <= CTRL_WORDS;
    in_emu = EMU_WINDOW && addr_q >= EMU_BASE && addr_end_win <= {1'b0, EMU_BASE} + EMU_WORDS;
    run_r = 8'd0;
    run_w = 8'd0;
    if (in_ctrl) begin
      run_r = ocs_reg_pkg::read_run(addr_q[ocs_reg_pkg::REG_ADDR_WIDTH-3:0]);
      run_w = ocs_reg_pkg::write_run(addr_q[ocs_reg_pkg::REG_ADDR_WIDTH-3:0]);
    end else if (in_emu) begin
      run_r = emu_reg_pkg::read_run(addr_q[emu_reg_pkg::REG_ADDR_WIDTH-3:0]);
      run_w = emu_reg_pkg::write_run(addr_q[emu_reg_pkg::REG_ADDR_WIDTH-3:0]);
    end
    if (n_check == 9'd0) rules_ok = 1'b1;
    else if (q_rmw) rules_ok = run_r != 8'd0 && run_w != 8'd0;
    else if (q_write) rules_ok = {1'b0, run_w} >= n_check;
    else rules_ok = {1'b0, run_r} >= n_check;
    access_ok = in_ram || (!in_ram_window && (in_ctrl || in_emu) && rules_ok);
  end
  logic [3:0] err_code, timeout_code, err_q;
  assign err_code = th_write ? I_WRITE_ERROR : I_READ_ERROR;
  assign timeout_code = th_write ? I_WRITE_TIMEOUT : I_READ_TIMEOUT;

  // ---- the bus: AXI4-Lite, one transaction outstanding ----
  // An access starts (launch) when the bus is idle, or in the cycle its predecessor's response is
  // taken without error: after that edge one transaction is still all that is outstanding, and a
  // block streams a word a cycle from a slave that answers the next cycle.
  typedef enum logic [2:0] {B_IDLE, B_AR, B_R, B_AWW, B_B} bus_e;
  bus_e bus_q;
  logic launch, launch_we, bus_done, bus_err, bus_timeout, bus_free, orphan_q, aw_done_q, w_done_q;
  logic [31:0] launch_addr, launch_wdata;
  logic [TW-1:0] wait_q;
  logic launch_emu, bus_emu_q;   // the access (starting, on the bus) is the emulator block's: no timeout
  assign launch_emu = EMU_WINDOW && launch_addr >= EMU_BASE && {1'b0, launch_addr} < {1'b0, EMU_BASE} + EMU_WORDS;
  /* verilator lint_off UNUSEDSIGNAL */  // word addresses past 2^30 never pass the window check
  logic [31:0] addr_word_q;
  /* verilator lint_on UNUSEDSIGNAL */
  logic [31:0] wdata_q;
  logic bus_reply;   // the response arrives this cycle
  assign bus_reply = (bus_q == B_R && m_axil_rvalid) || (bus_q == B_B && m_axil_bvalid);
  logic bus_resp_err;
  assign bus_resp_err = bus_q == B_R ? m_axil_rresp[1] : m_axil_bresp[1];
  // The executor sees its access end (the response, or the timeout); an access that timed out
  // stays the bus's until its response comes (orphan), and no other starts before it.
  assign bus_done = !orphan_q && ((bus_reply) || (bus_q != B_IDLE && !bus_emu_q && wait_q == TW'(AXI_TIMEOUT)));
  assign bus_err = bus_reply && bus_resp_err;
  assign bus_timeout = !bus_reply;
  assign bus_free = !orphan_q && (bus_q == B_IDLE || (bus_reply && !bus_resp_err));
  logic [29:0] addr_held, addr_new;
  assign addr_held = addr_word_q[29:0];
  assign addr_new = launch_addr[29:0];
  assign m_axil_arvalid = bus_q == B_AR || (launch && !launch_we);
  assign m_axil_araddr = {bus_q == B_AR ? addr_held : addr_new, 2'b00};
  assign m_axil_rready = bus_q == B_R;
  assign m_axil_awvalid = (bus_q == B_AWW && !aw_done_q) || (launch && launch_we);
  assign m_axil_wvalid = (bus_q == B_AWW && !w_done_q) || (launch && launch_we);
  assign m_axil_awaddr = {bus_q == B_AWW ? addr_held : addr_new, 2'b00};
  assign m_axil_wdata = bus_q == B_AWW ? wdata_q : launch_wdata;
  assign m_axil_wstrb = 4'hF;
  assign m_axil_bready = bus_q == B_B;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      bus_q <= B_IDLE;
      orphan_q <= 1'b0;
      aw_done_q <= 1'b0;
      w_done_q <= 1'b0;
      wait_q <= '0;
      bus_emu_q <= 1'b0;
      addr_word_q <= '0;
      wdata_q <= '0;
    end else begin
      // The emulator's block has no timeout: its access's count stops at AXI_TIMEOUT (a cover point).
      if (bus_q != B_IDLE && !orphan_q && !(bus_emu_q && wait_q == TW'(AXI_TIMEOUT))) wait_q <= wait_q + TW'(1);
      if (bus_done && !bus_reply) orphan_q <= 1'b1;
      unique case (bus_q)
        B_AR: if (m_axil_arready) bus_q <= B_R;
        B_R: if (m_axil_rvalid) begin
          bus_q <= B_IDLE;
          orphan_q <= 1'b0;
        end
        B_AWW: begin
          if (m_axil_awready) aw_done_q <= 1'b1;
          if (m_axil_wready) w_done_q <= 1'b1;
          if ((aw_done_q || m_axil_awready) && (w_done_q || m_axil_wready)) bus_q <= B_B;
        end
        B_B: if (m_axil_bvalid) begin
          bus_q <= B_IDLE;
          orphan_q <= 1'b0;
        end
        default: ;
      endcase
      if (launch) begin   // its first cycle on the bus is this one: the timeout counts from it
        addr_word_q <= launch_addr;
        wdata_q <= launch_wdata;
        wait_q <= TW'(1);
        bus_emu_q <= launch_emu;
        if (launch_we) begin
          aw_done_q <= m_axil_awready;
          w_done_q <= m_axil_wready;
          bus_q <= m_axil_awready && m_axil_wready ? B_B : B_AWW;
        end else bus_q <= m_axil_arready ? B_R : B_AR;
      end
    end
  end
  logic [31:0] rdata_now;   // the read data of a response arriving this cycle
  assign rdata_now = m_axil_rdata;

  // ---- the executor's bus requests ----
  logic [31:0] rmw_new;
  assign rmw_new = th_type == T_RMW_BITS ? (old_q & term1_q) | term2_q : old_q + term1_q;
  // The word the next access is for: i_q are done, and one more is on the bus unless it is idle.
  logic [8:0] next_i;
  assign next_i = bus_q == B_IDLE ? i_q : i_q + 9'd1;
  always_comb begin
    launch = 1'b0;
    launch_we = 1'b0;
    launch_addr = th_incr ? addr_q + {23'd0, next_i} : addr_q;
    launch_wdata = rx_rd;   // the write data of word next_i (rx_ra below)
    if (bus_free) begin
      if (state_q == S_X_STREAM && next_i < count_q) begin
        launch = 1'b1;
        launch_we = th_write;
      end
      if (state_q == S_X_RMW_WRITE) begin
        launch = 1'b1;
        launch_we = 1'b1;
        launch_wdata = rmw_new;
      end
    end
  end

  // ---- the request buffer's ports ----
  logic [31:0] beat_word;   // this beat, big-endian
  assign beat_word = (beats_q == '0 ? !looks_like_header(s_axis_tdata) && looks_like_header(bswap(s_axis_tdata))
                                    : little_q) ? bswap(s_axis_tdata) : s_axis_tdata;
  assign s_axis_tready = state_q == S_RX;
  assign rx_we = state_q == S_RX && s_axis_tvalid && beats_q < (PW+1)'(MTU_WORDS);
  assign rx_wa = beats_q[PW-1:0];
  assign rx_wd = beat_word;
  always_comb begin
    unique case (state_q)
      S_X_HDR: rx_ra = pos_q + PW'(1);                 // the address
      S_X_ADDR, S_X_CHECK: rx_ra = pos_q + PW'(2);     // the first term, or word 0's write data
      S_X_TERM1: rx_ra = pos_q + PW'(3);
      // The write data of the word the next access is for, ready the cycle that access starts.
      S_X_STREAM: rx_ra = pos_q + PW'(2) + next_i[PW-1:0] + PW'(launch);
      S_X_NEXT: rx_ra = body_end[PW-1:0];              // the next transaction's header
      default: rx_ra = pos_q;                          // S_X_HDR_A: the first header
    endcase
  end

  // ---- the resend search ----
  logic          resend_hit;
  logic [SW-1:0] resend_slot;
  always_comb begin
    resend_hit = 1'b0;
    resend_slot = '0;
    for (int k = 0; k < N_BUFFERS; k++)
      if (slot_valid_q[k] && slot_id_q[k] == hdr_q[23:8]) begin
        resend_hit = 1'b1;
        resend_slot = SW'(k);
      end
  end

  // ---- the status reply's words ----
  logic [31:0] status_word;
  always_comb begin
    unique case (tx_rd_q[3:0])
      4'd0: status_word = 32'h2000_00F1;
      4'd1: status_word = 32'(MTU_BYTES);
      4'd2: status_word = 32'(N_BUFFERS);
      4'd3: status_word = {8'h20, next_id_q, 8'hF0};
      4'd4: status_word = history_q[127:96];
      4'd5: status_word = history_q[95:64];
      4'd6: status_word = history_q[63:32];
      4'd7: status_word = history_q[31:0];
      4'd8, 4'd9, 4'd10, 4'd11: status_word = received_q[tx_rd_q[1:0]];
      default: status_word = sent_q[tx_rd_q[1:0]];
    endcase
  end

  function automatic logic [OW-1:0] slot_base(input logic [SW-1:0] s);
    slot_base = OW'(s) * OW'(MTU_WORDS);
  endfunction

  // ---- the reply out: a word read each cycle while the FIFO has room, a word out each cycle ----
  // S_FINISH starts reading a control reply from its slot (the slot and length not yet in tx_*).
  logic [SW-1:0] tx_cur_slot;
  logic [PW-1:0] tx_cur_len;
  assign tx_cur_slot = state_q == S_FINISH ? slot_q : tx_slot_q;
  assign tx_cur_len = state_q == S_FINISH ? optr_q : tx_len_q;
  logic tx_issue, tx_pop;
  assign tx_issue = (state_q == S_FINISH || state_q == S_TX) && tx_rd_q < tx_cur_len && {1'b0, fifo_n_q} + {2'b0, pend_q} < 3'd3;
  assign out_ra = slot_base(tx_cur_slot) + OW'(tx_rd_q);
  logic [31:0] pend_word;
  assign pend_word = tx_status_q ? status_rd_q : (tx_little_q ? bswap(out_rd) : out_rd);
  assign m_axis_tvalid = fifo_n_q != 2'd0;
  assign {m_axis_tlast, m_axis_tdata} = fifo_q[fifo_rd_q];
  assign tx_pop = m_axis_tvalid && m_axis_tready;
  function automatic logic [1:0] fifo_next(input logic [1:0] p);
    fifo_next = p == 2'd2 ? 2'd0 : p + 2'd1;
  endfunction
  always_ff @(posedge clk_i) begin
    if (pend_q) fifo_q[fifo_wr_q] <= {pend_last_q, pend_word};
    status_rd_q <= status_word;
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      pend_q <= 1'b0;
      pend_last_q <= 1'b0;
      fifo_n_q <= '0;
      fifo_rd_q <= '0;
      fifo_wr_q <= '0;
    end else begin
      pend_q <= tx_issue;
      pend_last_q <= tx_rd_q + PW'(1) == tx_cur_len;
      if (pend_q) fifo_wr_q <= fifo_next(fifo_wr_q);
      if (tx_pop) fifo_rd_q <= fifo_next(fifo_rd_q);
      fifo_n_q <= fifo_n_q + {1'b0, pend_q} - {1'b0, tx_pop};
    end
  end

  // Reply words the executor writes: a transaction's header at optr, its data after it.
  always_comb begin
    out_we = 1'b0;
    out_wa = slot_base(slot_q) + OW'(optr_q);
    out_wd = 32'h0;
    unique case (state_q)
      S_X_HDR_A: begin   // the reply's packet header
        out_we = 1'b1;
        out_wa = slot_base(slot_q);
        out_wd = hdr_q;
      end
      S_X_HDR: if (th_bad) begin
        out_we = 1'b1;
        out_wd = {rx_rd[31:4], I_BAD_HEADER};
      end
      S_X_STREAM: if (bus_done && !bus_err && !bus_timeout && !th_write) begin
        out_we = 1'b1;
        out_wa = slot_base(slot_q) + OW'(optr_q) + OW'(1) + OW'(i_q);
        out_wd = rdata_now;
      end
      S_X_ERROR: begin
        out_we = 1'b1;
        out_wd = {4'h2, th_q[27:16], 8'h00, th_q[7:4], err_q};
      end
      S_X_NEXT: begin   // the transaction succeeded
        out_we = 1'b1;
        out_wd = {th_q[31:4], I_SUCCESS};
      end
      default: ;
    endcase
  end

  // ---- the datagram's life ----
  logic [15:0] pkt_id;
  logic [1:0]  pkt_type;
  assign pkt_id = hdr_q[23:8];
  assign pkt_type = hdr_q[1:0];
  logic [15:0] next_after;
  assign next_after = pkt_id == 16'hFFFF ? 16'd1 : pkt_id + 16'd1;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q <= S_RX;
      beats_q <= '0;
      keep_q <= '0;
      order_ok_q <= 1'b0;
      little_q <= 1'b0;
      hdr_q <= '0;
      n_q <= '0;
      kind_q <= '0;
      fault_q <= F_NONE;
      next_id_q <= 16'd1;
      history_q <= '0;
      for (int k = 0; k < 4; k++) begin
        received_q[k] <= '0;
        sent_q[k] <= '0;
      end
      for (int k = 0; k < N_BUFFERS; k++) slot_id_q[k] <= '0;
      for (int k = 0; k < SLOTS; k++) slot_len_q[k] <= '0;
      slot_valid_q <= '0;
      slot_little_q <= '0;
      newest_q <= BW'(N_BUFFERS - 1);
      slot_q <= '0;
      pos_q <= '0;
      optr_q <= '0;
      th_q <= '0;
      addr_q <= '0;
      term1_q <= '0;
      term2_q <= '0;
      old_q <= '0;
      count_q <= '0;
      i_q <= '0;
      err_q <= '0;
      tx_status_q <= 1'b0;
      tx_slot_q <= '0;
      tx_rd_q <= '0;
      tx_len_q <= '0;
      tx_little_q <= 1'b0;
    end else begin
      if (tx_issue) tx_rd_q <= tx_rd_q + PW'(1);
      unique case (state_q)
        S_RX: if (s_axis_tvalid) begin
          if (beats_q == '0) begin
            order_ok_q <= looks_like_header(s_axis_tdata) || looks_like_header(bswap(s_axis_tdata));
            little_q <= !looks_like_header(s_axis_tdata) && looks_like_header(bswap(s_axis_tdata));
            hdr_q <= beat_word;
          end
          if (beats_q <= (PW+1)'(MTU_WORDS)) beats_q <= beats_q + 1'b1;
          if (s_axis_tlast) begin
            keep_q <= s_axis_tkeep;
            state_q <= S_DECIDE;
          end
        end
        S_DECIDE: begin
          n_q <= beats_q[PW-1:0];
          tx_rd_q <= '0;
          state_q <= S_DONE;
          kind_q <= 2'd3;
          if (beats_q > (PW+1)'(MTU_WORDS)) fault_q <= F_OVERSIZED;
          else if (keep_q != 4'hF) fault_q <= F_TRUNCATED;
          else if (!order_ok_q || hdr_q[27:24] != 4'h0 || hdr_q[3:0] > 4'd2) fault_q <= F_BAD_HEADER;
          else if (pkt_type == 2'd1) begin
            if (beats_q != (PW+1)'(STATUS_WORDS)) fault_q <= F_BAD_STATUS;
            else begin
              kind_q <= 2'd1;
              tx_status_q <= 1'b1;
              tx_len_q <= PW'(STATUS_WORDS);
              tx_little_q <= 1'b0;   // status replies are always big-endian
              state_q <= S_TX;
            end
          end else if (pkt_type == 2'd2) begin
            if (beats_q != (PW+1)'(1) || !resend_hit) fault_q <= F_BAD_RESEND;
            else begin
              kind_q <= 2'd2;
              tx_status_q <= 1'b0;
              tx_slot_q <= resend_slot;
              tx_len_q <= slot_len_q[resend_slot];
              tx_little_q <= slot_little_q[resend_slot];
              state_q <= S_TX;
            end
          end else if (pkt_id != 16'd0 && pkt_id != next_id_q) fault_q <= F_OUT_OF_SEQ;
          else begin
            // Taken: the C++ target's accept().
            kind_q <= 2'd0;
            received_q[0] <= hdr_q;
            for (int k = 1; k < 4; k++) received_q[k] <= received_q[k-1];
            history_q <= {H_CONTROL, history_q[127:8]};
            if (pkt_id != 16'd0) begin
              next_id_q <= next_after;
              slot_q <= SW'(oldest_slot);
              // Its slot's old reply is the oldest kept: it goes now, as the C++ deque drops it.
              slot_valid_q[oldest_slot] <= 1'b0;
            end else begin
              slot_q <= SW'(N_BUFFERS);
            end
            pos_q <= PW'(1);
            optr_q <= PW'(1);
            state_q <= S_X_HDR_A;
          end
        end
        S_X_HDR_A: state_q <= pos_q < n_q ? S_X_HDR : S_FINISH;
        S_X_HDR: begin
          th_q <= rx_rd;
          if (th_bad) begin
            optr_q <= optr_q + 1'b1;
            fault_q <= F_BAD_TX;
            state_q <= S_FINISH;
          end else state_q <= S_X_ADDR;
        end
        S_X_ADDR: begin   // rx_rd: the address
          addr_q <= rx_rd;
          state_q <= th_rmw ? S_X_TERM1 : S_X_CHECK;
        end
        S_X_TERM1: begin
          term1_q <= rx_rd;
          state_q <= th_type == T_RMW_BITS ? S_X_TERM2 : S_X_CHECK;
        end
        S_X_TERM2: begin
          term2_q <= rx_rd;
          state_q <= S_X_CHECK;
        end
        S_X_CHECK: begin
          i_q <= '0;
          count_q <= th_rmw ? 9'd1 : {1'b0, th_words};
          if (!access_ok) begin
            err_q <= err_code;
            fault_q <= F_BUS_ERROR;
            state_q <= S_X_ERROR;
          end else state_q <= S_X_STREAM;
        end
        // The transaction's words: each access starts as its predecessor's response is taken.
        S_X_STREAM: if (i_q == count_q) state_q <= S_X_NEXT;   // no words
                    else if (orphan_q) begin   // the bus never answered an earlier access
                      err_q <= timeout_code;
                      fault_q <= F_BUS_ERROR;
                      state_q <= S_X_ERROR;
                    end else if (bus_done) begin
                      if (bus_timeout || bus_err) begin
                        err_q <= bus_timeout ? timeout_code : err_code;
                        fault_q <= F_BUS_ERROR;
                        state_q <= S_X_ERROR;
                      end else begin
                        i_q <= i_q + 1'b1;
                        if (th_rmw) begin
                          old_q <= rdata_now;
                          state_q <= S_X_RMW_WRITE;
                        end else if (i_q + 1'b1 == count_q) state_q <= S_X_NEXT;
                      end
                    end
        // Entered on the read's response, so the bus is free: the write starts now.
        S_X_RMW_WRITE: state_q <= S_X_RMW_BUS;
        S_X_RMW_BUS: if (bus_done) begin
          if (bus_timeout || bus_err) begin
            err_q <= bus_timeout ? timeout_code : err_code;
            fault_q <= F_BUS_ERROR;
            state_q <= S_X_ERROR;
          end else state_q <= S_X_NEXT;
        end
        S_X_ERROR: begin
          optr_q <= optr_q + 1'b1;
          state_q <= S_FINISH;
        end
        S_X_NEXT: begin
          optr_q <= optr_q + PW'(1) + rep_body[PW-1:0];
          pos_q <= body_end[PW-1:0];
          state_q <= more ? S_X_HDR : S_FINISH;   // rx_rd: the next header
        end
        S_FINISH: begin
          // The C++ target's finish(): the reply is kept for resends, its header noted as sent.
          sent_q[0] <= hdr_q;
          for (int k = 1; k < 4; k++) sent_q[k] <= sent_q[k-1];
          slot_len_q[slot_q] <= optr_q;
          slot_little_q[slot_q] <= little_q;
          if (slot_q != SW'(N_BUFFERS)) begin
            slot_valid_q[slot_q[BW-1:0]] <= 1'b1;
            slot_id_q[slot_q[BW-1:0]] <= pkt_id;
            newest_q <= slot_q[BW-1:0];
          end
          tx_status_q <= 1'b0;
          tx_slot_q <= slot_q;
          tx_len_q <= optr_q;
          tx_little_q <= little_q;
          state_q <= S_TX;
        end
        S_TX: if (tx_pop && m_axis_tlast) state_q <= S_DONE;
        S_DONE: begin
          if (kind_q == 2'd3) history_q <= {H_DROPPED, history_q[127:8]};
          if (kind_q == 2'd1) history_q <= {H_STATUS, history_q[127:8]};
          if (kind_q == 2'd2) history_q <= {H_RESEND, history_q[127:8]};
          beats_q <= '0;
          fault_q <= F_NONE;
          state_q <= S_RX;
        end
        default: state_q <= S_RX;
      endcase
    end
  end

  assign stat_valid_o = state_q == S_DONE;
  assign stat_kind_o = kind_q;
  assign stat_fault_o = fault_q;
  // ---- invariants (docs/ipbus-rtl.md) and coverage ----
  `ASSERT_RESET_START
  `ASSERT_PAST_RESET
  // What the stream source promises: whole words but the last, whose valid bytes are a prefix.
  `ASSUME(ipb_env_keep_whole, !(s_axis_tvalid && !s_axis_tlast) || s_axis_tkeep == 4'hF)
  `ASSUME(ipb_env_keep_prefix, !(s_axis_tvalid && s_axis_tlast) ||
          s_axis_tkeep == 4'h8 || s_axis_tkeep == 4'hC || s_axis_tkeep == 4'hE || s_axis_tkeep == 4'hF)
  // One AXI4-Lite transaction outstanding, and every valid held, unchanged, until its ready.
  `ASSERT(ipb_one_bus_transaction, !((m_axil_arvalid || m_axil_rready) && (m_axil_awvalid || m_axil_wvalid || m_axil_bready)))
  `ASSERT_PAST(f_ar_wait, 1, m_axil_arvalid && !m_axil_arready)
  `ASSERT_PAST(f_aw_wait, 1, m_axil_awvalid && !m_axil_awready)
  `ASSERT_PAST(f_w_wait, 1, m_axil_wvalid && !m_axil_wready)
  `ASSERT_PAST(f_araddr, 32, m_axil_araddr)
  `ASSERT_PAST(f_awaddr, 32, m_axil_awaddr)
  `ASSERT_PAST(f_wdata, 32, m_axil_wdata)
  `ASSERT(ipb_ar_held, !f_past_rst_n || !f_ar_wait || (m_axil_arvalid && m_axil_araddr == f_araddr))
  `ASSERT(ipb_aw_held, !f_past_rst_n || !f_aw_wait || (m_axil_awvalid && m_axil_awaddr == f_awaddr))
  `ASSERT(ipb_w_held, !f_past_rst_n || !f_w_wait || (m_axil_wvalid && m_axil_wdata == f_wdata))
  // A beat is taken only to be stored: nothing is taken while a datagram is decided, executed or
  // answered (a beat offered then waits).
  `ASSERT(ipb_beats_taken_in_rx, !(s_axis_tvalid && s_axis_tready) || state_q == S_RX)
  // The reply stream likewise.
  `ASSERT_PAST(f_tx_wait, 1, m_axis_tvalid && !m_axis_tready)
  `ASSERT_PAST(f_tx_data, 33, {m_axis_tlast, m_axis_tdata})
  `ASSERT(ipb_reply_held, !f_past_rst_n || !f_tx_wait || (m_axis_tvalid && {m_axis_tlast, m_axis_tdata} == f_tx_data))
  // A reply never passes the MTU.
  `ASSERT(ipb_reply_within_mtu, optr_q <= PW'(MTU_WORDS) && tx_len_q <= PW'(MTU_WORDS))
  // Only the executor moves the bus, and only for an access whose every word was checked.
`ifdef MXTB_ASSERT_ON
  logic f_checked;     // this transaction's access passed the window and register checks
  logic [9:0] f_reply_words;  // the reply's words as its transactions add them up
  logic [15:0] f_bus_starts;  // bus accesses for this datagram
  logic [9:0] f_tx_starts;    // bus accesses for this transaction
  logic [31:0] f_sum_sent [SLOTS];  // a hash of each slot's reply as first sent
  logic [31:0] f_sum_tx;
  logic f_first_send;  // this transmission is a reply's first (not a resend)
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      f_checked <= 1'b0;
      f_reply_words <= '0;
      f_bus_starts <= '0;
      f_tx_starts <= '0;
      for (int k = 0; k < SLOTS; k++) f_sum_sent[k] <= '0;
      f_sum_tx <= '0;
      f_first_send <= 1'b0;
    end else begin
      if (state_q == S_X_HDR) f_checked <= 1'b0;
      if (state_q == S_X_CHECK && access_ok) f_checked <= 1'b1;
      if (state_q == S_DECIDE) f_reply_words <= 10'd1;
      if ((state_q == S_X_HDR && th_bad) || state_q == S_X_ERROR) f_reply_words <= f_reply_words + 10'd1;
      if (state_q == S_X_NEXT) f_reply_words <= f_reply_words + 10'd1 + rep_body;
      if (launch) f_bus_starts <= f_bus_starts + 16'd1;
      if (state_q == S_DONE) f_bus_starts <= '0;
      if (launch) f_tx_starts <= f_tx_starts + 10'd1;
      if (state_q == S_X_CHECK) f_tx_starts <= '0;
      if (state_q == S_FINISH) f_first_send <= 1'b1;
      if (state_q == S_DECIDE) f_first_send <= 1'b0;
      if (state_q == S_DECIDE || state_q == S_FINISH) f_sum_tx <= '0;
      if (m_axis_tvalid && m_axis_tready) begin
        f_sum_tx <= {f_sum_tx[30:0], f_sum_tx[31]} ^ m_axis_tdata;
        if (m_axis_tlast && f_first_send) f_sum_sent[tx_slot_q] <= {f_sum_tx[30:0], f_sum_tx[31]} ^ m_axis_tdata;
      end
    end
  end
  `ASSERT(ipb_bus_only_after_check, !launch || ((state_q == S_X_STREAM || state_q == S_X_RMW_WRITE) && f_checked))
  // A transaction that succeeded made one access per word (an RMW two), no more.
  `ASSERT(ipb_access_per_word, state_q != S_X_NEXT || f_tx_starts == (th_rmw ? 10'd2 : {1'b0, count_q}))
  `ASSERT(ipb_dropped_no_access, !(state_q == S_DONE && kind_q == 2'd3) || f_bus_starts == '0)
  `ASSERT(ipb_reply_is_its_transactions, state_q != S_FINISH || {1'b0, optr_q} == f_reply_words)
  // A resend sends back exactly the reply that was sent (its words hashed as they went out).
  `ASSERT(ipb_resend_is_reply_sent, !(m_axis_tvalid && m_axis_tready && m_axis_tlast && kind_q == 2'd2) ||
          ({f_sum_tx[30:0], f_sum_tx[31]} ^ m_axis_tdata) == f_sum_sent[tx_slot_q])
`endif
  // An access starts only on a free bus: idle, or its predecessor answered without error this cycle.
  `ASSERT(ipb_emu_access_no_timeout, !(bus_done && !bus_reply && bus_emu_q))
  `ASSERT(ipb_start_when_free, !launch || (!orphan_q && (bus_q == B_IDLE || (bus_reply && !bus_resp_err))))
  // An RMW's write starts the cycle after its read's response: the bus is idle then.
  `ASSERT(ipb_rmw_write_starts, state_q != S_X_RMW_WRITE || launch)
  // The reply FIFO never overflows; it holds words only while a reply goes out.
  `ASSERT(ipb_reply_fifo_room, {1'b0, fifo_n_q} + {2'b0, pend_q} <= 3'd3 && (fifo_n_q == 2'd0 || state_q == S_TX))
  `ASSERT(ipb_resend_of_kept_slot, !(state_q == S_TX && kind_q == 2'd2) || (tx_slot_q != SW'(N_BUFFERS) && !tx_status_q))
  // The kept replies are a ring of N_BUFFERS slots: the newest is one of them, whatever N_BUFFERS
  // (one that is not a power of two wraps by the comparison, not by overflow).
  `ASSERT(ipb_newest_slot_in_ring, 32'(newest_q) < N_BUFFERS)

  `COVER(cov_ipb_rx, state_q == S_RX && s_axis_tvalid)
  `COVER(cov_ipb_decide, state_q == S_DECIDE)
  `COVER(cov_ipb_header, state_q == S_X_HDR && !th_bad)
  `COVER(cov_ipb_bad_transaction, state_q == S_X_HDR && th_bad)
  `COVER(cov_ipb_rmw_terms, state_q == S_X_TERM2)
  `COVER(cov_ipb_refused, state_q == S_X_CHECK && !access_ok)
  `COVER(cov_ipb_read, state_q == S_X_STREAM && bus_done && !bus_err && !bus_timeout && !th_write && !th_rmw)
  `COVER(cov_ipb_write, state_q == S_X_STREAM && bus_done && !bus_err && !bus_timeout && th_write)
  `COVER(cov_ipb_rmw, state_q == S_X_RMW_BUS && bus_done && !bus_err && !bus_timeout)
  `COVER(cov_ipb_bus_error, (state_q == S_X_STREAM || state_q == S_X_RMW_BUS) && bus_done && bus_err)
  `COVER(cov_ipb_bus_timeout, (state_q == S_X_STREAM || state_q == S_X_RMW_BUS) && bus_done && bus_timeout)
  `COVER(cov_ipb_emu_past_timeout, bus_q != B_IDLE && bus_emu_q && wait_q == TW'(AXI_TIMEOUT) && !bus_reply)
  `COVER(cov_ipb_orphan_access, state_q == S_X_STREAM && i_q != count_q && orphan_q)
  `COVER(cov_ipb_bus_streamed, launch && bus_reply)
  `COVER(cov_ipb_reply_streamed, tx_pop && pend_q && tx_issue)
  `COVER(cov_ipb_next_transaction, state_q == S_X_NEXT && more)
  `COVER(cov_ipb_reply_at_mtu, state_q == S_FINISH && optr_q == PW'(MTU_WORDS))
  `COVER(cov_ipb_little_endian, state_q == S_FINISH && little_q)
  `COVER(cov_ipb_id_zero, state_q == S_FINISH && slot_q == SW'(N_BUFFERS))
  `COVER(cov_ipb_status, state_q == S_DONE && kind_q == 2'd1)
  `COVER(cov_ipb_resend, state_q == S_DONE && kind_q == 2'd2)
  `COVER(cov_ipb_reply_stalled, m_axis_tvalid && !m_axis_tready)
  `COVER(cov_ipb_id_wrap, state_q == S_DECIDE && pkt_type == 2'd0 && pkt_id == 16'hFFFF && next_id_q == 16'hFFFF)
  `COVER(cov_ipb_oversized, stat_valid_o && stat_fault_o == F_OVERSIZED)
  `COVER(cov_ipb_truncated, stat_valid_o && stat_fault_o == F_TRUNCATED)
  `COVER(cov_ipb_bad_packet_header, stat_valid_o && stat_fault_o == F_BAD_HEADER)
  `COVER(cov_ipb_bad_status, stat_valid_o && stat_fault_o == F_BAD_STATUS)
  `COVER(cov_ipb_bad_resend, stat_valid_o && stat_fault_o == F_BAD_RESEND)
  `COVER(cov_ipb_out_of_sequence, stat_valid_o && stat_fault_o == F_OUT_OF_SEQ)
endmodule

// The master port's bits unused by design: the responses' bit 0 (SLVERR and DECERR alike are
// errors: bit 1). Waived by name, as a waiver around `AXIL_MASTER_PORTS would cover all its ports;
// one lint_off line, since Verilator 5.006 takes only the first of a verilator_config block in a
// source file (a .vlt file passed before the sources takes them all).
`ifdef VERILATOR
`verilator_config
lint_off -rule UNUSEDSIGNAL -file "*ipbus_transactor.sv" -match "*'m_axil_?resp'*"
`endif
