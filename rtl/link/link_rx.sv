// Link receiver: decodes descrambled blocks, checks frames (sequence, length, CRC-32), stores
// good in-order frames in the receive buffer, and hands the XPU whole frames only: a frame is
// visible on rx_* after its EOF checked, so nothing corrupted or out of order is ever delivered.
// It tells the local transmitter what to acknowledge or NAK, and passes on what the peer sent
// (training sets, acknowledgements, credits).
`include "mxtb_assert.svh"

module link_rx
#(
  parameter int MAX_WORDS = 16,  // payload words per frame; power of two
  parameter int RX_SLOTS  = 8    // frames the receive buffer holds = credits granted; power of two
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        active_i,
  input  logic        flush_i,       // a new peer: drop buffered frames, expect sequence 0
  input  logic [15:0] peer_xpu_i,    // the identity training found: frames and bound control
  input  logic [7:0]  peer_lane_i,   // blocks must carry it in their CRC / check
  // from block lock and descrambler
  input  logic        blk_valid_i,   // locked: blk_* is a block
  input  logic        blk_hdr_ok_i,  // sync header valid
  input  logic [1:0]  blk_sync_i,
  input  logic [63:0] blk_data_i,    // descrambled payload
  // XPU side
  output logic [63:0] rx_data_o,
  output logic        rx_valid_o,
  output logic        rx_last_o,
  input  logic        rx_ready_i,
  // to the local transmitter
  output logic [15:0] expect_o,      // next in-order sequence
  output logic [15:0] credit_o,      // cumulative credit limit granted to the peer
  output logic        ack_req_o,
  output logic        nak_req_o,
  input  logic        ack_sent_i,
  input  logic        nak_sent_i,
  // what the peer sent
  output logic        peer_ack_o,    // Ack, Heartbeat, Nak or CreditInit with valid fields
  output logic        peer_nak_o,
  output logic        peer_init_o,
  output logic        peer_hb_o,     // Ack or Heartbeat (liveness)
  output logic [15:0] peer_expect_o,
  output logic [15:0] peer_credit_o,
  output logic        ts1_o,         // a TS1 arrived (ids below)
  output logic        ts2_o,
  output logic [15:0] ts_xpu_o,
  output logic [7:0]  ts_lane_o,
  output logic        ts_flush_o,    // a TS2's flush flag: its sender restarts sequence state
  // events
  output logic        bad_block_o,   // invalid header, failed control check, unknown type
  output logic        crc_err_o,     // a frame failed its CRC or length check
  output logic        frame_ok_o     // a frame was committed to the receive buffer
);

  localparam int SlotW = $clog2(RX_SLOTS);
  localparam int WordW = $clog2(MAX_WORDS);

  typedef enum logic {StIdle, StData} rx_state_e;

  logic [63:0] mem_q [RX_SLOTS*MAX_WORDS];
  logic [7:0]  len_q [RX_SLOTS];
  logic        eom_q [RX_SLOTS];

  rx_state_e   st_q, st_d;
  logic [15:0] expect_q, expect_d, rd_q, rd_d, seq_q, seq_d;
  logic [7:0]  len_cur_q, len_cur_d, widx_q, widx_d;
  logic        eom_cur_q, eom_cur_d, accept_q, accept_d;
  logic [WordW-1:0] ridx_q, ridx_d;
  logic [31:0] crc_q, crc_d, crc_out, chk_crc, crc_in;
  logic [63:0] crc_word;
  logic        ack_req_q, ack_req_d, nak_req_q, nak_req_d, nak_sent_q, nak_sent_d;
  logic        is_ctl, is_data, ctl_ok, store, unused_chk, ctl_bound;
  logic [7:0]  ctl_type;
  logic [SlotW-1:0] rd_slot;

  assign is_ctl   = blk_valid_i && blk_hdr_ok_i && blk_sync_i == link_pkg::SyncCtrl;
  assign is_data  = blk_valid_i && blk_hdr_ok_i && blk_sync_i == link_pkg::SyncData;
  assign ctl_type = blk_data_i[7:0];

  // Everything but Idle/TS1/TS2 is bound to the sender's identity (see link_tx).
  assign ctl_bound = !(ctl_type == link_pkg::CtlIdle || ctl_type == link_pkg::CtlTs1 || ctl_type == link_pkg::CtlTs2);
  crc32_d64 u_check_crc (.crc_i(32'hFFFF_FFFF),
                         .data_i({ctl_bound ? {peer_xpu_i, peer_lane_i} : 24'h0, blk_data_i[39:0]}), .crc_o(chk_crc));
  assign ctl_ok     = is_ctl && (~chk_crc[23:0] == blk_data_i[63:40]);
  assign unused_chk = ^chk_crc[31:24];

  // Frame CRC: an SOF starts it from its own word, data words advance it.
  assign crc_in   = (is_ctl && ctl_type == link_pkg::CtlSof) ? 32'hFFFF_FFFF : crc_q;
  assign crc_word = (is_ctl && ctl_type == link_pkg::CtlSof) ? {peer_xpu_i, peer_lane_i, blk_data_i[39:0]} : blk_data_i;
  crc32_d64 u_frame_crc (.crc_i(crc_in), .data_i(crc_word), .crc_o(crc_out));

  assign expect_o      = expect_q;
  assign credit_o      = rd_q + 16'(RX_SLOTS);
  assign ack_req_o     = ack_req_q;
  assign nak_req_o     = nak_req_q;
  assign peer_expect_o = blk_data_i[23:8];
  assign peer_credit_o = blk_data_i[39:24];
  assign ts_xpu_o      = blk_data_i[23:8];
  assign ts_lane_o     = blk_data_i[31:24];
  assign ts_flush_o    = blk_data_i[32];

  assign rd_slot    = rd_q[SlotW-1:0];
  assign rx_valid_o = rd_q != expect_q;
  assign rx_data_o  = mem_q[{rd_slot, ridx_q}];
  assign rx_last_o  = (8'(ridx_q) + 8'd1 == len_q[rd_slot]) && eom_q[rd_slot];

  always_comb begin
    logic frame_bad, lost;
    st_d        = st_q;
    expect_d    = expect_q;
    rd_d        = rd_q;
    ridx_d      = ridx_q;
    seq_d       = seq_q;
    len_cur_d   = len_cur_q;
    eom_cur_d   = eom_cur_q;
    accept_d    = accept_q;
    widx_d      = widx_q;
    crc_d       = crc_q;
    ack_req_d   = ack_req_q && !ack_sent_i;
    nak_sent_d  = nak_sent_q || nak_sent_i;
    nak_req_d   = nak_req_q && !nak_sent_i;
    store       = 1'b0;
    peer_ack_o  = 1'b0;
    peer_nak_o  = 1'b0;
    peer_init_o = 1'b0;
    peer_hb_o   = 1'b0;
    ts1_o       = 1'b0;
    ts2_o       = 1'b0;
    bad_block_o = 1'b0;
    crc_err_o   = 1'b0;
    frame_ok_o  = 1'b0;
    frame_bad   = 1'b0;  // the frame in progress is broken (bad block inside it, missing EOF)
    lost        = 1'b0;  // a frame we should have received did not arrive intact

    // XPU side drains whole frames; a drained frame returns one credit.
    if (rx_valid_o && rx_ready_i) begin
      if (8'(ridx_q) + 8'd1 >= len_q[rd_slot]) begin
        ridx_d    = '0;
        rd_d      = rd_q + 16'd1;
        ack_req_d = 1'b1;
      end else begin
        ridx_d = ridx_q + 1'b1;
      end
    end

    if (blk_valid_i && (!blk_hdr_ok_i || (is_ctl && !ctl_ok))) begin
      bad_block_o = 1'b1;
      frame_bad   = st_q == StData;
    end else if (ctl_ok) begin
      // Plain case (the items are distinct constants, with a default): with --assert, Verilator's
      // unique-case check keeps this block whole, and the tx/rx/train blocks then form a loop.
      case (ctl_type)
        link_pkg::CtlIdle: ;  // fill: nothing to take
        link_pkg::CtlTs1:  ts1_o  = 1'b1;
        link_pkg::CtlTs2:  ts2_o  = 1'b1;
        link_pkg::CtlCreditInit: begin
          peer_ack_o  = 1'b1;
          peer_init_o = 1'b1;
        end
        link_pkg::CtlAck, link_pkg::CtlHeartbeat: begin
          peer_ack_o = 1'b1;
          peer_hb_o  = 1'b1;
        end
        link_pkg::CtlNak: begin
          peer_ack_o = 1'b1;
          peer_nak_o = 1'b1;
          peer_hb_o  = 1'b1;
        end
        link_pkg::CtlSof: begin
          if (st_q == StData) lost = 1'b1;  // the previous frame never ended
          if (active_i) begin
            st_d      = StData;
            seq_d     = blk_data_i[23:8];
            len_cur_d = blk_data_i[31:24];
            eom_cur_d = blk_data_i[32];
            widx_d    = '0;
            crc_d     = crc_out;
            // Store only the frame we expect, and only into a free slot (credits make that
            // always true for a conforming peer).
            accept_d  = blk_data_i[23:8] == expect_q &&
                        (expect_q - rd_d) < 16'(RX_SLOTS) &&
                        blk_data_i[31:24] != 8'd0 && blk_data_i[31:24] <= 8'(MAX_WORDS);
          end
        end
        link_pkg::CtlEof: begin
          if (st_q == StData) begin
            st_d = StIdle;
            if (widx_q != len_cur_q || ~crc_q != blk_data_i[39:8]) begin
              crc_err_o = 1'b1;
              lost      = 1'b1;
            end else if (seq_q == expect_q && accept_q) begin
              expect_d   = expect_q + 16'd1;
              frame_ok_o = 1'b1;
              ack_req_d  = 1'b1;
              nak_sent_d = 1'b0;
              nak_req_d  = 1'b0;
            end else if ((expect_q - seq_q) <= 16'h8000 && seq_q != expect_q) begin
              ack_req_d = 1'b1;  // a replayed duplicate: acknowledge again, drop it
            end else begin
              lost = 1'b1;       // a gap: an earlier frame went missing
            end
          end
        end
        default: bad_block_o = 1'b1;
      endcase
    end else if (is_data) begin
      if (st_q == StData) begin
        if (widx_q < len_cur_q) begin
          store  = accept_q;
          widx_d = widx_q + 8'd1;
          crc_d  = crc_out;
        end else begin
          frame_bad = 1'b1;  // longer than its SOF said: a length error, counted like a CRC error
          crc_err_o = 1'b1;
        end
      end  // data outside a frame: the rest of an aborted frame, dropped
    end

    // A broken frame is lost (NAK) but its remaining blocks are not line errors: bad_block_o
    // counts only what the error-rate monitor should see (headers, checks, unknown types).
    if (frame_bad) begin
      st_d        = StIdle;
      lost        = 1'b1;
    end
    if (!active_i) st_d = StIdle;
    // One NAK per gap: the replay timer covers a NAK that is itself lost.
    if (lost && active_i && !nak_sent_d) nak_req_d = 1'b1;
  end

  always_ff @(posedge clk_i) begin
    if (store) mem_q[{seq_q[SlotW-1:0], widx_q[WordW-1:0]}] <= blk_data_i;
    if (frame_ok_o) begin
      len_q[seq_q[SlotW-1:0]] <= len_cur_q;
      eom_q[seq_q[SlotW-1:0]] <= eom_cur_q;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      st_q       <= StIdle;
      expect_q   <= '0;
      rd_q       <= '0;
      ridx_q     <= '0;
      seq_q      <= '0;
      len_cur_q  <= '0;
      eom_cur_q  <= 1'b0;
      accept_q   <= 1'b0;
      widx_q     <= '0;
      crc_q      <= '0;
      ack_req_q  <= 1'b0;
      nak_req_q  <= 1'b0;
      nak_sent_q <= 1'b0;
    end else begin
      st_q       <= st_d;
      expect_q   <= flush_i ? '0 : expect_d;
      rd_q       <= flush_i ? '0 : rd_d;
      ridx_q     <= flush_i ? '0 : ridx_d;
      seq_q      <= seq_d;
      len_cur_q  <= len_cur_d;
      eom_cur_q  <= eom_cur_d;
      accept_q   <= accept_d;
      widx_q     <= widx_d;
      crc_q      <= crc_d;
      ack_req_q  <= ack_req_d;
      nak_req_q  <= nak_req_d;
      nak_sent_q <= nak_sent_d;
    end
  end

  // ---------------------------------------------------------------- assertions
  `ASSERT_RESET_START
