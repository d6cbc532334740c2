// The board's IPbus side: what a Morphlux board's firmware runs between its UDP core and its
// register slaves. The IPbus transactor (rtl/ipbus/ipbus_transactor.sv) takes each UDP payload and
// masters an AXI4-Lite bus, which this module decodes to the scratch RAM as a block RAM
// (board_ram), a port out to the optical switch controller's register slave, and, in the emulator
// only (EMU_PORT), a port out to the emulator's control block (time, faults, waveforms), which no
// board has. The board top (mxtb_board.sv) joins the controller to its port; the emulator runs this
// module as it is (sim/ipbus_rtl_endpoint.h) and joins the controller its engine steps. docs/board.md.
//
// Bus map (byte addresses = IPbus word addresses x 4): the controller 0x0_0000 + its register map,
// the emulator block 0x4_0000 (EMU_PORT), the RAM 0x8_0000 + RAM_WORDS x 4. The transactor checks
// every access against these windows and the generated access rules before it moves, so the
// decoder's DECERR for an address outside them is a second line that only a broken master meets.
`include "mxtb_assert.svh"
`include "axi_ports.svh"

module board_bus #(
  parameter bit EMU_PORT  = 1'b1,   // the emulator's control block on the bus (0 on a board)
  parameter int RAM_WORDS = 4096,
  parameter int N_BUFFERS = 16,
  parameter int MTU_BYTES = 1472,    // smaller only for proofs
  parameter int AXI_TIMEOUT = 65535  // the transactor's bus timeout (smaller only for proofs)
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  // the UDP core's payloads (AXI4-Stream), as ipbus_transactor takes and gives them
  `AXIS_SINK_PORTS(s_axis_),
  `AXIS_SOURCE_PORTS(m_axis_),
  output logic        stat_valid_o,
  output logic [1:0]  stat_kind_o,
  output logic [3:0]  stat_fault_o,
  // the controller's register slave (byte addresses within its window), AXI4-Lite master
  `AXIL_MASTER_PORTS(m_ctrl_),
  // the emulator's control block (EMU_PORT; byte addresses within the block), AXI4-Lite master
  `AXIL_MASTER_PORTS_NO_WSTRB(m_emu_)
);
  // ---- the transactor: the bus master ----
  logic [31:0] awaddr, wdata, araddr, rdata;
  logic [3:0] wstrb;
  logic awvalid, awready, wvalid, wready, bvalid, bready, arvalid, arready, rvalid, rready;
  logic [1:0] bresp, rresp;

  ipbus_transactor #(.N_BUFFERS(N_BUFFERS), .MTU_BYTES(MTU_BYTES), .RAM_WORDS(RAM_WORDS), .EMU_WINDOW(EMU_PORT),
                     .AXI_TIMEOUT(AXI_TIMEOUT)) u_ipbus (
    .clk_i, .rst_ni,
    .s_axis_tdata, .s_axis_tkeep, .s_axis_tlast, .s_axis_tvalid, .s_axis_tready,
    .m_axis_tdata, .m_axis_tlast, .m_axis_tvalid, .m_axis_tready,
    .stat_valid_o, .stat_kind_o, .stat_fault_o,
    .m_axil_awaddr(awaddr), .m_axil_awvalid(awvalid), .m_axil_awready(awready),
    .m_axil_wdata(wdata), .m_axil_wstrb(wstrb), .m_axil_wvalid(wvalid), .m_axil_wready(wready),
    .m_axil_bresp(bresp), .m_axil_bvalid(bvalid), .m_axil_bready(bready),
    .m_axil_araddr(araddr), .m_axil_arvalid(arvalid), .m_axil_arready(arready),
    .m_axil_rdata(rdata), .m_axil_rresp(rresp), .m_axil_rvalid(rvalid), .m_axil_rready(rready));

  // ---- the decoder: one master with one transaction outstanding, the next one's request
  // possibly in the cycle the last one's response is taken (a block streamed word by word). A
  // request goes to the slave its address decodes to; the response comes from the slave latched
  // when the request was taken ----
  typedef enum logic [1:0] {SEL_CTRL, SEL_EMU, SEL_RAM, SEL_NONE} sel_e;
  localparam logic [31:0] CTRL_BYTES = 32'd1 << ocs_reg_pkg::REG_ADDR_WIDTH;
  localparam logic [31:0] EMU_BASE = 32'h0004_0000, RAM_BASE = 32'h0008_0000;
  localparam logic [31:0] EMU_BYTES = 32'd1 << emu_reg_pkg::REG_ADDR_WIDTH;

  function automatic sel_e decode(input logic [31:0] a);
    if (a < CTRL_BYTES) decode = SEL_CTRL;
    else if (EMU_PORT && a >= EMU_BASE && a < EMU_BASE + EMU_BYTES) decode = SEL_EMU;
    else if (a >= RAM_BASE && a < RAM_BASE + 32'(RAM_WORDS) * 32'd4) decode = SEL_RAM;
    else decode = SEL_NONE;
  endfunction

  // The write's slave is latched when its address is taken: the data may follow later.
  sel_e wsel_q, rsel_q;
  logic aw_taken_q, w_taken_q, r_open_q;
  sel_e wsel, rsel;
  wire b_fire = bvalid && bready;
  wire w_next = !aw_taken_q || b_fire;   // the write on offer is a new one (its address not yet taken)
  assign wsel = w_next ? decode(awaddr) : wsel_q;
  assign rsel = decode(araddr);
  // W goes to a slave only with its address or after it: never ahead of it.
  wire w_routed = awvalid || !w_next;

  // Per slave: requests routed to it, responses from it.
  /* verilator lint_off UNUSEDSIGNAL */  // the DECERR responder answers without looking at valid
  logic [3:0] s_awvalid, s_wvalid, s_arvalid;
  /* verilator lint_on UNUSEDSIGNAL */
  logic [3:0] s_awready, s_wready, s_bvalid, s_arready, s_rvalid;
  logic [1:0] s_bresp [4], s_rresp [4];
  logic [31:0] s_rdata [4];

  always_comb begin
    s_awvalid = '0;
    s_wvalid = '0;
    s_arvalid = '0;
    s_awvalid[wsel] = awvalid;
    s_wvalid[wsel] = wvalid && w_routed;
    s_arvalid[rsel] = arvalid;
  end
  assign awready = s_awready[wsel];
  assign wready = s_wready[wsel] && w_routed;
  assign bvalid = s_bvalid[wsel_q] && aw_taken_q && w_taken_q;
  assign bresp = s_bresp[wsel_q];
  assign arready = s_arready[rsel];
  assign rvalid = s_rvalid[rsel_q] && r_open_q;
  assign rresp = s_rresp[rsel_q];
  assign rdata = s_rdata[rsel_q];

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      wsel_q <= SEL_NONE;
      rsel_q <= SEL_NONE;
      aw_taken_q <= 1'b0;
      w_taken_q <= 1'b0;
      r_open_q <= 1'b0;
    end else begin
      // A response taken closes its transaction; a request taken in the same cycle opens the next.
      if (b_fire) begin
        aw_taken_q <= 1'b0;
        w_taken_q <= 1'b0;
      end
      if (awvalid && awready) begin
        aw_taken_q <= 1'b1;
        wsel_q <= wsel;
      end
      if (wvalid && wready) w_taken_q <= 1'b1;
      if (rvalid && rready) r_open_q <= 1'b0;
      if (arvalid && arready) begin
        r_open_q <= 1'b1;
        rsel_q <= rsel;
      end
    end
  end

  // ---- the slaves ----
  // The controller: its register window, at byte addresses from 0.
  assign m_ctrl_awaddr = awaddr;
  assign m_ctrl_awvalid = s_awvalid[SEL_CTRL];
  assign m_ctrl_wdata = wdata;
  assign m_ctrl_wstrb = wstrb;
  assign m_ctrl_wvalid = s_wvalid[SEL_CTRL];
  assign m_ctrl_bready = bready && wsel_q == SEL_CTRL;
  assign m_ctrl_araddr = araddr;
  assign m_ctrl_arvalid = s_arvalid[SEL_CTRL];
  assign m_ctrl_rready = rready && rsel_q == SEL_CTRL;
  assign s_awready[SEL_CTRL] = m_ctrl_awready;
  assign s_wready[SEL_CTRL] = m_ctrl_wready;
  assign s_bvalid[SEL_CTRL] = m_ctrl_bvalid;
  assign s_bresp[SEL_CTRL] = m_ctrl_bresp;
  assign s_arready[SEL_CTRL] = m_ctrl_arready;
  assign s_rvalid[SEL_CTRL] = m_ctrl_rvalid;
  assign s_rresp[SEL_CTRL] = m_ctrl_rresp;
  assign s_rdata[SEL_CTRL] = m_ctrl_rdata;

  board_ram #(.WORDS(RAM_WORDS)) u_ram (
    .clk_i, .rst_ni,
    .s_axil_awaddr(awaddr - RAM_BASE), .s_axil_awvalid(s_awvalid[SEL_RAM]), .s_axil_awready(s_awready[SEL_RAM]),
    .s_axil_wdata(wdata), .s_axil_wstrb(wstrb), .s_axil_wvalid(s_wvalid[SEL_RAM]), .s_axil_wready(s_wready[SEL_RAM]),
    .s_axil_bresp(s_bresp[SEL_RAM]), .s_axil_bvalid(s_bvalid[SEL_RAM]), .s_axil_bready(bready && wsel_q == SEL_RAM),
    .s_axil_araddr(araddr - RAM_BASE), .s_axil_arvalid(s_arvalid[SEL_RAM]), .s_axil_arready(s_arready[SEL_RAM]),
    .s_axil_rdata(s_rdata[SEL_RAM]), .s_axil_rresp(s_rresp[SEL_RAM]), .s_axil_rvalid(s_rvalid[SEL_RAM]),
    .s_axil_rready(rready && rsel_q == SEL_RAM));

  // The emulator's block: passed out as it is (absent on a board: then nothing decodes to it).
  assign m_emu_awaddr = awaddr - EMU_BASE;
  assign m_emu_awvalid = EMU_PORT && s_awvalid[SEL_EMU];
  assign m_emu_wdata = wdata;
  assign m_emu_wvalid = EMU_PORT && s_wvalid[SEL_EMU];
  assign m_emu_bready = bready && wsel_q == SEL_EMU;
  assign m_emu_araddr = araddr - EMU_BASE;
  assign m_emu_arvalid = EMU_PORT && s_arvalid[SEL_EMU];
  assign m_emu_rready = rready && rsel_q == SEL_EMU;
  assign s_awready[SEL_EMU] = EMU_PORT && m_emu_awready;
  assign s_wready[SEL_EMU] = EMU_PORT && m_emu_wready;
  assign s_bvalid[SEL_EMU] = EMU_PORT && m_emu_bvalid;
  assign s_bresp[SEL_EMU] = m_emu_bresp;
  assign s_arready[SEL_EMU] = EMU_PORT && m_emu_arready;
  assign s_rvalid[SEL_EMU] = EMU_PORT && m_emu_rvalid;
  assign s_rresp[SEL_EMU] = m_emu_rresp;
  assign s_rdata[SEL_EMU] = m_emu_rdata;

  // Outside every window: taken at once, answered DECERR the next cycle.
  logic none_b_q, none_r_q;
  assign s_awready[SEL_NONE] = 1'b1;
  assign s_wready[SEL_NONE] = 1'b1;
  assign s_bvalid[SEL_NONE] = none_b_q;
  assign s_bresp[SEL_NONE] = 2'b11;
  assign s_arready[SEL_NONE] = !none_r_q;
  assign s_rvalid[SEL_NONE] = none_r_q;
  assign s_rresp[SEL_NONE] = 2'b11;
  assign s_rdata[SEL_NONE] = 32'h0;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      none_b_q <= 1'b0;
      none_r_q <= 1'b0;
    end else begin
      if (aw_taken_q && w_taken_q && wsel_q == SEL_NONE && !none_b_q) none_b_q <= 1'b1;
      else if (bready && wsel_q == SEL_NONE) none_b_q <= 1'b0;
      if (arvalid && arready && rsel == SEL_NONE) none_r_q <= 1'b1;
      else if (rready && rsel_q == SEL_NONE) none_r_q <= 1'b0;
    end
  end

  // ---- invariants (docs/board.md) and coverage ----
  `ASSERT_RESET_START
  // The transactor keeps one transaction outstanding; the decoder relies on it.
  `ASSERT(brd_one_transaction, !(r_open_q && (aw_taken_q || w_taken_q)))
  // A response reaches the master only for a request the decoder routed.
  `ASSERT(brd_b_only_when_open, !bvalid || (aw_taken_q && w_taken_q))
  `ASSERT(brd_r_only_when_open, !rvalid || r_open_q)
  // Write data reach a slave only with their address or after it.
  `ASSERT(brd_w_not_before_aw, s_wvalid == '0 || awvalid || (aw_taken_q && !b_fire))
  // What the decoder holds open is what the handshakes opened and did not close: a response and
  // the next request in one cycle leave the next one open (the order of the updates above).
`ifdef MXTB_ASSERT_ON
  logic f_read_open, f_aw_open, f_w_open;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      f_read_open <= 1'b0;
      f_aw_open <= 1'b0;
      f_w_open <= 1'b0;
    end else begin
      f_read_open <= (arvalid && arready) || (f_read_open && !(rvalid && rready));
      f_aw_open <= (awvalid && awready) || (f_aw_open && !b_fire);
      f_w_open <= (wvalid && wready) || (f_w_open && !b_fire);
    end
  end
`endif
  `ASSERT(brd_read_open_tracked, r_open_q == f_read_open)
  `ASSERT(brd_write_open_tracked, aw_taken_q == f_aw_open && w_taken_q == f_w_open)
  // The transactor checked the windows: a correct master never meets the decoder's DECERR.
  `ASSERT(brd_no_decode_error, !(arvalid && rsel == SEL_NONE) && !(awvalid && wsel == SEL_NONE))
  `COVER(cov_brd_ctrl_read, arvalid && arready && rsel == SEL_CTRL)
  `COVER(cov_brd_ctrl_write, bvalid && bready && wsel_q == SEL_CTRL)
  `COVER(cov_brd_ram_access, (arvalid && arready && rsel == SEL_RAM) || (bvalid && bready && wsel_q == SEL_RAM))
  `COVER(cov_brd_emu_access, (arvalid && arready && rsel == SEL_EMU) || (bvalid && bready && wsel_q == SEL_EMU))
endmodule
