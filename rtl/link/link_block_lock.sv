// Block lock: finds the 66b block boundary in the raw lane bit stream by sync-header search
// (IEEE 802.3 clause 49 style). The lane delivers 66 raw bits a cycle, bit 0 first in time, at an
// unknown bit offset. The block is taken from the last two words at offset slip_q; an invalid
// header while searching slips one bit. LOCK_GOOD valid headers in a row give lock; UNLOCK_BAD
// invalid headers within a 64-block window lose it.
`include "mxtb_assert.svh"

module link_block_lock #(
  parameter int LOCK_GOOD  = 64,
  parameter int UNLOCK_BAD = 16
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        sd_i,          // signal detect: light on the lane
  input  logic [65:0] raw_i,
  output logic [65:0] block_o,       // aligned block, {payload, sync}
  output logic        lock_o,
  output logic        hdr_valid_o,   // block_o has a valid sync header
  output logic        bad_hdr_o      // locked and block_o has an invalid sync header
);

  logic [65:0] prev_q;
  logic [6:0]  slip_q, slip_d;
  logic [15:0] good_q, good_d;
  logic [5:0]  win_q, win_d;
  logic [15:0] bad_q, bad_d;
  logic        lock_q, lock_d;
  logic [131:0] window;

  assign window      = {raw_i, prev_q};
  assign block_o     = window[{1'b0, slip_q} +: 66];
  assign hdr_valid_o = block_o[0] ^ block_o[1];
  assign lock_o      = lock_q;
  assign bad_hdr_o   = lock_q && !hdr_valid_o;

  always_comb begin
    slip_d = slip_q;
    good_d = good_q;
    win_d  = win_q;
    bad_d  = bad_q;
    lock_d = lock_q;
    if (!sd_i) begin
      // The window and its bad-header count are read only while locked and restart when lock is
      // gained, so the dark leaves them as they are.
      lock_d = 1'b0;
      good_d = '0;
    end else if (!lock_q) begin
      if (hdr_valid_o) begin
        good_d = good_q + 16'd1;
        if (good_d == 16'(LOCK_GOOD)) begin
          lock_d = 1'b1;
          win_d  = '0;
          bad_d  = '0;
        end
      end else begin
        good_d = '0;
        slip_d = (slip_q == 7'd65) ? 7'd0 : slip_q + 7'd1;
      end
    end else begin
      win_d = win_q + 6'd1;
      if (!hdr_valid_o) bad_d = bad_q + 16'd1;
      if (bad_d == 16'(UNLOCK_BAD)) begin
        lock_d = 1'b0;
        good_d = '0;
        slip_d = (slip_q == 7'd65) ? 7'd0 : slip_q + 7'd1;
      end else if (win_q == 6'd63) begin
        bad_d = '0;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      prev_q <= '0;
      slip_q <= '0;
      good_q <= '0;
      win_q  <= '0;
      bad_q  <= '0;
      lock_q <= 1'b0;
    end else begin
      prev_q <= raw_i;
      slip_q <= slip_d;
      good_q <= good_d;
      win_q  <= win_d;
      bad_q  <= bad_d;
      lock_q <= lock_d;
    end
  end

  // ---------------------------------------------------------------- assertions
  // The lock rule (docs/link-layer.md, "Blocks on the lane") checked where its terms are computed
  // (issue 43), both ways, against shadows written in the rule's words: the valid headers in a
  // row while searching, and the blocks and invalid headers of the current 64-block window since
  // lock. Lock is gained exactly on the LOCK_GOOD-th valid header in a row; it is lost exactly on
  // the UNLOCK_BAD-th invalid header within a window, or at once without light; the slip steps
  // by one exactly on an invalid header while searching and when lock is lost on bad headers.
  `ASSERT_RESET_START
`ifdef MXTB_ASSERT_ON
  logic [15:0] f_run_q, f_bad_q;
  logic [6:0]  f_win_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      f_run_q <= '0;
      f_win_q <= '0;
      f_bad_q <= '0;
    end else begin
      f_run_q <= (!sd_i || lock_q || !hdr_valid_o) ? 16'd0 : f_run_q + 16'd1;
      f_win_q <= (!sd_i || !lock_q || f_win_q == 7'd63) ? 7'd0 : f_win_q + 7'd1;
      f_bad_q <= (!sd_i || !lock_q || f_win_q == 7'd63) ? 16'd0 : f_bad_q + (hdr_valid_o ? 16'd0 : 16'd1);
    end
  end
  `ASSERT_PAST_RESET
  `ASSERT_PAST(f_p_sd, 1, sd_i)
  `ASSERT_PAST(f_p_lock, 1, lock_q)
  `ASSERT_PAST(f_p_valid, 1, hdr_valid_o)
  `ASSERT_PAST(f_p_run, 16, f_run_q)
  `ASSERT_PAST(f_p_bad, 16, f_bad_q)
  `ASSERT_PAST(f_p_slip, 7, slip_q)
  logic f_unlock_bad;  // at the last edge: this window's UNLOCK_BAD-th invalid header
  assign f_unlock_bad = f_p_bad + (f_p_valid ? 16'd0 : 16'd1) == 16'(UNLOCK_BAD);
  `ASSERT(lock_gained_iff_lock_good_in_a_row, !(f_past_rst_n && !f_p_lock) ||
          (lock_q == (f_p_sd && f_p_valid && f_p_run + 16'd1 == 16'(LOCK_GOOD))))
  `ASSERT(lock_lost_iff_unlock_bad_in_window, !(f_past_rst_n && f_p_lock) ||
          (!lock_q == (!f_p_sd || f_unlock_bad)))
  `ASSERT(lock_slip_iff_searching_or_lost, !f_past_rst_n ||
          ((slip_q != f_p_slip) == (f_p_sd && (f_p_lock ? f_unlock_bad : !f_p_valid))))
  `ASSERT(lock_slip_in_word, slip_q <= 7'd65)
  `ASSERT(lock_slip_steps_by_one, !f_past_rst_n || slip_q == f_p_slip ||
          slip_q == (f_p_slip == 7'd65 ? 7'd0 : f_p_slip + 7'd1))
`ifdef FORMAL
  // Induction helpers (link_lock_small): the counters are the shadows while they count.
  `ASSERT(lock_run_is_shadow, lock_q || (good_q == f_run_q && good_q < 16'(LOCK_GOOD)))
  `ASSERT(lock_window_is_shadow, !lock_q || (7'(win_q) == f_win_q && bad_q == f_bad_q && bad_q < 16'(UNLOCK_BAD)))
`endif
  // bad_hdr_o (counted as a bad block) is an invalid header while locked, never while searching.
  `ASSERT(lock_bad_header_only_locked, bad_hdr_o == (lock_q && !hdr_valid_o))
  `COVER(cov_lock_gained, f_past_rst_n && !f_p_lock && lock_q)
  `COVER(cov_lock_lost_bad, f_past_rst_n && f_p_lock && !lock_q && f_p_sd)
`endif

endmodule
