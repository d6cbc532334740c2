// Commit sequencer of the optical switch controller: the staged and active tables (port map and
// DAC codes) and the state machine that validates, programs, settles, verifies, rolls back and
// drives the safe state. States, error codes and event types come from ocs_reg_pkg (generated from
// rtl/ocs/ocs_regs.json); they are held in plain vectors (Icarus 11 crashes on package enum
// variables).
//
//   Idle     --COMMIT(gen == active)-->  Idle (CommitNoop, done)
//   Idle     --COMMIT(gen)----------->   Validate (CommitStart)
//   Validate  one port-map entry and one DAC code per cycle, max(N_PORTS, N_ELEMS) cycles
//            --error--> Idle (CommitRejected, fail)   --ok--> Program
//   Program   one element per cycle; an element whose staged code differs from the active one
//             waits for the DAC update slot and is written; N_ELEMS cycles + waits --> Settle
//   Settle    SETTLE_CYCLES + 1 cycles --> Verify (SettleDone)
//   Verify    for each valid port-map entry: photodiode request on its target, wait for the answer
//             (PD_TIMEOUT), require >= VERIFY_MIN_DBM; all pass --> Idle, staged becomes active
//             (VerifyPass, done); a failure --> Rollback (VerifyFail)
//   Rollback  re-writes the active code of every element that differs, then settles
//             --> Idle (RollbackDone, fail)
//   any      --watchdog--> Safe (WatchdogExpired): writes SAFE_CODE to every element, then the
//             active tables become {all SAFE_CODE, no map entries, generation 0} (SafeDone);
//             SAFE_CLEAR --> Idle (SafeCleared)
`include "mxtb_assert.svh"

module ocs_sequencer #(
  parameter int N_PORTS         = 32,   // at most 64
  parameter int N_ELEMS         = 144,  // at most 256
  parameter int DAC_BITS        = 12,   // at most 16
  parameter int SAFE_CODE_RESET = 0     // the tables' codes after reset
) (
  input  logic                         clk_i,
  input  logic                         rst_ni,
  // configuration registers
  input  logic [DAC_BITS-1:0]          dac_min_i,
  input  logic [DAC_BITS-1:0]          dac_max_i,
  input  logic [DAC_BITS-1:0]          safe_code_i,
  input  logic [15:0]                  update_cycles_i,
  input  logic [31:0]                  settle_cycles_i,
  input  logic [15:0]                  verify_min_i,   // signed 0.01 dBm
  input  logic [15:0]                  pd_timeout_i,
  // commands
  input  logic                         commit_i,       // only while idle_o
  input  logic [15:0]                  commit_gen_i,
  input  logic                         safe_enter_i,
  input  logic                         safe_clear_i,
  // staged table writes (only while !busy_o)
  input  logic                         map_we_i,
  input  logic [5:0]                   map_idx_i,
  input  logic [6:0]                   map_wdata_i,    // {valid, target[5:0]}
  input  logic                         dac_we_i,
  input  logic [7:0]                   dac_idx_i,
  input  logic [DAC_BITS-1:0]          dac_wdata_i,
  // tables, for register reads
  output logic [N_PORTS*7-1:0]         map_stg_o,
  output logic [N_PORTS*7-1:0]         map_act_o,
  output logic [N_ELEMS*DAC_BITS-1:0]  dac_stg_o,
  output logic [N_ELEMS*DAC_BITS-1:0]  dac_act_o,
  // status
  output logic [2:0]                   state_o,
  output logic                         idle_o,
  output logic                         busy_o,
  output logic                         safe_o,
  output logic [15:0]                  active_gen_o,
  output logic [3:0]                   err_code_o,
  output logic [7:0]                   err_index_o,
  output logic [15:0]                  err_gen_o,
  output logic [15:0]                  wr_prog_o,
  output logic [15:0]                  wr_rb_o,
  output logic [31:0]                  wr_total_o,
  output logic [7:0]                   vfail_port_o,
  output logic [15:0]                  vfail_dbm_o,
  output logic                         done_o,   // pulse: commit passed or was a no-op
  output logic                         fail_o,   // pulse: commit rejected, or rolled back
  output logic                         ev_valid_o,
  output logic [31:0]                  ev_info_o,
  // DAC port to the mesh
  output logic                         dac_valid_o,
  output logic [7:0]                   dac_elem_o,
  output logic [DAC_BITS-1:0]          dac_code_o,
  // monitor photodiodes
  output logic                         pd_req_o,
  output logic [5:0]                   pd_port_o,
  input  logic                         pd_valid_i,
  input  logic [15:0]                  pd_dbm_i
);

  localparam int MAXN = (N_PORTS > N_ELEMS) ? N_PORTS : N_ELEMS;

  // Event info word: type 3:0, code 7:4, index 15:8, data 31:16.
  function automatic logic [31:0] ev(input logic [3:0] t, input logic [3:0] code,
                                     input logic [7:0] index, input logic [15:0] data);
    ev = {data, index, code, t};
  endfunction

  function automatic logic [7:0] sat8(input logic [15:0] v);
    sat8 = (v > 16'd255) ? 8'd255 : v[7:0];
  endfunction

  logic [N_PORTS*7-1:0]        map_stg_q, map_act_q;
  logic [N_ELEMS*DAC_BITS-1:0] dac_stg_q, dac_act_q;

  logic [2:0]          st_q, st_d;
  logic                phase_q, phase_d;     // Rollback/Safe: 0 writing, 1 settling/holding
  logic [8:0]          idx_q, idx_d;
  logic [31:0]         timer_q, timer_d;
  logic [15:0]         slot_q, slot_d;
  logic [15:0]         gen_q, gen_d, act_gen_q, act_gen_d;
  logic [63:0]         seen_q, seen_d;
  logic                pd_wait_q, pd_wait_d;
  logic [15:0]         pd_timer_q, pd_timer_d;
  logic [3:0]          err_code_q, err_code_d;
  logic [7:0]          err_index_q, err_index_d;
  logic [15:0]         err_gen_q, err_gen_d;
  logic [15:0]         cnt_prog_q, cnt_prog_d, cnt_rb_q, cnt_rb_d;
  logic [31:0]         total_q, total_d;
  logic [7:0]          vfail_port_q, vfail_port_d;
  logic [15:0]         vfail_dbm_q, vfail_dbm_d;
  logic                dac_valid_q, dac_valid_d;
  logic [7:0]          dac_elem_q;
  logic [DAC_BITS-1:0] dac_code_q, dac_code_d;
  logic                pd_req_q, pd_req_d;
  logic [5:0]          pd_port_q;
  logic                ev_valid, done, fail, apply_pass, apply_safe;
  logic [31:0]         ev_info;
  // Per cycle: the entry and element at idx_q.
  logic [8:0]          ei, pi;
  logic                cur_valid;
  logic [5:0]          cur_target;
  logic [DAC_BITS-1:0] cur_stg, cur_act;
  logic                rej, vfail;
  logic [3:0]          rej_code, vfail_code;
  logic [15:0]         slot_load;

  always_comb begin
    ei         = (idx_q < 9'(N_ELEMS)) ? idx_q : 9'd0;
    pi         = (idx_q < 9'(N_PORTS)) ? idx_q : 9'd0;
    cur_valid  = map_stg_q[7*32'(pi) + 6];
    cur_target = map_stg_q[7*32'(pi) +: 6];
    cur_stg    = dac_stg_q[DAC_BITS*32'(ei) +: DAC_BITS];
    cur_act    = dac_act_q[DAC_BITS*32'(ei) +: DAC_BITS];
    slot_load  = (update_cycles_i == 16'd0) ? 16'd0 : update_cycles_i - 16'd1;
  end

  always_comb begin
    st_d         = st_q;
    phase_d      = phase_q;
    idx_d        = idx_q;
    timer_d      = timer_q;
    slot_d       = (slot_q != 16'd0) ? slot_q - 16'd1 : 16'd0;
    gen_d        = gen_q;
    act_gen_d    = act_gen_q;
    seen_d       = seen_q;
    pd_wait_d    = pd_wait_q;
    pd_timer_d   = pd_timer_q;
    err_code_d   = err_code_q;
    err_index_d  = err_index_q;
    err_gen_d    = err_gen_q;
    cnt_prog_d   = cnt_prog_q;
    cnt_rb_d     = cnt_rb_q;
    total_d      = total_q;
    vfail_port_d = vfail_port_q;
    vfail_dbm_d  = vfail_dbm_q;
    dac_valid_d  = 1'b0;
    dac_code_d   = cur_stg;
    pd_req_d     = 1'b0;
    ev_valid     = 1'b0;
    ev_info      = '0;
    done         = 1'b0;
    fail         = 1'b0;
    apply_pass   = 1'b0;
    apply_safe   = 1'b0;
    rej          = 1'b0;
    rej_code     = '0;
    vfail        = 1'b0;
    vfail_code   = '0;

    if (safe_enter_i && st_q != ocs_reg_pkg::StSafe) begin
      st_d        = ocs_reg_pkg::StSafe;
      phase_d     = 1'b0;
      idx_d       = '0;
      pd_wait_d   = 1'b0;
      err_code_d  = ocs_reg_pkg::ErrWatchdog;
      err_index_d = '0;
      err_gen_d   = (st_q == ocs_reg_pkg::StIdle) ? 16'd0 : gen_q;
      ev_valid    = 1'b1;
      ev_info     = ev(ocs_reg_pkg::EvWatchdogExpired, {1'b0, st_q}, 8'd0, 16'd0);
    end else begin
      unique case (st_q)
        ocs_reg_pkg::StIdle: begin
          if (commit_i) begin
            ev_valid = 1'b1;
            if (commit_gen_i == act_gen_q) begin
              ev_info = ev(ocs_reg_pkg::EvCommitNoop, 4'd0, 8'd0, commit_gen_i);
              done    = 1'b1;
            end else begin
              ev_info = ev(ocs_reg_pkg::EvCommitStart, 4'd0, 8'd0, commit_gen_i);
              st_d    = ocs_reg_pkg::StValidate;
              idx_d   = '0;
              seen_d  = '0;
              gen_d   = commit_gen_i;
            end
          end
        end
        ocs_reg_pkg::StValidate: begin
          if (idx_q < 9'(N_PORTS) && cur_valid) begin
            if ({1'b0, cur_target} >= 7'(N_PORTS)) begin
              rej      = 1'b1;
              rej_code = ocs_reg_pkg::ErrTargetRange;
            end else if (seen_q[cur_target]) begin
              rej      = 1'b1;
              rej_code = ocs_reg_pkg::ErrDupTarget;
            end else begin
              seen_d[cur_target] = 1'b1;
            end
          end
          if (!rej && idx_q < 9'(N_ELEMS) && (cur_stg < dac_min_i || cur_stg > dac_max_i)) begin
            rej      = 1'b1;
            rej_code = ocs_reg_pkg::ErrDacRange;
          end
          if (rej) begin
            st_d        = ocs_reg_pkg::StIdle;
            err_code_d  = rej_code;
            err_index_d = idx_q[7:0];
            err_gen_d   = gen_q;
            ev_valid    = 1'b1;
            ev_info     = ev(ocs_reg_pkg::EvCommitRejected, rej_code, idx_q[7:0], gen_q);
            fail        = 1'b1;
          end else if (idx_q == 9'(MAXN - 1)) begin
            st_d       = ocs_reg_pkg::StProgram;
            idx_d      = '0;
            cnt_prog_d = '0;
            cnt_rb_d   = '0;
          end else begin
            idx_d = idx_q + 9'd1;
          end
        end
        ocs_reg_pkg::StProgram: begin
          if (idx_q == 9'(N_ELEMS)) begin
            st_d     = ocs_reg_pkg::StSettle;
            timer_d  = '0;
            ev_valid = 1'b1;
            ev_info  = ev(ocs_reg_pkg::EvProgramDone, 4'd0, sat8(cnt_prog_q), gen_q);
          end else if (cur_stg != cur_act) begin
            if (slot_q == 16'd0) begin
              dac_valid_d = 1'b1;
              slot_d      = slot_load;
              cnt_prog_d  = cnt_prog_q + 16'd1;
              total_d     = total_q + 32'd1;
              idx_d       = idx_q + 9'd1;
            end
          end else begin
            idx_d = idx_q + 9'd1;
          end
        end
        ocs_reg_pkg::StSettle: begin
          if (timer_q >= settle_cycles_i) begin
            st_d      = ocs_reg_pkg::StVerify;
            idx_d     = '0;
            pd_wait_d = 1'b0;
            ev_valid  = 1'b1;
            ev_info   = ev(ocs_reg_pkg::EvSettleDone, 4'd0, 8'd0, gen_q);
          end else begin
            timer_d = timer_q + 32'd1;
          end
        end
        ocs_reg_pkg::StVerify: begin
          if (idx_q == 9'(N_PORTS)) begin
            st_d       = ocs_reg_pkg::StIdle;
            apply_pass = 1'b1;
            act_gen_d  = gen_q;
            err_code_d = ocs_reg_pkg::ErrNone;
            ev_valid   = 1'b1;
            ev_info    = ev(ocs_reg_pkg::EvVerifyPass, 4'd0, 8'd0, gen_q);
            done       = 1'b1;
          end else if (!cur_valid) begin
            idx_d = idx_q + 9'd1;
          end else if (!pd_wait_q) begin
            pd_req_d   = 1'b1;
            pd_wait_d  = 1'b1;
            pd_timer_d = '0;
          end else if (pd_valid_i) begin
            if ($signed(pd_dbm_i) >= $signed(verify_min_i)) begin
              idx_d     = idx_q + 9'd1;
              pd_wait_d = 1'b0;
            end else begin
              vfail       = 1'b1;
              vfail_code  = ocs_reg_pkg::ErrVerifyLow;
              vfail_dbm_d = pd_dbm_i;
            end
          end else if (pd_timer_q >= pd_timeout_i) begin
            vfail       = 1'b1;
            vfail_code  = ocs_reg_pkg::ErrPdTimeout;
            vfail_dbm_d = '0;
          end else begin
            pd_timer_d = pd_timer_q + 16'd1;
          end
          if (vfail) begin
            st_d         = ocs_reg_pkg::StRollback;
            phase_d      = 1'b0;
            idx_d        = '0;
            pd_wait_d    = 1'b0;
            err_code_d   = vfail_code;
            err_index_d  = idx_q[7:0];
            err_gen_d    = gen_q;
            vfail_port_d = {2'b0, cur_target};
            ev_valid     = 1'b1;
            ev_info      = ev(ocs_reg_pkg::EvVerifyFail, vfail_code, {2'b0, cur_target}, gen_q);
          end
        end
        ocs_reg_pkg::StRollback: begin
          if (!phase_q) begin
            if (idx_q == 9'(N_ELEMS)) begin
              phase_d = 1'b1;
              timer_d = '0;
            end else if (cur_stg != cur_act) begin
              if (slot_q == 16'd0) begin
                dac_valid_d = 1'b1;
                dac_code_d  = cur_act;
                slot_d      = slot_load;
                cnt_rb_d    = cnt_rb_q + 16'd1;
                total_d     = total_q + 32'd1;
                idx_d       = idx_q + 9'd1;
              end
            end else begin
              idx_d = idx_q + 9'd1;
            end
          end else if (timer_q >= settle_cycles_i) begin
            st_d     = ocs_reg_pkg::StIdle;
            ev_valid = 1'b1;
            ev_info  = ev(ocs_reg_pkg::EvRollbackDone, 4'd0, sat8(cnt_rb_q), gen_q);
            fail     = 1'b1;
          end else begin
            timer_d = timer_q + 32'd1;
          end
        end
        ocs_reg_pkg::StSafe: begin
          if (!phase_q) begin
            if (idx_q == 9'(N_ELEMS)) begin
              phase_d    = 1'b1;
              apply_safe = 1'b1;
              act_gen_d  = '0;
              ev_valid   = 1'b1;
              ev_info    = ev(ocs_reg_pkg::EvSafeDone, 4'd0, sat8(16'(N_ELEMS)), 16'd0);
            end else if (slot_q == 16'd0) begin
              dac_valid_d = 1'b1;
              dac_code_d  = safe_code_i;
              slot_d      = slot_load;
              total_d     = total_q + 32'd1;
              idx_d       = idx_q + 9'd1;
            end
          end else if (safe_clear_i) begin
            st_d     = ocs_reg_pkg::StIdle;
            ev_valid = 1'b1;
            ev_info  = ev(ocs_reg_pkg::EvSafeCleared, 4'd0, 8'd0, 16'd0);
          end
        end
        default: st_d = ocs_reg_pkg::StIdle;
      endcase
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      map_stg_q    <= '0;
      map_act_q    <= '0;
      dac_stg_q    <= {N_ELEMS{DAC_BITS'(SAFE_CODE_RESET)}};
      dac_act_q    <= {N_ELEMS{DAC_BITS'(SAFE_CODE_RESET)}};
      st_q         <= ocs_reg_pkg::StIdle;
      phase_q      <= 1'b0;
      idx_q        <= '0;
      timer_q      <= '0;
      slot_q       <= '0;
      gen_q        <= '0;
      act_gen_q    <= '0;
      seen_q       <= '0;
      pd_wait_q    <= 1'b0;
      pd_timer_q   <= '0;
      err_code_q   <= '0;
      err_index_q  <= '0;
      err_gen_q    <= '0;
      cnt_prog_q   <= '0;
      cnt_rb_q     <= '0;
      total_q      <= '0;
      vfail_port_q <= '0;
      vfail_dbm_q  <= '0;
      dac_valid_q  <= 1'b0;
      dac_elem_q   <= '0;
      dac_code_q   <= '0;
      pd_req_q     <= 1'b0;
      pd_port_q    <= '0;
    end else begin
      for (int p = 0; p < N_PORTS; p++) begin
        if (apply_safe) map_act_q[7*p +: 7] <= 7'd0;
        else if (apply_pass) map_act_q[7*p +: 7] <= map_stg_q[7*p +: 7];
        if (map_we_i && map_idx_i == 6'(p)) map_stg_q[7*p +: 7] <= map_wdata_i;
      end
      for (int e = 0; e < N_ELEMS; e++) begin
        if (apply_safe) dac_act_q[DAC_BITS*e +: DAC_BITS] <= safe_code_i;
        else if (apply_pass) dac_act_q[DAC_BITS*e +: DAC_BITS] <= dac_stg_q[DAC_BITS*e +: DAC_BITS];
        if (dac_we_i && dac_idx_i == 8'(e)) dac_stg_q[DAC_BITS*e +: DAC_BITS] <= dac_wdata_i;
      end
      st_q         <= st_d;
      phase_q      <= phase_d;
      idx_q        <= idx_d;
      timer_q      <= timer_d;
      slot_q       <= slot_d;
      gen_q        <= gen_d;
      act_gen_q    <= act_gen_d;
      seen_q       <= seen_d;
      pd_wait_q    <= pd_wait_d;
      pd_timer_q   <= pd_timer_d;
      err_code_q   <= err_code_d;
      err_index_q  <= err_index_d;
      err_gen_q    <= err_gen_d;
      cnt_prog_q   <= cnt_prog_d;
      cnt_rb_q     <= cnt_rb_d;
      total_q      <= total_d;
      vfail_port_q <= vfail_port_d;
      vfail_dbm_q  <= vfail_dbm_d;
      dac_valid_q  <= dac_valid_d;
      dac_elem_q   <= ei[7:0];
      dac_code_q   <= dac_code_d;
      pd_req_q     <= pd_req_d;
      if (pd_req_d) pd_port_q <= cur_target;
    end
  end

  assign map_stg_o    = map_stg_q;
  assign map_act_o    = map_act_q;
  assign dac_stg_o    = dac_stg_q;
  assign dac_act_o    = dac_act_q;
  assign state_o      = st_q;
  assign idle_o       = st_q == ocs_reg_pkg::StIdle;
  assign busy_o       = !(st_q == ocs_reg_pkg::StIdle || (st_q == ocs_reg_pkg::StSafe && phase_q));
  assign safe_o       = st_q == ocs_reg_pkg::StSafe;
  assign active_gen_o = act_gen_q;
  assign err_code_o   = err_code_q;
  assign err_index_o  = err_index_q;
  assign err_gen_o    = err_gen_q;
  assign wr_prog_o    = cnt_prog_q;
  assign wr_rb_o      = cnt_rb_q;
  assign wr_total_o   = total_q;
  assign vfail_port_o = vfail_port_q;
  assign vfail_dbm_o  = vfail_dbm_q;
  assign done_o       = done;
  assign fail_o       = fail;
  assign ev_valid_o   = ev_valid;
  assign ev_info_o    = ev_info;
  assign dac_valid_o  = dac_valid_q;
  assign dac_elem_o   = dac_elem_q;
  assign dac_code_o   = dac_code_q;
  assign pd_req_o     = pd_req_q;
  assign pd_port_o    = pd_port_q;

  // ---------------------------------------------------------------- assertions
  `ASSERT_RESET_START
  // docs/verification.md lists each property, its proof status and where the shadow state comes
  // from. The shadow models below exist only where assertions are compiled.