`ifdef MXTB_ASSERT_ON
  // Shadow: the sequence number of the frame each receive slot holds.
  logic [15:0] f_slot_seq_q [RX_SLOTS];
  always_ff @(posedge clk_i) begin
    if (frame_ok_o) f_slot_seq_q[seq_q[SlotW-1:0]] <= seq_q;
  end
  // Every frame between rd and expect (buffered, not yet drained) sits in its slot.
  function automatic logic f_buffered_in_place(input logic [15:0] rd, input logic [15:0] ex);
    f_buffered_in_place = 1'b1;
    for (int k = 0; k < RX_SLOTS; k++) begin
      if (16'(k) < ex - rd && f_slot_seq_q[SlotW'(rd + 16'(k))] != rd + 16'(k)) f_buffered_in_place = 1'b0;
    end
  endfunction

  logic [15:0] f_rd_slot_seq;
  assign f_rd_slot_seq = f_slot_seq_q[rd_slot];

  // Environment: training flushes only outside Active (link_train asserts it).
  `ASSUME(env_no_flush_active, !(flush_i && active_i))

  // Credits: the frames the peer may still send (credit limit - expect) stay in [0, RX_SLOTS].
  `ASSERT(rx_credits_in_range, (expect_q - rd_q) <= 16'(RX_SLOTS))
`ifdef FORMAL
  // Helpers the induction needs, proven there; simulation checks what they support (the loop
  // over every slot would cost each simulated cycle).
  logic f_in_place;
  assign f_in_place = f_buffered_in_place(rd_q, expect_q);
  `ASSERT(rx_accepted_frame_has_room, !(st_q == StData && accept_q) ||
          (seq_q == expect_q && (expect_q - rd_q) < 16'(RX_SLOTS)))
  `ASSERT(rx_frames_in_place, f_in_place)
