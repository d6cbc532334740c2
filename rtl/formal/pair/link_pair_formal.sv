// Formal harness (rtl/formal/pair): two real link_endpoints, A (xpu 1 lane 0) and B (xpu 2 lane 0),
// each expecting the other (check_peer on), joined by two nondeterministic lanes (pair_channel),
// each with a nondeterministic XPU sender and a checking XPU receiver (pair_xpu). Every
// endpoint assertion (link_tx, link_rx, link_train, link_endpoint) is checked too, in the
// harness's environment instead of under its ASSUMEs alone.
//
// The lanes pass, erase, flip (one bit, FLIP_GAP apart) or go dark at will; enable_i and
// retrain_req_i of both endpoints are free; rx_ready and tx_valid/last free. Checked: pair_xpu_rx's
// assertions both ways (exactly once, in order, intact, no loss across any number of retrains with
// the one peer), that neither endpoint is ever Active with anyone but the other (so never
// flushes), that with clean lanes and steady controls from reset both are Active from cycle
// LIVE_K on and never both before it (bounded liveness, K exact), and every endpoint assertion. rtl/formal/formal.sh runs it as link_pair_bmc (ABC's
// bmc3; docs/verification.md says what depth fits and why).
`include "mxtb_assert.svh"

module link_pair_formal #(
  parameter bit FLIPS    = 1'b1,   // the lanes may flip bits (else pass, erase, dark)
  parameter int FLIP_GAP = 8,
  // Bounded liveness from reset: both lanes clean, both endpoints enabled and never asked to
  // retrain since reset, and both are Active from cycle LIVE_K on. 0: not checked.
  parameter int LIVE_K   = 0,
  // link_endpoint, shrunk
  parameter int MAX_WORDS      = 2,
  parameter int REPLAY_DEPTH   = 2,
  parameter int RX_SLOTS       = 2,
  parameter int HB_PERIOD      = 4,
  parameter int HB_TIMEOUT     = 16,
  parameter int REPLAY_TIMEOUT = 8,
  parameter int MAX_REPLAYS    = 2,
  parameter int LOCK_GOOD      = 2,
  parameter int UNLOCK_BAD     = 2,
  parameter int RESET_CYCLES   = 1,
  parameter int DETECT_STABLE  = 1,
  parameter int DETECT_TIMEOUT = 8,
  parameter int LOCK_TIMEOUT   = 8,
  parameter int TS_COUNT       = 1,
  parameter int TS_TIMEOUT     = 8,
  parameter int RETRAIN_HOLD   = 1,
  parameter int ERR_WINDOW     = 8,
  parameter int ERR_THRESHOLD  = 2
) (
  input  logic       clk_i,
  // free inputs: the lanes, the controllers, the XPUs
  input  logic [1:0] ab_mode_i, ba_mode_i,
  input  logic [6:0] ab_pos_i, ba_pos_i,
  input  logic       a_enable_i, b_enable_i, a_retrain_i, b_retrain_i,
  input  logic       a_tx_valid_i, a_tx_last_i, a_rx_ready_i,
  input  logic       b_tx_valid_i, b_tx_last_i, b_rx_ready_i
);
  localparam logic [15:0] XA = 16'd1, XB = 16'd2;
  localparam logic [3:0]  StActive = link_pkg::StActive;

  // Reset in the first cycle only.
  logic rst_ni = 1'b0;
  always_ff @(posedge clk_i) rst_ni <= 1'b1;

  logic [65:0] a_lane_tx, b_lane_tx, a_lane_rx, b_lane_rx;
  logic        a_laser, b_laser, a_sd, b_sd, ab_clean, ba_clean;
  logic [63:0] a_tx_data, b_tx_data, a_rx_data, b_rx_data;
  logic        a_tx_valid, b_tx_valid, a_tx_last, b_tx_last, a_tx_ready, b_tx_ready;
  logic        a_rx_valid, b_rx_valid, a_rx_last, b_rx_last, a_fire, b_fire;
  logic [3:0]  a_state, b_state, unused_a_reason, unused_b_reason;
  logic [15:0] a_peer_xpu, b_peer_xpu;
  logic [7:0]  a_peer_lane, b_peer_lane, a_sent, b_sent, a_recv, b_recv;
  logic        a_last, b_last;

  assign a_last = a_tx_last_i;
  assign b_last = b_tx_last_i;

  pair_channel #(.FLIP_GAP(FLIP_GAP), .ALLOW_FLIP(FLIPS)) u_ab (
    .clk_i, .rst_ni, .tx_i(a_lane_tx), .laser_i(a_laser), .mode_i(ab_mode_i), .pos_i(ab_pos_i),
    .rx_o(b_lane_rx), .sd_o(b_sd), .clean_o(ab_clean));
  pair_channel #(.FLIP_GAP(FLIP_GAP), .ALLOW_FLIP(FLIPS)) u_ba (
    .clk_i, .rst_ni, .tx_i(b_lane_tx), .laser_i(b_laser), .mode_i(ba_mode_i), .pos_i(ba_pos_i),
    .rx_o(a_lane_rx), .sd_o(a_sd), .clean_o(ba_clean));

  pair_xpu_tx #(.TAG(XA)) u_a_xtx (.clk_i, .rst_ni, .valid_i(a_tx_valid_i), .last_i(a_last),
    .tx_data_o(a_tx_data), .tx_valid_o(a_tx_valid), .tx_last_o(a_tx_last), .tx_ready_i(a_tx_ready),
    .sent_o(a_sent));
  pair_xpu_tx #(.TAG(XB)) u_b_xtx (.clk_i, .rst_ni, .valid_i(b_tx_valid_i), .last_i(b_last),
    .tx_data_o(b_tx_data), .tx_valid_o(b_tx_valid), .tx_last_o(b_tx_last), .tx_ready_i(b_tx_ready),
    .sent_o(b_sent));
  pair_xpu_rx #(.PEER_TAG(XB)) u_a_xrx (.clk_i, .rst_ni, .rx_data_i(a_rx_data), .rx_valid_i(a_rx_valid),
    .rx_last_i(a_rx_last), .rx_ready_i(a_rx_ready_i), .peer_sent_i(b_sent), .recv_o(a_recv), .fire_o(a_fire));
  pair_xpu_rx #(.PEER_TAG(XA)) u_b_xrx (.clk_i, .rst_ni, .rx_data_i(b_rx_data), .rx_valid_i(b_rx_valid),
    .rx_last_i(b_rx_last), .rx_ready_i(b_rx_ready_i), .peer_sent_i(a_sent), .recv_o(b_recv), .fire_o(b_fire));

`define PAIR_EP(P, SELF, PEER) \
  link_endpoint #( \
    .MAX_WORDS(MAX_WORDS), .REPLAY_DEPTH(REPLAY_DEPTH), .RX_SLOTS(RX_SLOTS), .HB_PERIOD(HB_PERIOD), \
    .HB_TIMEOUT(HB_TIMEOUT), .REPLAY_TIMEOUT(REPLAY_TIMEOUT), .MAX_REPLAYS(MAX_REPLAYS), \
    .LOCK_GOOD(LOCK_GOOD), .UNLOCK_BAD(UNLOCK_BAD), .RESET_CYCLES(RESET_CYCLES), \
    .DETECT_STABLE(DETECT_STABLE), .DETECT_TIMEOUT(DETECT_TIMEOUT), .LOCK_TIMEOUT(LOCK_TIMEOUT), \
    .TS_COUNT(TS_COUNT), .TS_TIMEOUT(TS_TIMEOUT), .RETRAIN_HOLD(RETRAIN_HOLD), \
    .ERR_WINDOW(ERR_WINDOW), .ERR_THRESHOLD(ERR_THRESHOLD) \
  ) u_``P ( \
    .clk_i, .rst_ni, .xpu_id_i(SELF), .lane_id_i(8'd0), .check_peer_i(1'b1), .expect_xpu_i(PEER), \
    .expect_lane_i(8'd0), .enable_i(P``_enable_i), .retrain_req_i(P``_retrain_i), \
    .lane_tx_o(P``_lane_tx), .laser_o(P``_laser), .lane_rx_i(P``_lane_rx), .lane_sd_i(P``_sd), \
    .tx_data_i(P``_tx_data), .tx_valid_i(P``_tx_valid), .tx_last_i(P``_tx_last), .tx_ready_o(P``_tx_ready), \
    .rx_data_o(P``_rx_data), .rx_valid_o(P``_rx_valid), .rx_last_o(P``_rx_last), .rx_ready_i(P``_rx_ready_i), \
    .state_o(P``_state), .reason_o(unused_``P``_reason), .peer_xpu_o(P``_peer_xpu), .peer_lane_o(P``_peer_lane), \
    .irq_o(), .irq_clear_i(1'b0), .cnt_frames_tx_o(), .cnt_frames_rx_o(), .cnt_crc_err_o(), \
    .cnt_replays_o(), .cnt_retrains_o(), .cnt_bad_blocks_o() \
  );
  `PAIR_EP(a, XA, XB)
  `PAIR_EP(b, XB, XA)
