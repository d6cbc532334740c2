// Link training and monitoring state machine (the link's LTSSM):
//   Reset -> Detect -> BlockLock -> Ts1 -> Ts2 -> CreditInit -> Active, plus Retrain and Disabled.
// Every training state has a timeout parameter; Active is watched by loss of signal, block lock,
// the heartbeat timeout, an error-rate window, replay exhaustion and the peer restarting training.
// Retrain after dropping an Active link turns the laser off, so the peer sees loss of signal and retrains as well.
// Both sides agree on a flush of sequence state: a side that meets a new peer says so in its TS2s
// (the flush flag), and the other side flushes too.
// States and reason codes come from link_pkg (generated from rtl/link/link_defs.json).
`include "mxtb_assert.svh"

module link_train
#(
  parameter int RESET_CYCLES   = 16,
  parameter int DETECT_STABLE  = 64,     // cycles of signal before leaving Detect
  parameter int DETECT_TIMEOUT = 65536,
  parameter int LOCK_TIMEOUT   = 8192,
  parameter int TS_COUNT       = 16,     // training sets to see (and send) per step
  parameter int TS_TIMEOUT     = 8192,   // for Ts1, Ts2 and CreditInit each
  parameter int RETRAIN_HOLD   = 256,    // cycles with the laser off in Retrain
  parameter int HB_TIMEOUT     = 2048,   // cycles without a heartbeat/ack while Active
  parameter int ERR_WINDOW     = 4096,   // cycles per error-rate window
  parameter int ERR_THRESHOLD  = 32,     // bad blocks allowed per window
  parameter int RX_SLOTS       = 8       // the receiver's credit right after a flush
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        enable_i,
  input  logic        retrain_req_i,
  input  logic        check_peer_i,
  input  logic [15:0] xpu_id_i,
  input  logic [7:0]  lane_id_i,
  input  logic [15:0] expect_xpu_i,
  input  logic [7:0]  expect_lane_i,
  // lane status
  input  logic        sd_i,
  input  logic        lock_i,
  // from the receiver
  input  logic        ts1_i,
  input  logic        ts2_i,
  input  logic [15:0] ts_xpu_i,
  input  logic [7:0]  ts_lane_i,
  input  logic        ts_flush_i,      // the TS2's flush flag (its sender meets a new peer)
  input  logic        peer_init_i,
  input  logic        peer_hb_i,
  input  logic        bad_block_i,
  input  logic [15:0] rx_expect_i,
  input  logic [15:0] rx_credit_i,
  // from the transmitter
  input  logic        replay_exhausted_i,
  // outputs
  output logic [3:0]  state_o,   // link_pkg::link_state_e
  output logic [3:0]  reason_o,  // link_pkg::reason_e
  output logic        laser_o,
  output logic        active_o,
  output logic        enter_active_o,
  output logic        retrain_o,       // pulse: entering Retrain
  output logic        flush_o,         // pulse: becoming Active with sequence state restarting (below)
  output logic        will_flush_o,    // Ts2/CreditInit towards a flush: the peer's acks are not ours yet
  output logic [39:0] train_fields_o,  // control block to send while not Active
  output logic [15:0] peer_xpu_o,
  output logic [7:0]  peer_lane_o,
  output logic        irq_o,           // sticky: set on every state change
  input  logic        irq_clear_i
);

  // State and reason hold link_pkg enum values in plain vectors: Icarus 11 crashes on
  // variables of a package's enum type.
  logic [3:0]  st_q, st_d;
  logic [3:0]  rsn_q, rsn_d;
  logic [31:0] timer_q, timer_d;
  logic [15:0] sd_cnt_q, sd_cnt_d, ts_cnt_q, ts_cnt_d;
  logic [15:0] cand_xpu_q, cand_xpu_d, peer_xpu_q, peer_xpu_d;
  logic [7:0]  cand_lane_q, cand_lane_d, peer_lane_q, peer_lane_d;
  logic        init_seen_q, init_seen_d, enable_q, irq_q;
  logic        had_peer_q, had_peer_d;  // the link has been Active (with act_*_q)
  logic        cand_flush_q, cand_flush_d;  // the Ts1 candidate's TS2s carried the flush flag
  logic        peer_flush_q, peer_flush_d;  // the peer's TS2s carried it: it restarts sequence state
  logic        in_ts2_init;             // Ts2 or CreditInit: the peer's identity is known
  logic        new_peer;                // ... and it is not the one the link was last Active with
  logic        peer_ts2;                // a TS2 from that peer arrives
  logic [15:0] act_xpu_q, act_xpu_d;     // the peer it was last Active with
  logic [7:0]  act_lane_q, act_lane_d;
  logic        quiet_q;                 // this Retrain keeps the laser off
  logic [31:0] hb_timer_q, hb_timer_d, err_timer_q, err_timer_d;
  logic [15:0] err_cnt_q, err_cnt_d;
  logic        restart;  // re-enter the current state (Detect timing out) with a fresh timer

  assign state_o        = st_q;
  assign reason_o       = rsn_q;
  // Retrain goes dark only when it dropped an Active link or was asked to: that is how the peer
  // learns to retrain too. After a training timeout, and in Disabled for a wrong peer, the lane
  // stays lit (idles): while the controller moves a circuit, a link may briefly see its future
  // peer, and the controller's photodiodes must still see light to verify the new circuit.
  assign laser_o        = !(st_q == link_pkg::StReset ||
                            (st_q == link_pkg::StDisabled && rsn_q != link_pkg::RsnWrongPeer) ||
                            (st_q == link_pkg::StRetrain && quiet_q));
  assign active_o       = st_q == link_pkg::StActive;
  assign enter_active_o = st_d == link_pkg::StActive && st_q != link_pkg::StActive;
  assign in_ts2_init    = st_q == link_pkg::StTs2 || st_q == link_pkg::StCreditInit;
  assign new_peer       = in_ts2_init && had_peer_q && (peer_xpu_q != act_xpu_q || peer_lane_q != act_lane_q);
  assign peer_ts2       = ts2_i && ts_xpu_i == peer_xpu_q && ts_lane_i == peer_lane_q;
  // A side flushes when it meets a new peer, or when its peer (the same one as before) says it
  // does: the peer was Active with someone else meanwhile and restarts at sequence 0. A link that
  // was never Active has nothing to flush: its state is the reset state the flush would leave.
  assign will_flush_o   = new_peer || (in_ts2_init && had_peer_q && peer_flush_q);
  assign retrain_o      = st_d == link_pkg::StRetrain && st_q != link_pkg::StRetrain;
  assign peer_xpu_o     = peer_xpu_q;
  assign peer_lane_o    = peer_lane_q;
  assign irq_o          = irq_q;

  always_comb begin
    unique case (st_q)
      link_pkg::StTs1:        train_fields_o = {8'h0, lane_id_i, xpu_id_i, link_pkg::CtlTs1};
      // The flush flag says this side meets a new peer, so that the peer flushes too.
      link_pkg::StTs2:        train_fields_o = {7'h0, new_peer, lane_id_i, xpu_id_i, link_pkg::CtlTs2};
      // Towards a flush the peer gets the state the flush on becoming Active will leave: expect 0,
      // RX_SLOTS credit.
      link_pkg::StCreditInit: train_fields_o = will_flush_o ? {16'(RX_SLOTS), 16'h0, link_pkg::CtlCreditInit} :
                                                              {rx_credit_i, rx_expect_i, link_pkg::CtlCreditInit};
      default:      train_fields_o = {32'h0, link_pkg::CtlIdle};
    endcase
  end

  always_comb begin
    logic       link_lost;
    logic [3:0] lost_reason;
    st_d        = st_q;
    rsn_d       = rsn_q;
    restart     = 1'b0;
    flush_o     = 1'b0;
    had_peer_d  = had_peer_q || st_q == link_pkg::StActive;
    cand_xpu_d  = cand_xpu_q;
    cand_lane_d = cand_lane_q;
    peer_xpu_d  = peer_xpu_q;
    peer_lane_d = peer_lane_q;
    cand_flush_d = cand_flush_q;
    peer_flush_d = peer_flush_q;
    act_xpu_d   = st_q == link_pkg::StActive ? peer_xpu_q : act_xpu_q;
    act_lane_d  = st_q == link_pkg::StActive ? peer_lane_q : act_lane_q;
    ts_cnt_d    = ts_cnt_q;
    init_seen_d = init_seen_q || peer_init_i;
    sd_cnt_d    = sd_i ? ((sd_cnt_q == 16'hFFFF) ? sd_cnt_q : sd_cnt_q + 16'd1) : 16'd0;
    hb_timer_d  = peer_hb_i ? 32'd0 : hb_timer_q + 32'd1;
    err_timer_d = err_timer_q + 32'd1;
    err_cnt_d   = err_cnt_q + (bad_block_i ? 16'd1 : 16'd0);
    if (err_timer_q >= 32'(ERR_WINDOW - 1)) begin
      err_timer_d = '0;
      err_cnt_d   = '0;
    end

    // Losing the lane ends any state past Detect.
    link_lost   = !sd_i || !lock_i;
    if (!sd_i) lost_reason = link_pkg::RsnLossOfSignal;
    else lost_reason = link_pkg::RsnBlockLockLost;

    if (!enable_i) begin
      if (st_q != link_pkg::StDisabled) begin
        st_d  = link_pkg::StDisabled;
        rsn_d = link_pkg::RsnAdminDisabled;
      end
    end else if (st_q == link_pkg::StDisabled) begin
      if (!enable_q || retrain_req_i) st_d = link_pkg::StDetect;
    end else if (retrain_req_i && st_q != link_pkg::StReset && st_q != link_pkg::StRetrain) begin
      st_d  = link_pkg::StRetrain;
      rsn_d = link_pkg::RsnRetrainRequest;
    end else begin
      unique case (st_q)
        link_pkg::StReset: if (timer_q >= 32'(RESET_CYCLES)) st_d = link_pkg::StDetect;
        link_pkg::StDetect: begin
          if (sd_cnt_q >= 16'(DETECT_STABLE)) begin
            st_d = link_pkg::StBlockLock;
          end else if (timer_q >= 32'(DETECT_TIMEOUT)) begin
            rsn_d   = link_pkg::RsnDetectTimeout;
            restart = 1'b1;
          end
        end
        link_pkg::StBlockLock: begin
          if (!sd_i) begin
            st_d  = link_pkg::StRetrain;
            rsn_d = link_pkg::RsnLossOfSignal;
          end else if (lock_i) begin
            st_d = link_pkg::StTs1;
          end else if (timer_q >= 32'(LOCK_TIMEOUT)) begin
            st_d  = link_pkg::StRetrain;
            rsn_d = link_pkg::RsnLockTimeout;
          end
        end
        link_pkg::StTs1: begin
          if (ts1_i || ts2_i) begin
            if (ts_xpu_i == cand_xpu_q && ts_lane_i == cand_lane_q) begin
              ts_cnt_d     = ts_cnt_q + 16'd1;
              cand_flush_d = cand_flush_q || (ts2_i && ts_flush_i);
            end else begin
              cand_xpu_d   = ts_xpu_i;
              cand_lane_d  = ts_lane_i;
              ts_cnt_d     = 16'd1;
              cand_flush_d = ts2_i && ts_flush_i;
            end
          end
          if (link_lost) begin
            st_d  = link_pkg::StRetrain;
            rsn_d = lost_reason;
          end else if (ts_cnt_q >= 16'(TS_COUNT)) begin
            if (check_peer_i && (cand_xpu_q != expect_xpu_i || cand_lane_q != expect_lane_i)) begin
              st_d  = link_pkg::StDisabled;  // never Active with the wrong peer
              rsn_d = link_pkg::RsnWrongPeer;
            end else begin
              st_d         = link_pkg::StTs2;
              peer_xpu_d   = cand_xpu_q;
              peer_lane_d  = cand_lane_q;
              peer_flush_d = cand_flush_q;
            end
          end else if (timer_q >= 32'(TS_TIMEOUT)) begin
            st_d  = link_pkg::StRetrain;
            rsn_d = link_pkg::RsnTs1Timeout;
          end
        end
        link_pkg::StTs2: begin
          if (peer_ts2) ts_cnt_d = ts_cnt_q + 16'd1;
          if (link_lost) begin
            st_d  = link_pkg::StRetrain;
            rsn_d = lost_reason;
          end else if ((ts_cnt_q >= 16'(TS_COUNT) || init_seen_q) && timer_q >= 32'(TS_COUNT)) begin
            st_d = link_pkg::StCreditInit;
          end else if (timer_q >= 32'(TS_TIMEOUT)) begin
            st_d  = link_pkg::StRetrain;
            rsn_d = link_pkg::RsnTs2Timeout;
          end
        end
        link_pkg::StCreditInit: begin
          if (link_lost) begin
            st_d  = link_pkg::StRetrain;
            rsn_d = lost_reason;
          end else if ((init_seen_q || peer_hb_i) && timer_q >= 32'(TS_COUNT)) begin
            st_d  = link_pkg::StActive;
            rsn_d = link_pkg::RsnNone;
            // Sequence state belongs to one peer: a new one (the spare after a failover) starts
            // both directions afresh, but only once the link is Active with it. A peer glimpsed in
            // Ts1 while mesh elements move, or one that dies in Ts2/CreditInit before the link is
            // Active (the mesh then goes back to the old peer), must not cost the old peer its
            // frames: until then will_flush_o keeps the new peer's acks out of the old state. The
            // old peer flushes too when this side's TS2s said it would (peer_flush_q).
            flush_o = will_flush_o;
          end else if (timer_q >= 32'(TS_TIMEOUT)) begin
            st_d  = link_pkg::StRetrain;
            rsn_d = link_pkg::RsnCreditTimeout;
          end
        end
        link_pkg::StActive: begin
          if (link_lost) begin
            st_d  = link_pkg::StRetrain;
            rsn_d = lost_reason;
          end else if (hb_timer_q >= 32'(HB_TIMEOUT)) begin
            st_d  = link_pkg::StRetrain;
            rsn_d = link_pkg::RsnHeartbeatTimeout;
          end else if (err_cnt_q > 16'(ERR_THRESHOLD)) begin
            st_d  = link_pkg::StRetrain;
            rsn_d = link_pkg::RsnErrorRate;
          end else if (replay_exhausted_i) begin
            st_d  = link_pkg::StRetrain;
            rsn_d = link_pkg::RsnReplayExhausted;
          end else if (ts1_i) begin
            st_d  = link_pkg::StRetrain;
            rsn_d = link_pkg::RsnPeerRetrain;
          end
        end
        link_pkg::StRetrain: if (timer_q >= 32'(RETRAIN_HOLD)) st_d = link_pkg::StDetect;
        default: st_d = link_pkg::StReset;
      endcase
    end

    // The flag belongs to one training: kept from Ts1's candidate through Ts2 and CreditInit (the
    // peer may still be in Ts2 when this side left it on the peer's TS2 count).
    if (in_ts2_init && peer_ts2 && ts_flush_i) peer_flush_d = 1'b1;
    if (st_q != link_pkg::StTs1 || st_d != st_q) cand_flush_d = 1'b0;
    if (st_d != link_pkg::StTs2 && st_d != link_pkg::StCreditInit) peer_flush_d = 1'b0;
    if (st_d != st_q) begin
      ts_cnt_d    = '0;
      init_seen_d = 1'b0;
      cand_xpu_d  = '0;
      cand_lane_d = '0;
      hb_timer_d  = '0;
      err_timer_d = '0;
      err_cnt_d   = '0;
    end
    timer_d = (st_d != st_q || restart) ? 32'd0 :
              (timer_q == 32'hFFFF_FFFF) ? timer_q : timer_q + 32'd1;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      st_q        <= link_pkg::StReset;
      rsn_q       <= link_pkg::RsnNone;
      timer_q     <= '0;
      sd_cnt_q    <= '0;
      ts_cnt_q    <= '0;
      cand_xpu_q  <= '0;
      cand_lane_q <= '0;
      peer_xpu_q  <= '0;
      peer_lane_q <= '0;
      act_xpu_q   <= '0;
      act_lane_q  <= '0;
      init_seen_q <= 1'b0;
      had_peer_q  <= 1'b0;
      cand_flush_q <= 1'b0;
      peer_flush_q <= 1'b0;
      quiet_q     <= 1'b0;
      enable_q    <= 1'b0;
      irq_q       <= 1'b0;
      hb_timer_q  <= '0;
      err_timer_q <= '0;
      err_cnt_q   <= '0;
    end else begin
      st_q        <= st_d;
      rsn_q       <= rsn_d;
      timer_q     <= timer_d;
      sd_cnt_q    <= sd_cnt_d;
      ts_cnt_q    <= ts_cnt_d;
      cand_xpu_q  <= cand_xpu_d;
      cand_lane_q <= cand_lane_d;
      peer_xpu_q  <= peer_xpu_d;
      peer_lane_q <= peer_lane_d;
      act_xpu_q   <= act_xpu_d;
      act_lane_q  <= act_lane_d;
      init_seen_q <= init_seen_d;
      had_peer_q  <= had_peer_d;
      cand_flush_q <= cand_flush_d;
      peer_flush_q <= peer_flush_d;
      if (st_d == link_pkg::StRetrain && st_q != link_pkg::StRetrain)
        quiet_q <= st_q == link_pkg::StActive || retrain_req_i;
      enable_q    <= enable_i;
      irq_q       <= (irq_q && !irq_clear_i) || st_d != st_q;
      hb_timer_q  <= hb_timer_d;
      err_timer_q <= err_timer_d;
      err_cnt_q   <= err_cnt_d;
    end
  end

  // ---------------------------------------------------------------- assertions
  `ASSERT_RESET_START
