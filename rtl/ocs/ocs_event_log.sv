// Event log of the optical switch controller: a FIFO of DEPTH entries, each a 64-bit cycle
// timestamp and a 32-bit info word (type 3:0, code 7:4, index 15:8, data 31:16; types and fields
// in rtl/ocs/ocs_regs.json, event enum).
//
// Sources: one controller event per cycle (ctl_valid_i) and every change of every link's state or
// reason input, detected here. Each source has a one-entry pending slot stamped with the cycle it
// happened in; one slot is written to the FIFO per cycle, the controller's first, then the lowest
// link. Events that happen within a few cycles of each other can therefore be logged slightly out
// of timestamp order. A link that changes again while its slot still waits loses the new change
// (counted as dropped).
//
// Full policy: drop the newest. A normal event needs two free entries; the last free entry takes
// an Overflow marker instead (code: the dropped event's type, timestamp: when it was dropped), and
// every event after it is dropped until the host pops. dropped_o counts every dropped event
// (the one the marker replaced included), saturating; dropped_clear_i clears it.
`include "mxtb_assert.svh"

module ocs_event_log #(
  parameter int N_LINKS = 20,
  parameter int DEPTH   = 64    // at least 2
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  input  logic [63:0]          time_i,
  input  logic                 ctl_valid_i,
  input  logic [31:0]          ctl_info_i,
  input  logic [N_LINKS*4-1:0] link_state_i,
  input  logic [N_LINKS*4-1:0] link_reason_i,
  input  logic                 pop_i,
  input  logic                 dropped_clear_i,
  output logic [15:0]          count_o,
  output logic [63:0]          head_ts_o,
  output logic [31:0]          head_info_o,
  output logic [31:0]          dropped_o,
  output logic                 link_down_o,   // pulse: some link left Active this cycle
  output logic                 link_up_o      // pulse: some link entered Active this cycle
);

  localparam int PW = (DEPTH > 2) ? $clog2(DEPTH) : 1;
  localparam int LW = (N_LINKS > 1) ? $clog2(N_LINKS) : 1;

  // Link inputs as last seen.
  logic [N_LINKS*4-1:0]  lstate_q, lreason_q;
  // Pending slots: controller, and one per link ({previous state, reason, new state}).
  logic                  cp_valid_q, cp_valid_d;
  logic [31:0]           cp_info_q, cp_info_d;
  logic [63:0]           cp_ts_q, cp_ts_d;
  logic [N_LINKS-1:0]    lp_valid_q, lp_valid_d;
  logic [N_LINKS*12-1:0] lp_info_q, lp_info_d;
  logic [N_LINKS*64-1:0] lp_ts_q, lp_ts_d;
  // FIFO.
  logic [95:0]           mem_q [DEPTH];
  logic [PW-1:0]         rd_ptr_q, rd_ptr_d, wr_ptr_q, wr_ptr_d;
  logic [15:0]           count_q, count_d, eff_count;
  logic [31:0]           dropped_q, dropped_d;
  // Per cycle.
  logic                  do_pop, push_req, wr_en;
  logic [95:0]           push_entry, wr_entry;
  logic [LW-1:0]         sel;
  logic [N_LINKS-1:0]    grant;
  logic [5:0]            link_drops;
  logic                  fifo_drop;
  logic                  down, up;

  // Arbitration: the controller's slot, else the lowest pending link.
  always_comb begin
    sel = '0;
    for (int i = N_LINKS - 1; i >= 0; i--) begin
      if (lp_valid_q[i]) sel = LW'(i);
    end
    grant    = '0;
    push_req = cp_valid_q || (|lp_valid_q);
    if (cp_valid_q) begin
      push_entry = {cp_ts_q, cp_info_q};
    end else begin
      grant[sel] = |lp_valid_q;
      push_entry = {lp_ts_q[64*sel +: 64],
                    8'h0, lp_info_q[12*sel + 8 +: 4], lp_info_q[12*sel + 4 +: 4],  // data: prev, reason
                    8'(sel), lp_info_q[12*sel +: 4],                               // index, code
                    4'(ocs_reg_pkg::EvLinkChange)};
    end
  end

  // Pending slots and link change detection.
  always_comb begin
    link_drops = '0;
    down       = 1'b0;
    up         = 1'b0;
    cp_valid_d = ctl_valid_i;
    cp_info_d  = ctl_valid_i ? ctl_info_i : cp_info_q;
    cp_ts_d    = ctl_valid_i ? time_i : cp_ts_q;
    lp_valid_d = lp_valid_q & ~grant;
    lp_info_d  = lp_info_q;
    lp_ts_d    = lp_ts_q;
    for (int i = 0; i < N_LINKS; i++) begin
      if (link_state_i[4*i +: 4] != lstate_q[4*i +: 4] || link_reason_i[4*i +: 4] != lreason_q[4*i +: 4]) begin
        if (lstate_q[4*i +: 4] == link_pkg::StActive && link_state_i[4*i +: 4] != link_pkg::StActive) down = 1'b1;
        if (lstate_q[4*i +: 4] != link_pkg::StActive && link_state_i[4*i +: 4] == link_pkg::StActive) up = 1'b1;
        if (lp_valid_d[i]) begin
          link_drops = link_drops + 6'd1;
        end else begin
          lp_valid_d[i]          = 1'b1;
          lp_info_d[12*i +: 12]  = {lstate_q[4*i +: 4], link_reason_i[4*i +: 4], link_state_i[4*i +: 4]};
          lp_ts_d[64*i +: 64]    = time_i;
        end
      end
    end
  end

  // FIFO with the overflow marker in the last free entry.
  always_comb begin
    do_pop    = pop_i && count_q != 16'd0;
    eff_count = count_q - (do_pop ? 16'd1 : 16'd0);
    wr_en     = 1'b0;
    fifo_drop = 1'b0;
    wr_entry  = push_entry;
    rd_ptr_d  = rd_ptr_q;
    wr_ptr_d  = wr_ptr_q;
    count_d   = eff_count;
    dropped_d = dropped_clear_i ? 32'd0 : dropped_q;
    if (do_pop) rd_ptr_d = (rd_ptr_q == PW'(DEPTH - 1)) ? '0 : rd_ptr_q + 1'b1;
    if (push_req) begin
      if (eff_count < 16'(DEPTH - 1)) begin
        wr_en = 1'b1;
      end else begin
        fifo_drop = 1'b1;
        if (eff_count == 16'(DEPTH - 1)) begin
          wr_en    = 1'b1;
          wr_entry = {push_entry[95:32], 16'h0, 8'h0, push_entry[3:0], 4'(ocs_reg_pkg::EvOverflow)};
        end
      end
    end
    if (wr_en) begin
      wr_ptr_d = (wr_ptr_q == PW'(DEPTH - 1)) ? '0 : wr_ptr_q + 1'b1;
      count_d  = eff_count + 16'd1;
    end
    if (dropped_d > ~(32'(link_drops) + 32'(fifo_drop))) dropped_d = '1;
    else dropped_d = dropped_d + 32'(link_drops) + 32'(fifo_drop);
  end

  always_ff @(posedge clk_i) begin
    if (wr_en) mem_q[wr_ptr_q] <= wr_entry;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      lstate_q   <= '0;
      lreason_q  <= '0;
      cp_valid_q <= 1'b0;
      cp_info_q  <= '0;
      cp_ts_q    <= '0;
      lp_valid_q <= '0;
      lp_info_q  <= '0;
      lp_ts_q    <= '0;
      rd_ptr_q   <= '0;
      wr_ptr_q   <= '0;
      count_q    <= '0;
      dropped_q  <= '0;
    end else begin
      lstate_q   <= link_state_i;
      lreason_q  <= link_reason_i;
      cp_valid_q <= cp_valid_d;
      cp_info_q  <= cp_info_d;
      cp_ts_q    <= cp_ts_d;
      lp_valid_q <= lp_valid_d;
      lp_info_q  <= lp_info_d;
      lp_ts_q    <= lp_ts_d;
      rd_ptr_q   <= rd_ptr_d;
      wr_ptr_q   <= wr_ptr_d;
      count_q    <= count_d;
      dropped_q  <= dropped_d;
    end
  end

  assign count_o     = count_q;
  assign head_ts_o   = (count_q != 16'd0) ? mem_q[rd_ptr_q][95:32] : 64'h0;
  assign head_info_o = (count_q != 16'd0) ? mem_q[rd_ptr_q][31:0] : 32'h0;
  assign dropped_o   = dropped_q;
  assign link_down_o = down;
  assign link_up_o   = up;

  // ---------------------------------------------------------------- assertions
  `ASSERT_RESET_START