`ifdef MXTB_ASSERT_ON
  localparam logic [2:0] SIdle = ocs_reg_pkg::StIdle, SVal = ocs_reg_pkg::StValidate,
                         SProg = ocs_reg_pkg::StProgram, SSet = ocs_reg_pkg::StSettle,
                         SVer = ocs_reg_pkg::StVerify, SRb = ocs_reg_pkg::StRollback,
                         SSafe = ocs_reg_pkg::StSafe;

  // Valid entries of map's first n ports have in-range, distinct targets.
  function automatic logic f_perm(input logic [N_PORTS*7-1:0] m, input int n);
    logic [63:0] seen;
    f_perm = 1'b1;
    seen   = '0;
    for (int p = 0; p < N_PORTS; p++) begin
      if (p < n && m[7*p + 6]) begin
        if ({1'b0, m[7*p +: 6]} >= 7'(N_PORTS) || seen[m[7*p +: 6]]) f_perm = 1'b0;
        seen[m[7*p +: 6]] = 1'b1;
      end
    end
  endfunction
  // The targets of map's first n ports' valid entries.
  function automatic logic [63:0] f_seen(input logic [N_PORTS*7-1:0] m, input int n);
    f_seen = '0;
    for (int p = 0; p < N_PORTS; p++) begin
      if (p < n && m[7*p + 6]) f_seen[m[7*p +: 6]] = 1'b1;
    end
  endfunction
  // The first n codes lie in [lo, hi].
  function automatic logic f_in_range(input logic [N_ELEMS*DAC_BITS-1:0] c, input int n,
                                      input logic [DAC_BITS-1:0] lo, input logic [DAC_BITS-1:0] hi);
    f_in_range = 1'b1;
    for (int e = 0; e < N_ELEMS; e++) begin
      if (e < n && (c[DAC_BITS*e +: DAC_BITS] < lo || c[DAC_BITS*e +: DAC_BITS] > hi)) f_in_range = 1'b0;
    end
  endfunction
  // Element-wise: the mesh equals a for e < n and b for e >= n.
  function automatic logic f_split(input logic [N_ELEMS*DAC_BITS-1:0] mesh,
                                   input logic [N_ELEMS*DAC_BITS-1:0] a,
                                   input logic [N_ELEMS*DAC_BITS-1:0] b, input int n);
    f_split = 1'b1;
    for (int e = 0; e < N_ELEMS; e++) begin
      if (mesh[DAC_BITS*e +: DAC_BITS] != ((e < n) ? a[DAC_BITS*e +: DAC_BITS] : b[DAC_BITS*e +: DAC_BITS]))
        f_split = 1'b0;
    end
  endfunction

  // Shadow of the mesh: the code each element holds, from the writes this block decides.
  logic [N_ELEMS*DAC_BITS-1:0] f_mesh_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) f_mesh_q <= {N_ELEMS{DAC_BITS'(SAFE_CODE_RESET)}};
    else if (dac_valid_d) f_mesh_q[DAC_BITS*32'(ei) +: DAC_BITS] <= dac_code_d;
  end
  // SAFE_CODE in every element: what the sweep leaves.
  logic [N_ELEMS*DAC_BITS-1:0] f_safe_all;
  assign f_safe_all = {N_ELEMS{safe_code_i}};

  // Environment: the controller's register block answers SLVERR to staged-table writes while
  // busy and to COMMIT unless Idle (asserted there); the host keeps DAC_MIN/DAC_MAX still while a
  // commit validates and programs, and SAFE_CODE while the sweep writes it: the register block
  // allows those writes, and a range or safe code changed halfway would leave elements checked
  // or written against two values (docs/verification.md).
  `ASSUME(env_no_staged_write_busy, !((map_we_i || dac_we_i) && busy_o))
  `ASSUME(env_commit_only_idle, !(commit_i && !idle_o))
  `ASSERT_PAST_RESET
  `ASSERT_PAST(f_past_range, 2*DAC_BITS, {dac_min_i, dac_max_i})
  `ASSERT_PAST(f_past_safe_code, DAC_BITS, safe_code_i)
  `ASSERT_PAST(f_past_applied, 1, apply_pass || apply_safe)
  `ASSERT_PAST(f_past_safe_enter, 1, safe_enter_i && st_q != SSafe)
  `ASSUME(env_range_still, !((st_q == SVal || st_q == SProg)) || !f_past_rst_n || f_past_range == {dac_min_i, dac_max_i})
  `ASSUME(env_safe_code_still, !(st_q == SSafe && !phase_q) || !f_past_rst_n || f_past_safe_code == safe_code_i)

  // Wide predicates as single bits: Verilator 5.006 miscompiles the sampled copies of wide
  // vectors that a concurrent assertion reads directly.
  logic [N_PORTS*7-1:0]        f_prev_map_act_q;
  logic [N_ELEMS*DAC_BITS-1:0] f_prev_dac_act_q;
  always_ff @(posedge clk_i) begin
    f_prev_map_act_q <= map_act_q;
    f_prev_dac_act_q <= dac_act_q;
  end
  logic f_act_perm, f_stg_perm, f_val_prefix, f_stg_in_range, f_act_stable;
  logic f_mesh_act, f_mesh_stg, f_mesh_prog, f_mesh_rb, f_mesh_safe;
  always_comb begin
    f_act_perm     = f_perm(map_act_q, N_PORTS);
    f_stg_perm     = f_perm(map_stg_q, N_PORTS);
    f_val_prefix   = f_perm(map_stg_q, 32'(idx_q)) && seen_q == f_seen(map_stg_q, 32'(idx_q)) &&
                     f_in_range(dac_stg_q, 32'(idx_q), dac_min_i, dac_max_i);
    f_stg_in_range = f_in_range(dac_stg_q, N_ELEMS, dac_min_i, dac_max_i);
    f_act_stable   = map_act_q == f_prev_map_act_q && dac_act_q == f_prev_dac_act_q;
    f_mesh_act     = f_mesh_q == dac_act_q;
    f_mesh_stg     = f_mesh_q == dac_stg_q;
    f_mesh_prog    = f_split(f_mesh_q, dac_stg_q, dac_act_q, 32'(idx_q));
    f_mesh_rb      = f_split(f_mesh_q, dac_act_q, dac_stg_q, 32'(idx_q));
    f_mesh_safe    = f_split(f_mesh_q, f_safe_all, f_mesh_q, 32'(idx_q));
  end

  `ASSERT(seq_state_legal, st_q <= SSafe)
  `ASSERT(seq_idx_bound, idx_q <= 9'(MAXN))
  `ASSERT(seq_active_map_perm, f_act_perm)
  `ASSERT(seq_staged_map_perm_committing, !(st_q == SProg || st_q == SSet || st_q == SVer) || f_stg_perm)
  `ASSERT(seq_validate_prefix, st_q != SVal || f_val_prefix)
  `ASSERT(seq_staged_codes_in_range_program, st_q != SProg || f_stg_in_range)
  // A COMMIT of the generation already active stays Idle: nothing is validated or written.
  `ASSERT(seq_noop_commit_stays_idle,
          !(st_q == SIdle && commit_i && commit_gen_i == act_gen_q && !safe_enter_i) || st_d == SIdle)
  `ASSERT(seq_dac_write_states, !dac_valid_d || (st_q == SProg || st_q == SRb || st_q == SSafe))
  `ASSERT(seq_dac_code_program_in_range,
          !(dac_valid_d && st_q == SProg) || (dac_code_d >= dac_min_i && dac_code_d <= dac_max_i))
  `ASSERT(seq_dac_code_rollback_active, !(dac_valid_d && st_q == SRb) || dac_code_d == cur_act)
  `ASSERT(seq_dac_code_safe, !(dac_valid_d && st_q == SSafe) || dac_code_d == safe_code_i)
  `ASSERT(seq_dac_elem_range, !dac_valid_d || ei < 9'(N_ELEMS))
  // The active tables change only when a verify passes or the safe sweep ends.
  `ASSERT(seq_active_changes_only_on_pass_or_safe, !f_past_rst_n || f_act_stable || f_past_applied)
  // The mesh: the active codes whenever no commit or sweep is under way; during Program the
  // staged codes below idx; after Program (Settle, Verify) the staged codes; during Rollback
  // the active codes below idx and the staged ones above; during the sweep SAFE_CODE below idx.
  `ASSERT(seq_mesh_is_active_when_idle, !(st_q == SIdle || st_q == SVal || (st_q == SSafe && phase_q)) || f_mesh_act)
  `ASSERT(seq_mesh_program, st_q != SProg || f_mesh_prog)
  `ASSERT(seq_mesh_staged, !(st_q == SSet || st_q == SVer) || f_mesh_stg)
  `ASSERT(seq_mesh_rollback, !(st_q == SRb && !phase_q) || f_mesh_rb)
  `ASSERT(seq_mesh_rollback_settle, !(st_q == SRb && phase_q) || f_mesh_act)
  `ASSERT(seq_mesh_safe_sweep, !(st_q == SSafe && !phase_q) || f_mesh_safe)
  // Watchdog: Safe the cycle after safe_enter_i; the sweep advances one element per free slot
  // and the slot counts down, so it ends within N_ELEMS slots (docs: N_ELEMS * DAC_UPDATE_CYCLES).
  `ASSERT(seq_safe_entered, !f_past_rst_n || !f_past_safe_enter || st_q == SSafe)
  `ASSERT(seq_safe_sweep_progress, !(st_q == SSafe && !phase_q && !safe_enter_i && slot_q == 16'd0 &&
          idx_q < 9'(N_ELEMS)) || (dac_valid_d && idx_d == idx_q + 9'd1))
  `ASSERT(seq_slot_counts_down, slot_q == 16'd0 || slot_d == slot_q - 16'd1 || dac_valid_d)
  `ASSERT(seq_one_event_per_cycle, !(done && fail))
  `ASSERT(seq_pd_one_outstanding, !(pd_req_d && pd_wait_q))
  // A photodiode answer is awaited only in Verify, for the valid entry it checks: every way out
  // of Verify, and reset, clear the wait (the entry part makes the proof inductive).
  `ASSERT(seq_pd_wait_only_verifying, !pd_wait_q || (st_q == SVer && idx_q < 9'(N_PORTS) && cur_valid))
  // After reset (docs/ocs-controller.md, parameters): SAFE_CODE_RESET in every element of both
  // tables, no map entry, generation 0.
  logic f_tables_at_reset;
  assign f_tables_at_reset = dac_stg_q == {N_ELEMS{DAC_BITS'(SAFE_CODE_RESET)}} &&
                             dac_act_q == {N_ELEMS{DAC_BITS'(SAFE_CODE_RESET)}} &&
                             map_stg_q == '0 && map_act_q == '0 && act_gen_q == 16'd0;
  `ASSERT(seq_reset_tables, f_past_rst_n || f_tables_at_reset)
  // ERROR on a watchdog expiry: {Watchdog, index 0, the abandoned commit's generation, or 0 from
  // Idle}.
  `ASSERT(seq_watchdog_error, !(safe_enter_i && st_q != SSafe) || (err_code_d == ocs_reg_pkg::ErrWatchdog &&
          err_index_d == 8'd0 && err_gen_d == ((st_q == SIdle) ? 16'd0 : gen_q)))
  // Validate, the first error: at one index the port-map entry's error is reported, not the
  // element's code (TargetRange before DupTarget, both before DacRange).
  `ASSERT(seq_reject_map_before_code, !(st_q == SVal && !safe_enter_i && idx_q < 9'(N_PORTS) && cur_valid &&
          ({1'b0, cur_target} >= 7'(N_PORTS) || seen_q[cur_target])) ||
          (rej && rej_code == (({1'b0, cur_target} >= 7'(N_PORTS)) ? ocs_reg_pkg::ErrTargetRange
                                                                    : ocs_reg_pkg::ErrDupTarget)))
  // WRITE_COUNT is the last validated commit's: its rollback count is 0 until its own Rollback.
  `ASSERT(seq_rollback_count_this_commit, !(st_q == SProg || st_q == SSet || st_q == SVer) || cnt_rb_q == 16'd0)

  // Coverage: every state, every transition, every event, rollback, watchdog.
  `COVER(cov_st_idle, st_q == SIdle)
  `COVER(cov_st_validate, st_q == SVal)
  `COVER(cov_st_program, st_q == SProg)
  `COVER(cov_st_settle, st_q == SSet)
  `COVER(cov_st_verify, st_q == SVer)
  `COVER(cov_st_rollback, st_q == SRb)
  `COVER(cov_st_safe, st_q == SSafe)
  `COVER(cov_tr_idle_validate, st_q == SIdle && st_d == SVal)
  `COVER(cov_tr_idle_noop, st_q == SIdle && ev_valid && ev_info[3:0] == ocs_reg_pkg::EvCommitNoop)
  `COVER(cov_tr_validate_idle, st_q == SVal && st_d == SIdle)
  `COVER(cov_tr_validate_program, st_q == SVal && st_d == SProg)
  `COVER(cov_tr_program_settle, st_q == SProg && st_d == SSet)
  `COVER(cov_tr_settle_verify, st_q == SSet && st_d == SVer)
  `COVER(cov_tr_verify_idle, st_q == SVer && st_d == SIdle)
  `COVER(cov_tr_verify_rollback, st_q == SVer && st_d == SRb)
  `COVER(cov_tr_rollback_idle, st_q == SRb && st_d == SIdle)
  `COVER(cov_tr_idle_safe, st_q == SIdle && st_d == SSafe)
  `COVER(cov_tr_validate_safe, st_q == SVal && st_d == SSafe)
  `COVER(cov_tr_program_safe, st_q == SProg && st_d == SSafe)
  `COVER(cov_tr_settle_safe, st_q == SSet && st_d == SSafe)
  `COVER(cov_tr_verify_safe, st_q == SVer && st_d == SSafe)
  `COVER(cov_tr_rollback_safe, st_q == SRb && st_d == SSafe)
  `COVER(cov_tr_safe_idle, st_q == SSafe && st_d == SIdle)
  `COVER(cov_rej_target_range, rej && rej_code == ocs_reg_pkg::ErrTargetRange)
  `COVER(cov_rej_dup_target, rej && rej_code == ocs_reg_pkg::ErrDupTarget)
  `COVER(cov_rej_dac_range, rej && rej_code == ocs_reg_pkg::ErrDacRange)
  `COVER(cov_vfail_low, vfail && vfail_code == ocs_reg_pkg::ErrVerifyLow)
  `COVER(cov_vfail_timeout, vfail && vfail_code == ocs_reg_pkg::ErrPdTimeout)
  `COVER(cov_rollback_write, dac_valid_d && st_q == SRb)
  `COVER(cov_program_slot_stall, st_q == SProg && cur_stg != cur_act && slot_q != 16'd0)
`endif

endmodule