`undef PAIR_EP

  // ---------------------------------------------------------------- harness properties
  // Never Active with anyone but the other endpoint (so no flush ever: the peer never changes).
  `ASSERT(pair_a_peer_fixed, a_state != StActive || (a_peer_xpu == XB && a_peer_lane == 8'd0))
  `ASSERT(pair_b_peer_fixed, b_state != StActive || (b_peer_xpu == XA && b_peer_lane == 8'd0))

  // Bounded liveness, from reset: clean lanes, both enabled, no retrain request, and both
  // endpoints are Active from cycle LIVE_K on. (After a fault it needs a retrain, past the depth.)
  logic       clean_now, clean_so_far_q;
  logic [7:0] cycle_q;
  assign clean_now = ab_clean && ba_clean && a_enable_i && b_enable_i && !a_retrain_i && !b_retrain_i;
  always_ff @(posedge clk_i or negedge rst_ni)
    if (!rst_ni) begin
      clean_so_far_q <= 1'b1;
      cycle_q        <= 8'd0;
    end else begin
      clean_so_far_q <= clean_so_far_q && clean_now;
      cycle_q        <= cycle_q == 8'hFF ? cycle_q : cycle_q + 8'd1;
    end
  logic live_due;  // clean from reset through this cycle, and LIVE_K cycles have passed
  assign live_due = LIVE_K != 0 && clean_so_far_q && clean_now && cycle_q >= 8'(LIVE_K);
  `ASSERT(pair_active_when_clean_from_reset, !live_due || (a_state == StActive && b_state == StActive))
  // ... and not before: LIVE_K is the training path's length, not a loose bound.
  `ASSERT(pair_not_active_before_k, LIVE_K == 0 || cycle_q >= 8'(LIVE_K) || !(a_state == StActive && b_state == StActive))

endmodule
