// One end of an optical lane: the lane link layer between an XPU's payload interface and the
// 66b blocks on the lane. See docs/link-layer.md for the protocol, states, timeouts and reasons.
//
//   XPU tx_* -> link_tx (replay buffer, framer) -> scrambler58 -> lane_tx_o
//   lane_rx_i -> link_block_lock -> descrambler58 -> link_rx (deframer, receive buffer) -> rx_*
//   link_train watches both and owns the state, reason and laser.
`include "mxtb_assert.svh"

module link_endpoint
#(
  parameter int MAX_WORDS      = 16,
  parameter int REPLAY_DEPTH   = 8,
  parameter int RX_SLOTS       = 8,
  parameter int HB_PERIOD      = 256,
  parameter int HB_TIMEOUT     = 2048,
  parameter int REPLAY_TIMEOUT = 1024,
  parameter int MAX_REPLAYS    = 8,
  parameter int LOCK_GOOD      = 64,
  parameter int UNLOCK_BAD     = 16,
  parameter int RESET_CYCLES   = 16,
  parameter int DETECT_STABLE  = 64,
  parameter int DETECT_TIMEOUT = 65536,
  parameter int LOCK_TIMEOUT   = 8192,
  parameter int TS_COUNT       = 16,
  parameter int TS_TIMEOUT     = 8192,
  parameter int RETRAIN_HOLD   = 256,
  parameter int ERR_WINDOW     = 4096,
  parameter int ERR_THRESHOLD  = 32
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  // identity and control (from the optical switch controller)
  input  logic [15:0] xpu_id_i,
  input  logic [7:0]  lane_id_i,
  input  logic        check_peer_i,
  input  logic [15:0] expect_xpu_i,
  input  logic [7:0]  expect_lane_i,
  input  logic        enable_i,
  input  logic        retrain_req_i,
  // lane side: 66 bits a cycle, bit 0 first in time
  output logic [65:0] lane_tx_o,
  output logic        laser_o,
  input  logic [65:0] lane_rx_i,
  input  logic        lane_sd_i,     // signal detect
  // XPU side
  input  logic [63:0] tx_data_i,
  input  logic        tx_valid_i,
  input  logic        tx_last_i,
  output logic        tx_ready_o,
  output logic [63:0] rx_data_o,
  output logic        rx_valid_o,
  output logic        rx_last_o,
  input  logic        rx_ready_i,
  // status
  output logic [3:0]  state_o,
  output logic [3:0]  reason_o,
  output logic [15:0] peer_xpu_o,
  output logic [7:0]  peer_lane_o,
  output logic        irq_o,
  input  logic        irq_clear_i,
  output logic [31:0] cnt_frames_tx_o,
  output logic [31:0] cnt_frames_rx_o,
  output logic [31:0] cnt_crc_err_o,
  output logic [31:0] cnt_replays_o,
  output logic [31:0] cnt_retrains_o,
  output logic [31:0] cnt_bad_blocks_o
);

  logic [3:0]  state;   // link_pkg::link_state_e
  logic [3:0]  reason;  // link_pkg::reason_e
  logic        active, enter_active, retrain, replay_exhausted, replay, frame_sent, flush, will_flush;
  logic [39:0] train_fields;
  logic [65:0] tx_block, rx_block;
  logic [63:0] tx_scrambled, rx_descrambled;
  logic        lock, hdr_valid, unused_bad_hdr;
  logic [15:0] rx_expect, rx_credit, peer_expect, peer_credit, ts_xpu, unused_unacked;
  logic [7:0]  ts_lane;
  logic        ts_flush;
  logic        ack_req, nak_req, ack_sent, nak_sent;
  logic        peer_ack, peer_nak, peer_init, peer_hb, ts1, ts2;
  logic        bad_block, crc_err, frame_ok;
  logic [31:0] frames_tx_q, frames_rx_q, crc_err_q, replays_q, retrains_q, bad_blocks_q;

  link_tx #(
    .MAX_WORDS(MAX_WORDS), .REPLAY_DEPTH(REPLAY_DEPTH), .HB_PERIOD(HB_PERIOD),
    .REPLAY_TIMEOUT(REPLAY_TIMEOUT), .MAX_REPLAYS(MAX_REPLAYS)
  ) u_tx (
    .clk_i, .rst_ni,
    .active_i(active), .enter_active_i(enter_active), .flush_i(flush), .train_fields_i(train_fields),
    .self_xpu_i(xpu_id_i), .self_lane_i(lane_id_i),
    .tx_data_i, .tx_valid_i, .tx_last_i, .tx_ready_o,
    .rx_expect_i(rx_expect), .rx_credit_i(rx_credit),
    .ack_req_i(ack_req), .nak_req_i(nak_req), .ack_sent_o(ack_sent), .nak_sent_o(nak_sent),
    .peer_ack_i(peer_ack && !will_flush), .peer_nak_i(peer_nak), .peer_init_i(peer_init && !will_flush),
    .peer_expect_i(peer_expect), .peer_credit_i(peer_credit),
    .block_o(tx_block), .frame_sent_o(frame_sent), .replay_o(replay),
    .replay_exhausted_o(replay_exhausted), .unacked_o(unused_unacked)
  );

  scrambler58 u_scrambler (
    .clk_i, .rst_ni, .en_i(1'b1), .data_i(tx_block[65:2]), .data_o(tx_scrambled)
  );
  assign lane_tx_o = laser_o ? {tx_scrambled, tx_block[1:0]} : '0;

  link_block_lock #(.LOCK_GOOD(LOCK_GOOD), .UNLOCK_BAD(UNLOCK_BAD)) u_lock (
    .clk_i, .rst_ni, .sd_i(lane_sd_i), .raw_i(lane_rx_i), .block_o(rx_block), .lock_o(lock),
    .hdr_valid_o(hdr_valid), .bad_hdr_o(unused_bad_hdr)
  );

  descrambler58 u_descrambler (
    .clk_i, .rst_ni, .en_i(1'b1), .data_i(rx_block[65:2]), .data_o(rx_descrambled)
  );

  link_rx #(.MAX_WORDS(MAX_WORDS), .RX_SLOTS(RX_SLOTS)) u_rx (
    .clk_i, .rst_ni, .active_i(active), .flush_i(flush), .peer_xpu_i(peer_xpu_o), .peer_lane_i(peer_lane_o),
    .blk_valid_i(lock && lane_sd_i), .blk_hdr_ok_i(hdr_valid), .blk_sync_i(rx_block[1:0]),
    .blk_data_i(rx_descrambled),
    .rx_data_o, .rx_valid_o, .rx_last_o, .rx_ready_i,
    .expect_o(rx_expect), .credit_o(rx_credit), .ack_req_o(ack_req), .nak_req_o(nak_req),
    .ack_sent_i(ack_sent), .nak_sent_i(nak_sent),
    .peer_ack_o(peer_ack), .peer_nak_o(peer_nak), .peer_init_o(peer_init), .peer_hb_o(peer_hb),
    .peer_expect_o(peer_expect), .peer_credit_o(peer_credit),
    .ts1_o(ts1), .ts2_o(ts2), .ts_xpu_o(ts_xpu), .ts_lane_o(ts_lane), .ts_flush_o(ts_flush),
    .bad_block_o(bad_block), .crc_err_o(crc_err), .frame_ok_o(frame_ok)
  );

  link_train #(
    .RESET_CYCLES(RESET_CYCLES), .DETECT_STABLE(DETECT_STABLE), .DETECT_TIMEOUT(DETECT_TIMEOUT),
    .LOCK_TIMEOUT(LOCK_TIMEOUT), .TS_COUNT(TS_COUNT), .TS_TIMEOUT(TS_TIMEOUT),
    .RETRAIN_HOLD(RETRAIN_HOLD), .HB_TIMEOUT(HB_TIMEOUT), .ERR_WINDOW(ERR_WINDOW),
    .ERR_THRESHOLD(ERR_THRESHOLD), .RX_SLOTS(RX_SLOTS)
  ) u_train (
    .clk_i, .rst_ni, .enable_i, .retrain_req_i, .check_peer_i, .xpu_id_i, .lane_id_i,
    .expect_xpu_i, .expect_lane_i, .sd_i(lane_sd_i), .lock_i(lock),
    .ts1_i(ts1), .ts2_i(ts2), .ts_xpu_i(ts_xpu), .ts_lane_i(ts_lane), .ts_flush_i(ts_flush),
    .peer_init_i(peer_init), .peer_hb_i(peer_hb), .bad_block_i(bad_block),
    .rx_expect_i(rx_expect), .rx_credit_i(rx_credit), .replay_exhausted_i(replay_exhausted),
    .state_o(state), .reason_o(reason), .laser_o, .active_o(active),
    .enter_active_o(enter_active), .retrain_o(retrain), .flush_o(flush), .will_flush_o(will_flush),
    .train_fields_o(train_fields),
    .peer_xpu_o, .peer_lane_o, .irq_o, .irq_clear_i
  );

  assign state_o  = state;
  assign reason_o = reason;

  assign cnt_frames_tx_o  = frames_tx_q;
  assign cnt_frames_rx_o  = frames_rx_q;
  assign cnt_crc_err_o    = crc_err_q;
  assign cnt_replays_o    = replays_q;
  assign cnt_retrains_o   = retrains_q;
  assign cnt_bad_blocks_o = bad_blocks_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      frames_tx_q  <= '0;
      frames_rx_q  <= '0;
      crc_err_q    <= '0;
      replays_q    <= '0;
      retrains_q   <= '0;
      bad_blocks_q <= '0;
    end else begin
      frames_tx_q  <= frames_tx_q + 32'(frame_sent);
      frames_rx_q  <= frames_rx_q + 32'(frame_ok);
      crc_err_q    <= crc_err_q + 32'(crc_err);
      replays_q    <= replays_q + 32'(replay);
      retrains_q   <= retrains_q + 32'(retrain);
      bad_blocks_q <= bad_blocks_q + 32'(bad_block);
    end
  end

  // ---------------------------------------------------------------- assertions
  `ASSERT_RESET_START
  // MAX_REPLAYS replays in a row without progress retrain the link: once exhausted it is not
  // Active the next cycle.
  `ASSERT_PAST_RESET
  `ASSERT_PAST(f_past_exhausted, 1, active && replay_exhausted)
  `ASSERT(link_replays_bounded, !f_past_rst_n || !f_past_exhausted || !active)
  `ASSERT(link_flush_outside_active, !(flush && active))
`ifdef MXTB_ASSERT_ON
  // The block lock this endpoint was given: under light, the lock rises exactly the cycle after
  // the LOCK_GOOD-th valid header in a row (docs/link-layer.md), counted here from the lock's own
  // outputs, so that the parameter passed to it is checked where the endpoint passes it.
  logic [15:0] f_good_run;
  always_ff @(posedge clk_i or negedge rst_ni)
    if (!rst_ni) f_good_run <= '0;
    else if (!lane_sd_i || lock || !hdr_valid) f_good_run <= '0;
    else f_good_run <= f_good_run + 16'd1;
  `ASSERT_PAST(f_past_lock, 1, lock)
  `ASSERT_PAST(f_past_lock_due, 1, lane_sd_i && !lock && hdr_valid && f_good_run == 16'(LOCK_GOOD - 1))
  `ASSERT(link_lock_after_lock_good, !f_past_rst_n || (lock && !f_past_lock) == f_past_lock_due)
`endif

endmodule