`endif
  // In order, each once: expect and the drain pointer only step by one (or restart on a flush),
  // and the frame delivered at rd is the one with sequence number rd.
  `ASSERT_PAST_RESET
  `ASSERT_PAST(f_past_flush, 1, flush_i)
  `ASSERT_PAST(f_past_expect, 16, expect_q)
  `ASSERT_PAST(f_past_rd, 16, rd_q)
  `ASSERT(rx_expect_steps, !f_past_rst_n || f_past_flush || expect_q == f_past_expect ||
          expect_q == f_past_expect + 16'd1)
  `ASSERT(rx_drain_steps, !f_past_rst_n || f_past_flush || rd_q == f_past_rd || rd_q == f_past_rd + 16'd1)
  `ASSERT(rx_delivers_in_order, !rx_valid_o || f_rd_slot_seq == rd_q)

  // The receive rules (docs/link-layer.md, "Blocks on the lane", "Frames", "Reliability") checked
  // here, where their terms are computed (issue 43), both ways, in the rules' own words rather
  // than through is_ctl, ctl_ok and the frame state's own conditions.
  // Environment: block lock's header flag is exactly a data or control sync header.
  `ASSUME(env_hdr_ok_is_valid_sync, blk_hdr_ok_i == (blk_sync_i == link_pkg::SyncData ||
                                                     blk_sync_i == link_pkg::SyncCtrl))
  logic f_ctl_blk, f_data_blk, f_check_ok, f_good_ctl, f_known_type, f_in_frame, f_eof_checks;
  logic f_duplicate, f_taken, f_lost, f_frame_drained, f_nak_next, f_ack_next, f_sof_accepts;
  assign f_ctl_blk    = blk_valid_i && blk_sync_i == link_pkg::SyncCtrl;
  assign f_data_blk   = blk_valid_i && blk_sync_i == link_pkg::SyncData;
  assign f_check_ok   = ~chk_crc[23:0] == blk_data_i[63:40];
  assign f_good_ctl   = f_ctl_blk && f_check_ok;
  logic f_acklike, f_hblike;  // Ack, Heartbeat, Nak; and CreditInit beside them
  assign f_hblike     = ctl_type == link_pkg::CtlAck || ctl_type == link_pkg::CtlHeartbeat ||
                        ctl_type == link_pkg::CtlNak;
  assign f_acklike    = f_hblike || ctl_type == link_pkg::CtlCreditInit;
  assign f_known_type = f_acklike || ctl_type == link_pkg::CtlIdle || ctl_type == link_pkg::CtlTs1 ||
                        ctl_type == link_pkg::CtlTs2 || ctl_type == link_pkg::CtlSof ||
                        ctl_type == link_pkg::CtlEof;
  assign f_in_frame   = st_q == StData;
  // An EOF passes its checks when the SOF's length of data words came and the CRC matches.
  assign f_eof_checks = widx_q == len_cur_q && ~crc_q == blk_data_i[39:8];
  assign f_taken      = seq_q == expect_q && accept_q;
  assign f_duplicate  = seq_q != expect_q && (expect_q - seq_q) <= 16'h8000;
  // A frame is lost: broken by a bad block, cut by the next SOF, failing its EOF's checks, longer
  // than its SOF said, a gap, or the expected frame refused (no free slot, a length out of range).
  assign f_lost = f_in_frame && (
                  (blk_valid_i && (!blk_hdr_ok_i || (f_ctl_blk && !f_check_ok))) ||
                  (f_good_ctl && ctl_type == link_pkg::CtlSof) ||
                  (f_good_ctl && ctl_type == link_pkg::CtlEof && (!f_eof_checks || (!f_taken && !f_duplicate))) ||
                  (f_data_blk && widx_q >= len_cur_q));
  assign f_frame_drained = rx_valid_o && rx_ready_i && 8'(ridx_q) + 8'd1 == len_q[rd_slot];
  // One NAK per gap: asked for a lost frame while Active unless one went out since the last
  // frame taken; withdrawn when it is sent or a frame is taken.
  assign f_nak_next = (nak_req_q && !nak_sent_i && !frame_ok_o) ||
                      (f_lost && active_i && !nak_sent_q && !nak_sent_i);
  // An Ack for a frame taken, a duplicate, and a frame drained (its credit returns).
  assign f_ack_next = (ack_req_q && !ack_sent_i) || frame_ok_o || f_frame_drained ||
                      (f_in_frame && f_good_ctl && ctl_type == link_pkg::CtlEof && f_eof_checks && f_duplicate);
  // An SOF in Active is stored only if it is the expected frame, has a free slot after this
  // cycle's drain, and a length of 1 to MAX_WORDS words.
  assign f_sof_accepts = blk_data_i[23:8] == expect_q && (expect_q - rd_d) < 16'(RX_SLOTS) &&
                         blk_data_i[31:24] >= 8'd1 && blk_data_i[31:24] <= 8'(MAX_WORDS);
  `ASSERT_PAST(f_p_active, 1, active_i)
  `ASSERT_PAST(f_p_sof, 1, f_good_ctl && ctl_type == link_pkg::CtlSof && active_i)
  `ASSERT_PAST(f_p_sof_accepts, 1, f_sof_accepts)
  `ASSERT_PAST(f_p_sof_word, 25, blk_data_i[32:8])
  `ASSERT_PAST(f_p_nak_next, 1, f_nak_next)
  `ASSERT_PAST(f_p_ack_next, 1, f_ack_next)
  `ASSERT_PAST(f_p_nak_sent_next, 1, (nak_sent_q || nak_sent_i) && !frame_ok_o)
  // Nothing is taken from the lane while block lock is lost.
  `ASSERT(rx_takes_nothing_unlocked, blk_valid_i || !(bad_block_o || crc_err_o || frame_ok_o || store ||
          peer_ack_o || peer_nak_o || peer_init_o || peer_hb_o || ts1_o || ts2_o ||
          widx_d != widx_q || crc_d != crc_q || seq_d != seq_q))
  // A bad block: an invalid header, a control block failing its check or of unknown type.
  `ASSERT(rx_bad_block_rule, bad_block_o == (blk_valid_i && (!blk_hdr_ok_i ||
          (f_ctl_blk && (!f_check_ok || !f_known_type)))))
  // Each control block passing its check is what its type says, and nothing else is.
  `ASSERT(rx_control_decode_rule,
          ts1_o == (f_good_ctl && ctl_type == link_pkg::CtlTs1) &&
          ts2_o == (f_good_ctl && ctl_type == link_pkg::CtlTs2) &&
          peer_init_o == (f_good_ctl && ctl_type == link_pkg::CtlCreditInit) &&
          peer_nak_o == (f_good_ctl && ctl_type == link_pkg::CtlNak) &&
          peer_hb_o == (f_good_ctl && f_hblike) && peer_ack_o == (f_good_ctl && f_acklike))
  // An SOF in Active opens a frame with its sequence, length and eom, accepted by the rule above.
  `ASSERT(rx_sof_opens_frame, !(f_past_rst_n && f_p_sof) || (st_q == StData && widx_q == 8'd0 &&
          seq_q == f_p_sof_word[15:0] && len_cur_q == f_p_sof_word[23:16] && eom_cur_q == f_p_sof_word[24] &&
          accept_q == f_p_sof_accepts))
  // A frame is taken exactly at an EOF that passes its checks, in order, accepted.
  `ASSERT(rx_frame_taken_rule, frame_ok_o == (f_in_frame && f_good_ctl && ctl_type == link_pkg::CtlEof &&
          f_eof_checks && f_taken))
  // A CRC or length error: an EOF failing its checks, or a data block past the SOF's length.
  `ASSERT(rx_crc_error_rule, crc_err_o == (f_in_frame && ((f_good_ctl && ctl_type == link_pkg::CtlEof &&
          !f_eof_checks) || (f_data_blk && widx_q >= len_cur_q))))
  `ASSERT(rx_nak_once_per_gap, !f_past_rst_n || nak_req_q == f_p_nak_next)
  `ASSERT(rx_nak_sent_since_frame_taken, !f_past_rst_n || nak_sent_q == f_p_nak_sent_next)
  `ASSERT(rx_ack_rule, !f_past_rst_n || ack_req_q == f_p_ack_next)
  // No frame stays open outside Active; a flush restarts the sequence state at zero.
  `ASSERT(rx_idle_outside_active, !f_past_rst_n || f_p_active || st_q == StIdle)
  `ASSERT(rx_flush_restarts_at_zero, !(f_past_rst_n && f_past_flush) || (expect_q == '0 && rd_q == '0 && ridx_q == '0))
  // The word offered is inside its frame, so rx_last_o marks exactly the last word of a frame
  // that ends a message.
  `ASSERT(rx_read_index_in_frame, rx_valid_o ? 8'(ridx_q) < len_q[rd_slot] : ridx_q == '0)
`ifdef FORMAL
  // Induction helpers: a frame accepted has 1 to MAX_WORDS words, and so has every buffered one.
  function automatic logic f_buffered_lengths_ok(input logic [15:0] rd, input logic [15:0] ex);
    f_buffered_lengths_ok = 1'b1;
    for (int k = 0; k < RX_SLOTS; k++) begin
      if (16'(k) < ex - rd && (len_q[SlotW'(rd + 16'(k))] == 8'd0 ||
                               len_q[SlotW'(rd + 16'(k))] > 8'(MAX_WORDS))) f_buffered_lengths_ok = 1'b0;
    end
  endfunction
  logic f_lengths_ok;
  assign f_lengths_ok = f_buffered_lengths_ok(rd_q, expect_q);
  `ASSERT(rx_accepted_length_in_range, !(f_in_frame && accept_q) ||
          (len_cur_q != 8'd0 && len_cur_q <= 8'(MAX_WORDS)))
  `ASSERT(rx_buffered_lengths_in_range, f_lengths_ok)
`endif
  `COVER(cov_rx_buffer_full, (expect_q - rd_q) == 16'(RX_SLOTS))
  `COVER(cov_rx_crc_error, crc_err_o)
  `COVER(cov_rx_nak, nak_sent_i)
`endif

endmodule