`ifdef MXTB_ASSERT_ON
  localparam logic [3:0] TReset = link_pkg::StReset, TDetect = link_pkg::StDetect,
                         TLock = link_pkg::StBlockLock, TTs1 = link_pkg::StTs1, TTs2 = link_pkg::StTs2,
                         TInit = link_pkg::StCreditInit, TActive = link_pkg::StActive,
                         TRetrain = link_pkg::StRetrain, TDisabled = link_pkg::StDisabled;
  // The transitions docs/link-layer.md draws, and no others.
  function automatic logic f_legal(input logic [3:0] a, input logic [3:0] b);
    f_legal = a == b ||
              (b == TDisabled) ||                                       // enable_i low, wrong peer
              (a == TDisabled && b == TDetect) ||
              (b == TRetrain && a != TReset && a != TDisabled) ||           // retrain_req_i, lost lane, timeouts
              (a == TReset && b == TDetect) ||
              (a == TDetect && b == TLock) ||
              (a == TLock && b == TTs1) ||
              (a == TTs1 && b == TTs2) ||
              (a == TTs2 && b == TInit) ||
              (a == TInit && b == TActive) ||
              (a == TRetrain && b == TDetect);
  endfunction
  // Checked on registered values, one cycle late: reading st_d here would make Verilator treat
  // the tx/rx/train combinational loop as one block.
  logic [3:0]  f_prev_st_q;
  logic        f_prev_check_q, f_checked_q;
  logic [15:0] f_prev_exp_xpu_q, f_prev_cand_xpu_q, f_exp_xpu_q;
  logic [7:0]  f_prev_exp_lane_q, f_prev_cand_lane_q, f_exp_lane_q;
  logic        f_ts1_to_ts2;
  assign f_ts1_to_ts2 = f_prev_st_q == TTs1 && st_q == TTs2;
  // Shadow: the expectation in force when Ts1 accepted the peer.
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      f_prev_st_q        <= TReset;
      f_prev_check_q     <= 1'b0;
      f_prev_exp_xpu_q   <= '0;
      f_prev_exp_lane_q  <= '0;
      f_prev_cand_xpu_q  <= '0;
      f_prev_cand_lane_q <= '0;
      f_checked_q        <= 1'b0;
      f_exp_xpu_q        <= '0;
      f_exp_lane_q       <= '0;
    end else begin
      f_prev_st_q        <= st_q;
      f_prev_check_q     <= check_peer_i;
      f_prev_exp_xpu_q   <= expect_xpu_i;
      f_prev_exp_lane_q  <= expect_lane_i;
      f_prev_cand_xpu_q  <= cand_xpu_q;
      f_prev_cand_lane_q <= cand_lane_q;
      if (f_ts1_to_ts2) begin
        f_checked_q  <= f_prev_check_q;
        f_exp_xpu_q  <= f_prev_exp_xpu_q;
        f_exp_lane_q <= f_prev_exp_lane_q;
      end
    end
  end

  `ASSERT(train_state_legal, st_q <= TDisabled)
  `ASSERT(train_transition_legal, f_legal(f_prev_st_q, st_q))
  `ASSERT(train_active_only_from_credit_init, !(st_q == TActive && f_prev_st_q != TActive) || f_prev_st_q == TInit)
  // Never Active with a peer other than the expected one: the peer is learnt only when Ts1
  // accepts it, is checked then, and does not change until the next Ts1.
  `ASSERT(train_peer_checked_at_ts1, !(f_ts1_to_ts2 && f_prev_check_q) ||
          (peer_xpu_q == f_prev_exp_xpu_q && peer_lane_q == f_prev_exp_lane_q))
  `ASSERT(train_peer_is_candidate, !f_ts1_to_ts2 ||
          (peer_xpu_q == f_prev_cand_xpu_q && peer_lane_q == f_prev_cand_lane_q))
  `ASSERT_PAST_RESET
  `ASSERT_PAST(f_past_peer, 24, {peer_xpu_q, peer_lane_q})
  `ASSERT(train_peer_learnt_only_at_ts1, !f_past_rst_n || f_past_peer == {peer_xpu_q, peer_lane_q} ||
          f_ts1_to_ts2)
  `ASSERT(train_active_peer_expected, !((st_q == TTs2 || st_q == TInit || st_q == TActive) && !f_ts1_to_ts2 &&
          f_checked_q) ||
          (peer_xpu_q == f_exp_xpu_q && peer_lane_q == f_exp_lane_q))
  `ASSERT(train_active_laser_on, st_q != TActive || laser_o)

  // The flush rule (docs/link-layer.md, "Reliability"), both ways: a link becoming Active flushes
  // exactly when it was Active before and either meets a new peer or its peer's TS2s carried the
  // flush flag; it never flushes otherwise; and its TS2s carry the flag exactly when it meets a
  // new peer.
  `ASSERT_PAST(f_flush_q, 1, flush_o)
  `ASSERT_PAST(f_prev_had_peer_q, 1, had_peer_q)
  `ASSERT_PAST(f_prev_new_peer_q, 1, new_peer)
  `ASSERT_PAST(f_prev_peer_flush_q, 1, peer_flush_q)
  logic f_entered_active;
  assign f_entered_active = f_prev_st_q == TInit && st_q == TActive;
  `ASSERT(train_flush_iff_rule, !(f_past_rst_n && f_entered_active) ||
          f_flush_q == (f_prev_had_peer_q && (f_prev_new_peer_q || f_prev_peer_flush_q)))
  `ASSERT(train_flush_only_entering_active, !(f_past_rst_n && f_flush_q) || f_entered_active)
  `ASSERT(train_ts2_flag_is_new_peer, st_q != TTs2 || train_fields_o[32] == new_peer)
  `ASSERT(train_flush_flag_only_in_training, peer_flush_q == 1'b0 || st_q == TTs2 || st_q == TInit)
  `COVER(cov_flush_new_peer, f_entered_active && f_flush_q && f_prev_new_peer_q)
  `COVER(cov_flush_peer_flag_only, f_entered_active && f_flush_q && !f_prev_new_peer_q)
  `COVER(cov_no_flush_same_peer, f_entered_active && f_prev_had_peer_q && !f_flush_q)
  `COVER(cov_no_flush_never_active, f_entered_active && !f_prev_had_peer_q && f_prev_peer_flush_q)
  `COVER(cov_ts2_flag_sent, st_q == TTs2 && new_peer)

  // Every reason a link leaves Active or fails to train, both ways (docs/link-layer.md, "Training
  // and states" and "Monitors in Active"): with no control override at the last edge, the link
  // leaves with reason R exactly when R's rule held there and no rule before it in the table did,
  // and a state whose rules all fail is kept. The first direction bounds what a fault does; the
  // second is where a link would retrain for no reason, costing bandwidth without failing a
  // scoreboard. Conditions are those the state machine saw at the last edge.
  `ASSERT_PAST(f_p_en, 1, enable_i)
  `ASSERT_PAST(f_p_req, 1, retrain_req_i)
  `ASSERT_PAST(f_p_sd, 1, sd_i)
  `ASSERT_PAST(f_p_lock, 1, lock_i)
  `ASSERT_PAST(f_p_hb_out, 1, hb_timer_q >= 32'(HB_TIMEOUT))
  `ASSERT_PAST(f_p_err_over, 1, err_cnt_q > 16'(ERR_THRESHOLD))
  `ASSERT_PAST(f_p_rex, 1, replay_exhausted_i)
  `ASSERT_PAST(f_p_ts1, 1, ts1_i)
  `ASSERT_PAST(f_p_rsn, 4, rsn_q)
  `ASSERT_PAST(f_p_sd_stable, 1, sd_cnt_q >= 16'(DETECT_STABLE))
  `ASSERT_PAST(f_p_detect_out, 1, timer_q >= 32'(DETECT_TIMEOUT))
  `ASSERT_PAST(f_p_lock_out, 1, timer_q >= 32'(LOCK_TIMEOUT))
  `ASSERT_PAST(f_p_ts_out, 1, timer_q >= 32'(TS_TIMEOUT))
  `ASSERT_PAST(f_p_ts1_done, 1, ts_cnt_q >= 16'(TS_COUNT))
  `ASSERT_PAST(f_p_wrong_peer, 1, check_peer_i && (cand_xpu_q != expect_xpu_i || cand_lane_q != expect_lane_i))
  `ASSERT_PAST(f_p_ts2_done, 1, (ts_cnt_q >= 16'(TS_COUNT) || init_seen_q) && timer_q >= 32'(TS_COUNT))
  `ASSERT_PAST(f_p_init_done, 1, (init_seen_q || peer_hb_i) && timer_q >= 32'(TS_COUNT))
  logic f_free, f_lost, f_in_ts, f_from_active, f_stay;
  assign f_free        = f_past_rst_n && f_p_en && !f_p_req;  // no control override at the last edge
  assign f_lost        = !f_p_sd || !f_p_lock;
  assign f_in_ts       = f_prev_st_q == TTs1 || f_prev_st_q == TTs2 || f_prev_st_q == TInit;
  assign f_from_active = f_free && f_prev_st_q == TActive;
  assign f_stay        = st_q == f_prev_st_q;
  function automatic logic f_is(input logic [3:0] st, input logic [3:0] rsn, input logic [3:0] want_st,
                                input logic [3:0] want_rsn);
    f_is = st == want_st && rsn == want_rsn;
  endfunction
  // Active's monitors, in the table's order of precedence.
  `ASSERT(rsn_loss_of_signal_iff, !(f_from_active || (f_free && (f_in_ts || f_prev_st_q == TLock))) ||
          (!f_p_sd == f_is(st_q, rsn_q, TRetrain, link_pkg::RsnLossOfSignal)))
  `ASSERT(rsn_block_lock_lost_iff, !(f_from_active || (f_free && f_in_ts)) ||
          ((f_p_sd && !f_p_lock) == f_is(st_q, rsn_q, TRetrain, link_pkg::RsnBlockLockLost)))
  `ASSERT(rsn_heartbeat_timeout_iff, !f_from_active ||
          ((!f_lost && f_p_hb_out) == f_is(st_q, rsn_q, TRetrain, link_pkg::RsnHeartbeatTimeout)))
  `ASSERT(rsn_error_rate_iff, !f_from_active ||
          ((!f_lost && !f_p_hb_out && f_p_err_over) == f_is(st_q, rsn_q, TRetrain, link_pkg::RsnErrorRate)))
  `ASSERT(rsn_replay_exhausted_iff, !f_from_active ||
          ((!f_lost && !f_p_hb_out && !f_p_err_over && f_p_rex) ==
           f_is(st_q, rsn_q, TRetrain, link_pkg::RsnReplayExhausted)))
  `ASSERT(rsn_peer_retrain_iff, !f_from_active ||
          ((!f_lost && !f_p_hb_out && !f_p_err_over && !f_p_rex && f_p_ts1) ==
           f_is(st_q, rsn_q, TRetrain, link_pkg::RsnPeerRetrain)))
  `ASSERT(active_kept_without_a_reason, !f_from_active ||
          ((!f_lost && !f_p_hb_out && !f_p_err_over && !f_p_rex && !f_p_ts1) == (st_q == TActive)))
  // Control: enable_i low disables from any state; retrain_req_i retrains any state that can.
  `ASSERT(rsn_admin_disabled_iff, !(f_past_rst_n && f_prev_st_q != TDisabled) ||
          (!f_p_en == f_is(st_q, rsn_q, TDisabled, link_pkg::RsnAdminDisabled)))
  `ASSERT(rsn_retrain_request_iff, !(f_past_rst_n && f_p_en && f_prev_st_q != TReset && f_prev_st_q != TRetrain &&
          f_prev_st_q != TDisabled) || (f_p_req == f_is(st_q, rsn_q, TRetrain, link_pkg::RsnRetrainRequest)))
  // Training: each step's timeout, and Ts1's peer check.
  `ASSERT(rsn_detect_timeout_iff, !(f_free && f_prev_st_q == TDetect) ||
          ((!f_p_sd_stable && f_p_detect_out) == (f_stay && rsn_q == link_pkg::RsnDetectTimeout && timer_q == 0)))
  `ASSERT(rsn_detect_timeout_only_on_timeout, !(f_past_rst_n && f_prev_st_q == TDetect && f_stay &&
          f_p_rsn != link_pkg::RsnDetectTimeout && rsn_q == link_pkg::RsnDetectTimeout) || f_p_detect_out)
  `ASSERT(rsn_lock_timeout_iff, !(f_free && f_prev_st_q == TLock) ||
          ((f_p_sd && !f_p_lock && f_p_lock_out) == f_is(st_q, rsn_q, TRetrain, link_pkg::RsnLockTimeout)))
  `ASSERT(rsn_ts1_timeout_iff, !(f_free && f_prev_st_q == TTs1) ||
          ((!f_lost && !f_p_ts1_done && f_p_ts_out) == f_is(st_q, rsn_q, TRetrain, link_pkg::RsnTs1Timeout)))
  `ASSERT(rsn_wrong_peer_iff, !(f_free && f_prev_st_q == TTs1) ||
          ((!f_lost && f_p_ts1_done && f_p_wrong_peer) == f_is(st_q, rsn_q, TDisabled, link_pkg::RsnWrongPeer)))
  `ASSERT(rsn_ts2_timeout_iff, !(f_free && f_prev_st_q == TTs2) ||
          ((!f_lost && !f_p_ts2_done && f_p_ts_out) == f_is(st_q, rsn_q, TRetrain, link_pkg::RsnTs2Timeout)))
  `ASSERT(rsn_credit_timeout_iff, !(f_free && f_prev_st_q == TInit) ||
          ((!f_lost && !f_p_init_done && f_p_ts_out) == f_is(st_q, rsn_q, TRetrain, link_pkg::RsnCreditTimeout)))
  // A training step whose rules all fail is kept (no retrain for no reason while training).
  `ASSERT(training_step_kept_without_a_reason, !(f_free && f_in_ts) ||
          ((!f_lost && !f_p_ts_out && !(f_prev_st_q == TTs1 ? f_p_ts1_done : f_prev_st_q == TTs2 ? f_p_ts2_done :
                                         f_p_init_done)) == f_stay))
  `ASSERT(reason_none_exactly_when_active_entered, !(f_past_rst_n && f_entered_active) || rsn_q == link_pkg::RsnNone)

  // The terms those rules read, checked here where they are computed, against the rules' own
  // words (issue 43): the reasons' properties above take `err_cnt_q > ERR_THRESHOLD`, the
  // heartbeat timer, the step timer and the counts as given, so a counter that is never cleared
  // or a window with a moved edge passed them. Each is stated as its rule defines it, from the
  // values at the last edge; a state change restarts every one (`f_entered`).
  `ASSERT_PAST(f_p_err_timer, 32, err_timer_q)
  `ASSERT_PAST(f_p_err_cnt, 16, err_cnt_q)
  `ASSERT_PAST(f_p_bad, 1, bad_block_i)
  `ASSERT_PAST(f_p_hb_timer, 32, hb_timer_q)
  `ASSERT_PAST(f_p_peer_hb, 1, peer_hb_i)
  `ASSERT_PAST(f_p_timer, 32, timer_q)
  `ASSERT_PAST(f_p_restart, 1, restart)
  `ASSERT_PAST(f_p_sd_cnt, 16, sd_cnt_q)
  `ASSERT_PAST(f_p_ts_cnt, 16, ts_cnt_q)
  `ASSERT_PAST(f_p_ts_any, 1, ts1_i || ts2_i)
  `ASSERT_PAST(f_p_ts_from_cand, 1, ts_xpu_i == cand_xpu_q && ts_lane_i == cand_lane_q)
  `ASSERT_PAST(f_p_peer_ts2, 1, ts2_i && ts_xpu_i == peer_xpu_q && ts_lane_i == peer_lane_q)
  `ASSERT_PAST(f_p_ts_flag, 1, ts2_i && ts_flush_i)
  `ASSERT_PAST(f_p_cand_flush, 1, cand_flush_q)
  `ASSERT_PAST(f_p_init_seen, 1, init_seen_q)
  `ASSERT_PAST(f_p_peer_init, 1, peer_init_i)
  logic f_entered, f_kept;
  assign f_entered = f_past_rst_n && st_q != f_prev_st_q;
  assign f_kept    = f_past_rst_n && st_q == f_prev_st_q;
  // Error rate: windows of exactly ERR_WINDOW cycles, back to back from the cycle the state (Active)
  // was entered; the count is the bad blocks of the current window so far, and restarts in a
  // window's last cycle (a bad block there is not counted). So errors spread over windows, each
  // under the threshold, never add up; errors in a row within one window do.
  `ASSERT(err_window_in_range, err_timer_q < 32'(ERR_WINDOW))
  `ASSERT(err_window_back_to_back, !f_kept ||
          err_timer_q == (f_p_err_timer == 32'(ERR_WINDOW - 1) ? 32'd0 : f_p_err_timer + 32'd1))
  `ASSERT(err_count_is_window_bad_blocks, !f_kept ||
          err_cnt_q == (f_p_err_timer == 32'(ERR_WINDOW - 1) ? 16'd0 : f_p_err_cnt + (f_p_bad ? 16'd1 : 16'd0)))
  `ASSERT(err_window_fresh_on_entry, !f_entered || (err_timer_q == 0 && err_cnt_q == 0))
  // Heartbeat: the cycles since the last valid Ack/Nak/Heartbeat (peer_hb_i) or since the state
  // was entered.
  `ASSERT(hb_timer_counts_silence, !f_kept || hb_timer_q == (f_p_peer_hb ? 32'd0 : f_p_hb_timer + 32'd1))
  `ASSERT(hb_timer_fresh_on_entry, !f_entered || hb_timer_q == 0)
  // Each step's timeout counts its cycles from 0 in the cycle it is entered (Detect's timeout
  // restarts it), saturating.
  `ASSERT(step_timer_counts_from_entry, !f_past_rst_n ||
          timer_q == ((f_entered || f_p_restart) ? 32'd0 : (f_p_timer == 32'hFFFF_FFFF ? f_p_timer : f_p_timer + 32'd1)))
  // Detect: the cycles signal detect has been high without a break (saturating).
  `ASSERT(detect_stable_counts_unbroken_light, !f_past_rst_n ||
          sd_cnt_q == (!f_p_sd ? 16'd0 : (f_p_sd_cnt == 16'hFFFF ? f_p_sd_cnt : f_p_sd_cnt + 16'd1)))
  // Ts1: TS1/TS2 in a row from one identity; another identity restarts the count at 1.
  `ASSERT(ts1_counts_one_identity, !(f_kept && st_q == TTs1) ||
          ts_cnt_q == (!f_p_ts_any ? f_p_ts_cnt : f_p_ts_from_cand ? f_p_ts_cnt + 16'd1 : 16'd1))
  // Ts2: the TS2s from the peer accepted in Ts1, no one else's; CreditInit counts none.
  `ASSERT(ts2_counts_peer_ts2, !(f_kept && st_q == TTs2) || ts_cnt_q == f_p_ts_cnt + (f_p_peer_ts2 ? 16'd1 : 16'd0))
  `ASSERT(credit_init_counts_no_ts, !(f_kept && st_q == TInit) || ts_cnt_q == f_p_ts_cnt)
  `ASSERT(ts_count_fresh_on_entry, !f_entered || (ts_cnt_q == 0 && !init_seen_q))
  // The peer's CreditInit, once seen in a step, stays seen until the step ends.
  `ASSERT(init_seen_since_entry, !f_kept || init_seen_q == (f_p_init_seen || f_p_peer_init))
  // The outputs the rest of the endpoint acts on, as the state table defines them: Active is the
  // state; the laser is off in Reset, in Disabled unless for a wrong peer, and in a Retrain that
  // dropped an Active link or was asked for; the pulses mark the edges they name; the interrupt
  // is set on every state change and kept until cleared.
  `ASSERT_PAST(f_p_enter_active, 1, enter_active_o)
  `ASSERT_PAST(f_p_retrain_o, 1, retrain_o)
  `ASSERT_PAST(f_p_irq, 1, irq_q)
  `ASSERT_PAST(f_p_irq_clear, 1, irq_clear_i)
  `ASSERT(train_active_is_state, active_o == (st_q == TActive))
  `ASSERT(train_laser_rule, laser_o == !(st_q == TReset || (st_q == TDisabled && rsn_q != link_pkg::RsnWrongPeer) ||
          (st_q == TRetrain && quiet_q)))
  `ASSERT(retrain_dark_iff_dropped_active_or_asked, !(f_entered && st_q == TRetrain) ||
          quiet_q == (f_prev_st_q == TActive || f_p_req))
  `ASSERT(train_enter_active_pulse, !f_past_rst_n || f_p_enter_active == f_entered_active)
  `ASSERT(train_retrain_pulse, !f_past_rst_n || f_p_retrain_o == (f_entered && st_q == TRetrain))
  `ASSERT(train_irq_sticky_on_change, !f_past_rst_n || irq_q == ((f_p_irq && !f_p_irq_clear) || f_entered))
  // The flush rule's terms (its property above takes them as given): "was Active before" and
  // "the peer it was last Active with", against shadows set only in Active; "meets a new peer"
  // from them, in Ts2 and CreditInit only.
  logic        f_was_active_q;
  logic [15:0] f_last_xpu_q;
  logic [7:0]  f_last_lane_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      f_was_active_q <= 1'b0;
      f_last_xpu_q   <= '0;
      f_last_lane_q  <= '0;
    end else if (st_q == TActive) begin
      f_was_active_q <= 1'b1;
      f_last_xpu_q   <= peer_xpu_q;
      f_last_lane_q  <= peer_lane_q;
    end
  end
  `ASSERT(train_had_peer_is_was_active, had_peer_q == f_was_active_q)
  `ASSERT(train_last_active_peer, !f_was_active_q || (act_xpu_q == f_last_xpu_q && act_lane_q == f_last_lane_q))
  `ASSERT(train_new_peer_rule, new_peer == ((st_q == TTs2 || st_q == TInit) && f_was_active_q &&
          {peer_xpu_q, peer_lane_q} != {f_last_xpu_q, f_last_lane_q}))
  `ASSERT(train_will_flush_rule, will_flush_o == ((st_q == TTs2 || st_q == TInit) && f_was_active_q &&
          ({peer_xpu_q, peer_lane_q} != {f_last_xpu_q, f_last_lane_q} || peer_flush_q)))
  // reason_o keeps why the link last left Active or failed to train: it changes only with the
  // state, or when Detect's timeout restarts it.
  `ASSERT(reason_kept_between_changes, !f_past_rst_n || rsn_q == f_p_rsn || f_entered || f_p_restart)
  // The flush flag: the candidate's, from its TS2s in Ts1 (restarting with a new candidate); the
  // peer's, from Ts1's candidate and the peer's TS2s through Ts2 and CreditInit.
  `ASSERT(cand_flush_from_candidates_ts2, !(f_kept && st_q == TTs1) ||
          cand_flush_q == (!f_p_ts_any ? f_p_cand_flush : f_p_ts_from_cand ? (f_p_cand_flush || f_p_ts_flag) : f_p_ts_flag))
  `ASSERT(cand_flush_only_in_ts1, !cand_flush_q || st_q == TTs1)
  `ASSERT(peer_flush_taken_from_candidate, !(f_ts1_to_ts2 && f_past_rst_n) || peer_flush_q == f_p_cand_flush)
  `ASSERT(peer_flush_from_peers_ts2, !(f_past_rst_n && (st_q == TTs2 || st_q == TInit) &&
          (f_prev_st_q == TTs2 || f_prev_st_q == TInit)) ||
          peer_flush_q == (f_prev_peer_flush_q || (f_p_peer_ts2 && f_p_ts_flag)))

  `COVER(cov_train_reset, st_q == TReset)
  `COVER(cov_train_detect, st_q == TDetect)
  `COVER(cov_train_block_lock, st_q == TLock)
  `COVER(cov_train_ts1, st_q == TTs1)
  `COVER(cov_train_ts2, st_q == TTs2)
  `COVER(cov_train_credit_init, st_q == TInit)
  `COVER(cov_train_active, st_q == TActive)
  `COVER(cov_train_retrain, st_q == TRetrain)
  `COVER(cov_train_disabled, st_q == TDisabled)
  `COVER(cov_tr_reset_detect, f_prev_st_q == TReset && st_q == TDetect)
  `COVER(cov_tr_detect_lock, f_prev_st_q == TDetect && st_q == TLock)
  `COVER(cov_tr_detect_timeout, st_q == TDetect && rsn_q == link_pkg::RsnDetectTimeout)
  `COVER(cov_tr_lock_ts1, f_prev_st_q == TLock && st_q == TTs1)
  `COVER(cov_tr_lock_retrain, f_prev_st_q == TLock && st_q == TRetrain)
  `COVER(cov_tr_ts1_ts2, f_prev_st_q == TTs1 && st_q == TTs2)
  `COVER(cov_tr_ts1_retrain, f_prev_st_q == TTs1 && st_q == TRetrain)
  `COVER(cov_tr_ts1_wrong_peer, f_prev_st_q == TTs1 && st_q == TDisabled && rsn_q == link_pkg::RsnWrongPeer)
  `COVER(cov_tr_ts2_credit_init, f_prev_st_q == TTs2 && st_q == TInit)
  `COVER(cov_tr_ts2_retrain, f_prev_st_q == TTs2 && st_q == TRetrain)
  `COVER(cov_tr_credit_init_active, f_prev_st_q == TInit && st_q == TActive)
  `COVER(cov_tr_credit_init_retrain, f_prev_st_q == TInit && st_q == TRetrain)
  `COVER(cov_tr_active_retrain, f_prev_st_q == TActive && st_q == TRetrain)
  `COVER(cov_tr_active_disabled, f_prev_st_q == TActive && st_q == TDisabled)
  `COVER(cov_tr_retrain_detect, f_prev_st_q == TRetrain && st_q == TDetect)
  `COVER(cov_tr_disabled_detect, f_prev_st_q == TDisabled && st_q == TDetect)
  `endif

endmodule