`ifdef MXTB_ASSERT_ON
  // Shadow: the newest entry in the FIFO is an Overflow marker.
  logic f_last_marker_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) f_last_marker_q <= 1'b0;
    else if (wr_en) f_last_marker_q <= wr_entry[3:0] == 4'(ocs_reg_pkg::EvOverflow);
  end
  logic [31:0] f_drop_sum;
  assign f_drop_sum = 32'(link_drops) + 32'(fifo_drop);

  `ASSERT(log_count_bound, count_q <= 16'(DEPTH))
  `ASSERT(log_pointers_agree, 32'(wr_ptr_q) == (32'(rd_ptr_q) + 32'(count_q)) % DEPTH)
  `ASSERT(log_ptr_range, 32'(rd_ptr_q) < DEPTH && 32'(wr_ptr_q) < DEPTH)
  // A full log ends with its Overflow marker, so a dropped event always has one after the last
  // entry that was kept.
  `ASSERT(log_full_ends_with_marker, count_q != 16'(DEPTH) || f_last_marker_q)
  `ASSERT(log_drop_has_marker, !fifo_drop || (wr_en && wr_entry[3:0] == 4'(ocs_reg_pkg::EvOverflow)) ||
          (f_last_marker_q && eff_count == 16'(DEPTH)))
  `ASSERT(log_drop_only_when_full, !fifo_drop || eff_count >= 16'(DEPTH - 1))
  // EVENT_DROPPED counts every drop (saturating) until read.
  `ASSERT(log_dropped_counts, dropped_clear_i ||
          dropped_d == ((dropped_q > ~f_drop_sum) ? 32'hFFFF_FFFF : dropped_q + f_drop_sum))
  `ASSERT(log_pop_only_nonempty, !do_pop || count_q != 16'd0)

  `COVER(cov_ev_link_change, wr_en && wr_entry[3:0] == 4'(ocs_reg_pkg::EvLinkChange))
  `COVER(cov_ev_commit_start, wr_en && wr_entry[3:0] == 4'(ocs_reg_pkg::EvCommitStart))
  `COVER(cov_ev_program_done, wr_en && wr_entry[3:0] == 4'(ocs_reg_pkg::EvProgramDone))
  `COVER(cov_ev_settle_done, wr_en && wr_entry[3:0] == 4'(ocs_reg_pkg::EvSettleDone))
  `COVER(cov_ev_verify_pass, wr_en && wr_entry[3:0] == 4'(ocs_reg_pkg::EvVerifyPass))
  `COVER(cov_ev_verify_fail, wr_en && wr_entry[3:0] == 4'(ocs_reg_pkg::EvVerifyFail))
  `COVER(cov_ev_rollback_done, wr_en && wr_entry[3:0] == 4'(ocs_reg_pkg::EvRollbackDone))
  `COVER(cov_ev_commit_rejected, wr_en && wr_entry[3:0] == 4'(ocs_reg_pkg::EvCommitRejected))
  `COVER(cov_ev_commit_noop, wr_en && wr_entry[3:0] == 4'(ocs_reg_pkg::EvCommitNoop))
  `COVER(cov_ev_watchdog_expired, wr_en && wr_entry[3:0] == 4'(ocs_reg_pkg::EvWatchdogExpired))
  `COVER(cov_ev_safe_done, wr_en && wr_entry[3:0] == 4'(ocs_reg_pkg::EvSafeDone))
  `COVER(cov_ev_safe_cleared, wr_en && wr_entry[3:0] == 4'(ocs_reg_pkg::EvSafeCleared))
  `COVER(cov_ev_overflow, wr_en && wr_entry[3:0] == 4'(ocs_reg_pkg::EvOverflow))
  `COVER(cov_log_drop_after_marker, fifo_drop && !wr_en)
  `COVER(cov_log_link_slot_drop, link_drops != 6'd0)
`endif

endmodule
