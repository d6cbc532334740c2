// Link training and monitoring state machine (the link's LTSSM):
//   Reset -> Detect -> BlockLock -> Ts1 -> Ts2 -> CreditInit -> Active, plus Retrain and Disabled.
// Every training state has a timeout parameter; Active is watched by loss of signal, block lock,
// the heartbeat timeout, an error-rate window, replay exhaustion and the peer restarting training.
// Retrain turns the laser off so that the peer sees loss of signal and retrains as well.
// States and reason codes come from link_pkg (generated from rtl/link/link_defs.json).
module link_train
  import link_pkg::*;
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
  parameter int ERR_THRESHOLD  = 32      // bad blocks allowed per window
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
  input  logic        peer_init_i,
  input  logic        peer_hb_i,
  input  logic        bad_block_i,
  input  logic [15:0] rx_expect_i,
  input  logic [15:0] rx_credit_i,
  // from the transmitter
  input  logic        replay_exhausted_i,
  // outputs
  output link_state_e state_o,
  output reason_e     reason_o,
  output logic        laser_o,
  output logic        active_o,
  output logic        enter_active_o,
  output logic        retrain_o,       // pulse: entering Retrain
  output logic [39:0] train_fields_o,  // control block to send while not Active
  output logic [15:0] peer_xpu_o,
  output logic [7:0]  peer_lane_o,
  output logic        irq_o,           // sticky: set on every state change
  input  logic        irq_clear_i
);

  link_state_e st_q, st_d;
  reason_e     rsn_q, rsn_d;
  logic [31:0] timer_q, timer_d;
  logic [15:0] sd_cnt_q, sd_cnt_d, ts_cnt_q, ts_cnt_d;
  logic [15:0] cand_xpu_q, cand_xpu_d, peer_xpu_q, peer_xpu_d;
  logic [7:0]  cand_lane_q, cand_lane_d, peer_lane_q, peer_lane_d;
  logic        init_seen_q, init_seen_d, enable_q, irq_q;
  logic [31:0] hb_timer_q, hb_timer_d, err_timer_q, err_timer_d;
  logic [15:0] err_cnt_q, err_cnt_d;
  logic        restart;  // re-enter the current state (Detect timing out) with a fresh timer

  assign state_o        = st_q;
  assign reason_o       = rsn_q;
  assign laser_o        = !(st_q == StReset || st_q == StRetrain || st_q == StDisabled);
  assign active_o       = st_q == StActive;
  assign enter_active_o = st_d == StActive && st_q != StActive;
  assign retrain_o      = st_d == StRetrain && st_q != StRetrain;
  assign peer_xpu_o     = peer_xpu_q;
  assign peer_lane_o    = peer_lane_q;
  assign irq_o          = irq_q;

  always_comb begin
    unique case (st_q)
      StTs1:        train_fields_o = {8'h0, lane_id_i, xpu_id_i, CtlTs1};
      StTs2:        train_fields_o = {8'h0, lane_id_i, xpu_id_i, CtlTs2};
      StCreditInit: train_fields_o = {rx_credit_i, rx_expect_i, CtlCreditInit};
      default:      train_fields_o = {32'h0, CtlIdle};
    endcase
  end

  always_comb begin
    logic link_lost;
    reason_e lost_reason;
    st_d        = st_q;
    rsn_d       = rsn_q;
    restart     = 1'b0;
    cand_xpu_d  = cand_xpu_q;
    cand_lane_d = cand_lane_q;
    peer_xpu_d  = peer_xpu_q;
    peer_lane_d = peer_lane_q;
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
    if (!sd_i) lost_reason = RsnLossOfSignal;
    else lost_reason = RsnBlockLockLost;

    if (!enable_i) begin
      if (st_q != StDisabled) begin
        st_d  = StDisabled;
        rsn_d = RsnAdminDisabled;
      end
    end else if (st_q == StDisabled) begin
      if (!enable_q || retrain_req_i) st_d = StDetect;
    end else if (retrain_req_i && st_q != StReset && st_q != StRetrain) begin
      st_d  = StRetrain;
      rsn_d = RsnRetrainRequest;
    end else begin
      unique case (st_q)
        StReset: if (timer_q >= 32'(RESET_CYCLES)) st_d = StDetect;
        StDetect: begin
          if (sd_cnt_q >= 16'(DETECT_STABLE)) begin
            st_d = StBlockLock;
          end else if (timer_q >= 32'(DETECT_TIMEOUT)) begin
            rsn_d   = RsnDetectTimeout;
            restart = 1'b1;
          end
        end
        StBlockLock: begin
          if (!sd_i) begin
            st_d  = StRetrain;
            rsn_d = RsnLossOfSignal;
          end else if (lock_i) begin
            st_d = StTs1;
          end else if (timer_q >= 32'(LOCK_TIMEOUT)) begin
            st_d  = StRetrain;
            rsn_d = RsnLockTimeout;
          end
        end
        StTs1: begin
          if (ts1_i || ts2_i) begin
            if (ts_xpu_i == cand_xpu_q && ts_lane_i == cand_lane_q) begin
              ts_cnt_d = ts_cnt_q + 16'd1;
            end else begin
              cand_xpu_d  = ts_xpu_i;
              cand_lane_d = ts_lane_i;
              ts_cnt_d    = 16'd1;
            end
          end
          if (link_lost) begin
            st_d  = StRetrain;
            rsn_d = lost_reason;
          end else if (ts_cnt_q >= 16'(TS_COUNT)) begin
            if (check_peer_i && (cand_xpu_q != expect_xpu_i || cand_lane_q != expect_lane_i)) begin
              st_d  = StDisabled;  // never Active with the wrong peer
              rsn_d = RsnWrongPeer;
            end else begin
              st_d        = StTs2;
              peer_xpu_d  = cand_xpu_q;
              peer_lane_d = cand_lane_q;
            end
          end else if (timer_q >= 32'(TS_TIMEOUT)) begin
            st_d  = StRetrain;
            rsn_d = RsnTs1Timeout;
          end
        end
        StTs2: begin
          if (ts2_i && ts_xpu_i == peer_xpu_q && ts_lane_i == peer_lane_q) ts_cnt_d = ts_cnt_q + 16'd1;
          if (link_lost) begin
            st_d  = StRetrain;
            rsn_d = lost_reason;
          end else if ((ts_cnt_q >= 16'(TS_COUNT) || init_seen_q) && timer_q >= 32'(TS_COUNT)) begin
            st_d = StCreditInit;
          end else if (timer_q >= 32'(TS_TIMEOUT)) begin
            st_d  = StRetrain;
            rsn_d = RsnTs2Timeout;
          end
        end
        StCreditInit: begin
          if (link_lost) begin
            st_d  = StRetrain;
            rsn_d = lost_reason;
          end else if ((init_seen_q || peer_hb_i) && timer_q >= 32'(TS_COUNT)) begin
            st_d  = StActive;
            rsn_d = RsnNone;
          end else if (timer_q >= 32'(TS_TIMEOUT)) begin
            st_d  = StRetrain;
            rsn_d = RsnCreditTimeout;
          end
        end
        StActive: begin
          if (link_lost) begin
            st_d  = StRetrain;
            rsn_d = lost_reason;
          end else if (hb_timer_q >= 32'(HB_TIMEOUT)) begin
            st_d  = StRetrain;
            rsn_d = RsnHeartbeatTimeout;
          end else if (err_cnt_q > 16'(ERR_THRESHOLD)) begin
            st_d  = StRetrain;
            rsn_d = RsnErrorRate;
          end else if (replay_exhausted_i) begin
            st_d  = StRetrain;
            rsn_d = RsnReplayExhausted;
          end else if (ts1_i) begin
            st_d  = StRetrain;
            rsn_d = RsnPeerRetrain;
          end
        end
        StRetrain: if (timer_q >= 32'(RETRAIN_HOLD)) st_d = StDetect;
        default: st_d = StReset;
      endcase
    end

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
      st_q        <= StReset;
      rsn_q       <= RsnNone;
      timer_q     <= '0;
      sd_cnt_q    <= '0;
      ts_cnt_q    <= '0;
      cand_xpu_q  <= '0;
      cand_lane_q <= '0;
      peer_xpu_q  <= '0;
      peer_lane_q <= '0;
      init_seen_q <= 1'b0;
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
      init_seen_q <= init_seen_d;
      enable_q    <= enable_i;
      irq_q       <= (irq_q && !irq_clear_i) || st_d != st_q;
      hb_timer_q  <= hb_timer_d;
      err_timer_q <= err_timer_d;
      err_cnt_q   <= err_cnt_d;
    end
  end

endmodule
