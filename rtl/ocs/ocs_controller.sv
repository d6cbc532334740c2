// Optical switch controller (docs/ocs-controller.md): AXI4-Lite register block (map generated
// from rtl/ocs/ocs_regs.json into ocs_reg_pkg), staged/active tables and the commit sequencer,
// DAC port to the mesh, monitor photodiodes, link monitor and event log, interrupts, host watchdog
// and safe state, free-running cycle counter, scratch RAM.
`include "mxtb_assert.svh"
`include "axi_ports.svh"

module ocs_controller #(
  parameter int N_PORTS             = 32,   // port-map entries / photodiodes, at most 64
  parameter int N_ELEMS             = 144,  // switch elements: Benes (2*log2(N)-1)*N/2, at most 256
  parameter int DAC_BITS            = 12,   // at most 16
  parameter int N_LINKS             = 20,   // at most 32
  parameter int LANES               = 4,    // lanes per XPU (link i = XPU i / LANES, lane i % LANES)
  parameter int EVENT_DEPTH         = 64,   // at least 2
  parameter int SCRATCH_WORDS       = 256,  // at most 256
  // Reset values of the runtime registers.
  parameter int DAC_MIN_RESET       = 32'(ocs_reg_pkg::DAC_MIN_CODE_RESET),
  parameter int DAC_MAX_RESET       = 32'(ocs_reg_pkg::DAC_MAX_CODE_RESET),
  parameter int SAFE_CODE_RESET     = 32'(ocs_reg_pkg::SAFE_CODE_CODE_RESET),
  parameter int UPDATE_CYCLES_RESET = 32'(ocs_reg_pkg::DAC_UPDATE_CYCLES_CYCLES_RESET),
  parameter int SETTLE_CYCLES_RESET = 32'(ocs_reg_pkg::SETTLE_CYCLES_CYCLES_RESET),
  parameter int VERIFY_MIN_RESET    = 32'(ocs_reg_pkg::VERIFY_MIN_DBM_DBM_RESET),  // 16-bit signed
  parameter int PD_TIMEOUT_RESET    = 32'(ocs_reg_pkg::PD_TIMEOUT_CYCLES_RESET),
  parameter int WATCHDOG_RESET      = 32'(ocs_reg_pkg::WATCHDOG_TIMEOUT_CYCLES_RESET),
  parameter int IRQ_MASK_RESET      = 32'(ocs_reg_pkg::IRQ_MASK_MASK_RESET)
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  // AXI4-Lite slave
  `AXIL_SLAVE_PORTS(s_axil_, [15:0]),
  // DAC port to the mesh: one element write per update slot
  output logic                 dac_valid_o,
  output logic [7:0]           dac_elem_o,
  output logic [DAC_BITS-1:0]  dac_code_o,
  // monitor photodiodes
  output logic                 pd_req_o,
  output logic [5:0]           pd_port_o,
  input  logic                 pd_valid_i,
  input  logic [15:0]          pd_dbm_i,      // signed, 0.01 dB
  // links (link_pkg state and reason codes, 4 bits each)
  input  logic [7:0]           xpu_base_i,    // the board's first XPU number in its rack (ocs_link_map)
  input  logic [N_LINKS*4-1:0] link_state_i,
  input  logic [N_LINKS*4-1:0] link_reason_i,
  output logic                 irq_o,
  output logic                 safe_o,
  // what each link layer should expect, from the active port map (ocs_link_map)
  output logic [N_LINKS-1:0]   link_check_o,
  output logic [N_LINKS*8-1:0] link_expect_xpu_o,
  output logic [N_LINKS*8-1:0] link_expect_lane_o,
  output logic [N_LINKS-1:0]   link_retrain_o
);

  // ---------------------------------------------------------------- AXI4-Lite front end
  logic        wr_req, rd_req, wr_err, rd_err;
  logic [15:0] wr_addr, rd_addr;
  logic [31:0] wr_data, rd_data;
  logic [3:0]  wr_strb;

  ocs_axil_slave #(.AW(16)) u_axil (
    .clk_i, .rst_ni,
    .s_axil_awaddr, .s_axil_awvalid, .s_axil_awready, .s_axil_wdata, .s_axil_wstrb,
    .s_axil_wvalid, .s_axil_wready, .s_axil_bresp, .s_axil_bvalid, .s_axil_bready,
    .s_axil_araddr, .s_axil_arvalid, .s_axil_arready, .s_axil_rdata, .s_axil_rresp,
    .s_axil_rvalid, .s_axil_rready,
    .wr_req_o(wr_req), .wr_addr_o(wr_addr), .wr_data_o(wr_data), .wr_strb_o(wr_strb),
    .wr_err_i(wr_err), .rd_req_o(rd_req), .rd_addr_o(rd_addr), .rd_data_i(rd_data),
    .rd_err_i(rd_err)
  );

  // ---------------------------------------------------------------- registers
  localparam int SW = (SCRATCH_WORDS > 1) ? $clog2(SCRATCH_WORDS) : 1;
  logic [DAC_BITS-1:0] dac_min_q, dac_max_q, safe_code_q;
  logic [15:0]         upd_q, vmin_q, pdto_q;
  logic [31:0]         settle_q, wd_timeout_q, wd_cnt_q, time_hi_q;
  logic [63:0]         time_q;
  logic [4:0]          irq_q;
  logic [5:0]          mask_q;
  logic                hold_q;        // LINK_HOLD
  logic [31:0]         scratch_q [SCRATCH_WORDS];

  // Sequencer and event log.
  logic [N_PORTS*7-1:0]        map_stg, map_act;
  logic [N_ELEMS*DAC_BITS-1:0] dac_stg, dac_act;
  logic [2:0]  seq_state;
  logic        seq_idle, seq_busy, seq_safe, seq_done, seq_fail, ev_valid;
  logic [15:0] act_gen, err_gen, wr_prog, wr_rb, vfail_dbm;
  logic [3:0]  err_code;
  logic [7:0]  err_index, vfail_port;
  logic [31:0] wr_total, ev_info;
  logic [15:0] ev_count;
  logic [63:0] ev_ts;
  logic [31:0] ev_head, ev_dropped;
  logic        link_down, link_up;

  // Per-cycle register-block decisions.
  logic        commit, kick, safe_clear, wd_expire, wd_restart, map_we, dac_we, scratch_we;
  // The commit's and the sweep's inputs (DAC_MIN, DAC_MAX, SAFE_CODE) stay still while the
  // sequencer uses them: from the cycle the watchdog would expire (wd_due: unless this very write
  // kicks it) and while busy.
  logic        wd_due, limits_locked;
  logic        pop, dropped_clear, time_latch;
  logic        we_dac_min, we_dac_max, we_safe_code, we_upd, we_settle, we_vmin, we_pdto;
  logic        we_irq_clr, we_mask, we_wd_timeout, we_hold;
  logic [31:0] wval;          // write data merged with the register's value under wstrb
  logic [31:0] wr_old;        // that value
  logic [15:0] wa, ra;        // word-aligned addresses
  logic [15:0] w_off, r_off;  // offsets into a window
  logic [7:0]  w_idx;
  logic        unused_bits;

  function automatic logic [31:0] merge(input logic [31:0] old, input logic [31:0] data,
                                        input logic [3:0] strb);
    for (int b = 0; b < 4; b++) merge[8*b +: 8] = strb[b] ? data[8*b +: 8] : old[8*b +: 8];
  endfunction

  function automatic logic in_window(input logic [15:0] a, input logic [15:0] base, input int n);
    in_window = a >= base && ({1'b0, a} - {1'b0, base}) < 17'(4 * n);
  endfunction

  function automatic logic fits_dac(input logic [31:0] v);
    fits_dac = (v >> DAC_BITS) == 32'd0;
  endfunction

  function automatic logic [31:0] map_word(input logic [6:0] e);
    map_word = {e[6], 25'h0, e[5:0]};
  endfunction

  assign wa    = {wr_addr[15:2], 2'b00};
  assign ra    = {rd_addr[15:2], 2'b00};
  // Byte-lane address bits and window offsets past the largest window are not used.
  assign unused_bits = ^{wr_addr[1:0], rd_addr[1:0], w_off[15:10], w_off[1:0], r_off[15:10], r_off[1:0]};

  // Writes.
  always_comb begin
    wr_err        = 1'b0;
    wr_old        = '0;
    commit        = 1'b0;
    kick          = 1'b0;
    safe_clear    = 1'b0;
    map_we        = 1'b0;
    dac_we        = 1'b0;
    scratch_we    = 1'b0;
    we_dac_min    = 1'b0;
    we_dac_max    = 1'b0;
    we_safe_code  = 1'b0;
    we_upd        = 1'b0;
    we_settle     = 1'b0;
    we_vmin       = 1'b0;
    we_pdto       = 1'b0;
    we_irq_clr    = 1'b0;
    we_mask       = 1'b0;
    we_wd_timeout = 1'b0;
    we_hold       = 1'b0;
    w_off         = '0;
    unique case (wa)
      ocs_reg_pkg::DAC_MIN_OFFSET:           wr_old = 32'(dac_min_q);
      ocs_reg_pkg::DAC_MAX_OFFSET:           wr_old = 32'(dac_max_q);
      ocs_reg_pkg::SAFE_CODE_OFFSET:         wr_old = 32'(safe_code_q);
      ocs_reg_pkg::DAC_UPDATE_CYCLES_OFFSET: wr_old = 32'(upd_q);
      ocs_reg_pkg::SETTLE_CYCLES_OFFSET:     wr_old = settle_q;
      ocs_reg_pkg::VERIFY_MIN_DBM_OFFSET:    wr_old = 32'(vmin_q);
      ocs_reg_pkg::PD_TIMEOUT_OFFSET:        wr_old = 32'(pdto_q);
      ocs_reg_pkg::IRQ_MASK_OFFSET:          wr_old = 32'(mask_q);
      ocs_reg_pkg::WATCHDOG_TIMEOUT_OFFSET:  wr_old = wd_timeout_q;
      ocs_reg_pkg::LINK_HOLD_OFFSET:         wr_old = 32'(hold_q);
      default: begin
        // Table entries take whole words (wstrb ignored): no read port for a merge.
        if (in_window(wa, ocs_reg_pkg::STAGED_MAP_OFFSET, N_PORTS)) begin
          w_off  = wa - ocs_reg_pkg::STAGED_MAP_OFFSET;
        end else if (in_window(wa, ocs_reg_pkg::STAGED_DAC_OFFSET, N_ELEMS)) begin
          w_off  = wa - ocs_reg_pkg::STAGED_DAC_OFFSET;
        end else if (in_window(wa, ocs_reg_pkg::SCRATCH_OFFSET, SCRATCH_WORDS)) begin
          w_off  = wa - ocs_reg_pkg::SCRATCH_OFFSET;
        end
      end
    endcase
    w_idx = w_off[9:2];
    wval  = merge(wr_old, wr_data, wr_strb);
    if (wr_req) begin
      unique case (wa)
        ocs_reg_pkg::COMMIT_OFFSET: begin
          if (seq_idle) commit = 1'b1;
          else wr_err = 1'b1;
        end
        ocs_reg_pkg::SAFE_CLEAR_OFFSET:        safe_clear = wr_data[0];
        ocs_reg_pkg::DAC_MIN_OFFSET:           if (fits_dac(wval) && !limits_locked) we_dac_min = 1'b1; else wr_err = 1'b1;
        ocs_reg_pkg::DAC_MAX_OFFSET:           if (fits_dac(wval) && !limits_locked) we_dac_max = 1'b1; else wr_err = 1'b1;
        ocs_reg_pkg::SAFE_CODE_OFFSET:         if (fits_dac(wval) && !limits_locked) we_safe_code = 1'b1; else wr_err = 1'b1;
        ocs_reg_pkg::DAC_UPDATE_CYCLES_OFFSET: we_upd = 1'b1;
        ocs_reg_pkg::SETTLE_CYCLES_OFFSET:     we_settle = 1'b1;
        ocs_reg_pkg::VERIFY_MIN_DBM_OFFSET:    we_vmin = 1'b1;
        ocs_reg_pkg::PD_TIMEOUT_OFFSET:        we_pdto = 1'b1;
        ocs_reg_pkg::IRQ_STATUS_OFFSET:        we_irq_clr = 1'b1;
        ocs_reg_pkg::IRQ_MASK_OFFSET:          we_mask = 1'b1;
        ocs_reg_pkg::WATCHDOG_TIMEOUT_OFFSET:  we_wd_timeout = 1'b1;
        ocs_reg_pkg::WATCHDOG_KICK_OFFSET:     kick = 1'b1;
        ocs_reg_pkg::LINK_HOLD_OFFSET:         we_hold = 1'b1;
        default: begin
          if (in_window(wa, ocs_reg_pkg::STAGED_MAP_OFFSET, N_PORTS)) begin
            if (seq_busy) wr_err = 1'b1;
            else map_we = 1'b1;
          end else if (in_window(wa, ocs_reg_pkg::STAGED_DAC_OFFSET, N_ELEMS)) begin
            if (seq_busy || !fits_dac(wr_data)) wr_err = 1'b1;
            else dac_we = 1'b1;
          end else if (in_window(wa, ocs_reg_pkg::SCRATCH_OFFSET, SCRATCH_WORDS)) begin
            scratch_we = 1'b1;
          end else begin
            wr_err = 1'b1;  // read-only or unmapped
          end
        end
      endcase
    end
  end

  // Reads.
  always_comb begin
    rd_data       = '0;
    rd_err        = 1'b0;
    pop           = 1'b0;
    dropped_clear = 1'b0;
    time_latch    = 1'b0;
    r_off         = '0;
    unique case (ra)
      ocs_reg_pkg::ID_OFFSET:                rd_data = 32'(ocs_reg_pkg::ID_RESET);
      ocs_reg_pkg::VERSION_OFFSET:           rd_data = 32'(ocs_reg_pkg::VERSION_RESET);
      ocs_reg_pkg::PARAMS_OFFSET:            rd_data = {11'h0, 5'(DAC_BITS), 8'(N_LINKS), 8'(N_PORTS)};
      ocs_reg_pkg::SIZES_OFFSET:             rd_data = {16'(EVENT_DEPTH), 16'(N_ELEMS)};
      ocs_reg_pkg::STATUS_OFFSET:            rd_data = {act_gen, 4'h0, err_code, 2'b0, seq_safe, seq_busy,
                                                        1'b0, seq_state};
      ocs_reg_pkg::COMMIT_OFFSET:            rd_data = '0;
      ocs_reg_pkg::ERROR_OFFSET:             rd_data = {err_gen, err_index, 4'h0, err_code};
      ocs_reg_pkg::SAFE_CLEAR_OFFSET:        rd_data = '0;
      ocs_reg_pkg::DAC_MIN_OFFSET:           rd_data = 32'(dac_min_q);
      ocs_reg_pkg::DAC_MAX_OFFSET:           rd_data = 32'(dac_max_q);
      ocs_reg_pkg::SAFE_CODE_OFFSET:         rd_data = 32'(safe_code_q);
      ocs_reg_pkg::DAC_UPDATE_CYCLES_OFFSET: rd_data = 32'(upd_q);
      ocs_reg_pkg::SETTLE_CYCLES_OFFSET:     rd_data = settle_q;
      ocs_reg_pkg::VERIFY_MIN_DBM_OFFSET:    rd_data = 32'(vmin_q);
      ocs_reg_pkg::PD_TIMEOUT_OFFSET:        rd_data = 32'(pdto_q);
      ocs_reg_pkg::LINK_HOLD_OFFSET:         rd_data = 32'(hold_q);
      ocs_reg_pkg::WRITE_COUNT_OFFSET:       rd_data = {wr_rb, wr_prog};
      ocs_reg_pkg::WRITE_TOTAL_OFFSET:       rd_data = wr_total;
      ocs_reg_pkg::VERIFY_FAIL_OFFSET:       rd_data = {vfail_dbm, 8'h0, vfail_port};
      ocs_reg_pkg::IRQ_STATUS_OFFSET:        rd_data = {26'h0, ev_count != 16'd0, irq_q};
      ocs_reg_pkg::IRQ_MASK_OFFSET:          rd_data = 32'(mask_q);
      ocs_reg_pkg::WATCHDOG_TIMEOUT_OFFSET:  rd_data = wd_timeout_q;
      ocs_reg_pkg::WATCHDOG_KICK_OFFSET:     rd_data = '0;
      ocs_reg_pkg::WATCHDOG_COUNT_OFFSET:    rd_data = wd_cnt_q;
      ocs_reg_pkg::TIME_LO_OFFSET: begin
        rd_data    = time_q[31:0];
        time_latch = rd_req;
      end
      ocs_reg_pkg::TIME_HI_OFFSET:           rd_data = time_hi_q;
      ocs_reg_pkg::EVENT_COUNT_OFFSET:       rd_data = 32'(ev_count);
      ocs_reg_pkg::EVENT_DROPPED_OFFSET: begin
        rd_data       = ev_dropped;
        dropped_clear = rd_req;
      end
      ocs_reg_pkg::EVENT_TS_LO_OFFSET:       rd_data = ev_ts[31:0];
      ocs_reg_pkg::EVENT_TS_HI_OFFSET:       rd_data = ev_ts[63:32];
      ocs_reg_pkg::EVENT_INFO_OFFSET: begin
        rd_data = ev_head;
        pop     = rd_req;
      end
      default: begin
        if (in_window(ra, ocs_reg_pkg::LINK_STATUS_OFFSET, N_LINKS)) begin
          r_off   = ra - ocs_reg_pkg::LINK_STATUS_OFFSET;
          rd_data = {24'h0, link_reason_i[4*32'(r_off[6:2]) +: 4], link_state_i[4*32'(r_off[6:2]) +: 4]};
        end else if (in_window(ra, ocs_reg_pkg::SCRATCH_OFFSET, SCRATCH_WORDS)) begin
          r_off   = ra - ocs_reg_pkg::SCRATCH_OFFSET;
          rd_data = scratch_q[SW'(r_off >> 2)];
        end else if (in_window(ra, ocs_reg_pkg::STAGED_MAP_OFFSET, N_PORTS)) begin
          r_off   = ra - ocs_reg_pkg::STAGED_MAP_OFFSET;
          rd_data = map_word(map_stg[7*32'(r_off[7:2]) +: 7]);
        end else if (in_window(ra, ocs_reg_pkg::ACTIVE_MAP_OFFSET, N_PORTS)) begin
          r_off   = ra - ocs_reg_pkg::ACTIVE_MAP_OFFSET;
          rd_data = map_word(map_act[7*32'(r_off[7:2]) +: 7]);
        end else if (in_window(ra, ocs_reg_pkg::STAGED_DAC_OFFSET, N_ELEMS)) begin
          r_off   = ra - ocs_reg_pkg::STAGED_DAC_OFFSET;
          rd_data = 32'(dac_stg[DAC_BITS*32'(r_off[9:2]) +: DAC_BITS]);
        end else if (in_window(ra, ocs_reg_pkg::ACTIVE_DAC_OFFSET, N_ELEMS)) begin
          r_off   = ra - ocs_reg_pkg::ACTIVE_DAC_OFFSET;
          rd_data = 32'(dac_act[DAC_BITS*32'(r_off[9:2]) +: DAC_BITS]);
        end else begin
          rd_err = 1'b1;
        end
      end
    endcase
  end

  // ---------------------------------------------------------------- watchdog
  assign wd_restart = kick || we_wd_timeout || wd_timeout_q == 32'd0 || seq_safe;
  assign wd_due     = !(wd_timeout_q == 32'd0 || seq_safe) && wd_cnt_q >= wd_timeout_q - 32'd1;
  assign wd_expire  = wd_due && !(kick || we_wd_timeout);
  assign limits_locked = seq_busy || wd_due;

  always_ff @(posedge clk_i) begin
    if (scratch_we) begin
      for (int b = 0; b < 4; b++) begin
        if (wr_strb[b]) scratch_q[SW'(w_off >> 2)][8*b +: 8] <= wr_data[8*b +: 8];
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      dac_min_q    <= DAC_BITS'(DAC_MIN_RESET);
      dac_max_q    <= DAC_BITS'(DAC_MAX_RESET);
      safe_code_q  <= DAC_BITS'(SAFE_CODE_RESET);
      upd_q        <= 16'(UPDATE_CYCLES_RESET);
      settle_q     <= 32'(SETTLE_CYCLES_RESET);
      vmin_q       <= 16'(VERIFY_MIN_RESET);
      pdto_q       <= 16'(PD_TIMEOUT_RESET);
      irq_q        <= '0;
      mask_q       <= 6'(IRQ_MASK_RESET);
      wd_timeout_q <= 32'(WATCHDOG_RESET);
      hold_q       <= 1'b0;
      wd_cnt_q     <= '0;
      time_q       <= '0;
      time_hi_q    <= '0;
    end else begin
      if (we_dac_min)    dac_min_q    <= wval[DAC_BITS-1:0];
      if (we_dac_max)    dac_max_q    <= wval[DAC_BITS-1:0];
      if (we_safe_code)  safe_code_q  <= wval[DAC_BITS-1:0];
      if (we_upd)        upd_q        <= wval[15:0];
      if (we_settle)     settle_q     <= wval;
      if (we_vmin)       vmin_q       <= wval[15:0];
      if (we_pdto)       pdto_q       <= wval[15:0];
      if (we_mask)       mask_q       <= wval[5:0];
      if (we_wd_timeout) wd_timeout_q <= wval;
      // A host that stopped kicking the watchdog will not end its hold either.
      if (wd_expire)     hold_q       <= 1'b0;
      else if (we_hold)  hold_q       <= wval[0];
      irq_q <= (irq_q & ~(we_irq_clr ? wr_data[4:0] : 5'h0))
             | {wd_expire, seq_fail, seq_done, link_up, link_down};
      wd_cnt_q  <= wd_restart ? 32'd0 : wd_cnt_q + 32'd1;
      time_q    <= time_q + 64'd1;
      if (time_latch) time_hi_q <= time_q[63:32];
    end
  end

  assign irq_o  = |({ev_count != 16'd0, irq_q} & ~mask_q);
  assign safe_o = seq_safe;

  // ---------------------------------------------------------------- sequencer and event log
  ocs_sequencer #(
    .N_PORTS(N_PORTS), .N_ELEMS(N_ELEMS), .DAC_BITS(DAC_BITS), .SAFE_CODE_RESET(SAFE_CODE_RESET)
  ) u_seq (
    .clk_i, .rst_ni,
    .dac_min_i(dac_min_q), .dac_max_i(dac_max_q), .safe_code_i(safe_code_q),
    .update_cycles_i(upd_q), .settle_cycles_i(settle_q), .verify_min_i(vmin_q),
    .pd_timeout_i(pdto_q),
    .commit_i(commit), .commit_gen_i(wr_data[15:0]), .safe_enter_i(wd_expire),
    .safe_clear_i(safe_clear),
    .map_we_i(map_we), .map_idx_i(w_idx[5:0]), .map_wdata_i({wr_data[31], wr_data[5:0]}),
    .dac_we_i(dac_we), .dac_idx_i(w_idx), .dac_wdata_i(wr_data[DAC_BITS-1:0]),
    .map_stg_o(map_stg), .map_act_o(map_act), .dac_stg_o(dac_stg), .dac_act_o(dac_act),
    .state_o(seq_state), .idle_o(seq_idle), .busy_o(seq_busy), .safe_o(seq_safe),
    .active_gen_o(act_gen), .err_code_o(err_code), .err_index_o(err_index), .err_gen_o(err_gen),
    .wr_prog_o(wr_prog), .wr_rb_o(wr_rb), .wr_total_o(wr_total),
    .vfail_port_o(vfail_port), .vfail_dbm_o(vfail_dbm),
    .done_o(seq_done), .fail_o(seq_fail), .ev_valid_o(ev_valid), .ev_info_o(ev_info),
    .dac_valid_o, .dac_elem_o, .dac_code_o,
    .pd_req_o, .pd_port_o, .pd_valid_i, .pd_dbm_i
  );

  ocs_event_log #(.N_LINKS(N_LINKS), .DEPTH(EVENT_DEPTH)) u_log (
    .clk_i, .rst_ni,
    .time_i(time_q), .ctl_valid_i(ev_valid), .ctl_info_i(ev_info),
    .link_state_i, .link_reason_i,
    .pop_i(pop), .dropped_clear_i(dropped_clear),
    .count_o(ev_count), .head_ts_o(ev_ts), .head_info_o(ev_head), .dropped_o(ev_dropped),
    .link_down_o(link_down), .link_up_o(link_up)
  );

  // ---------------------------------------------------------------- link expectations
  ocs_link_map #(.N_PORTS(N_PORTS), .N_LINKS(N_LINKS), .LANES(LANES)) u_link_map (
    .clk_i, .rst_ni, .active_map_i(map_act), .xpu_base_i, .commit_end_i(seq_done || seq_fail),
    .commit_busy_i(seq_busy && !seq_safe), .hold_i(hold_q),
    .link_state_i, .link_reason_i,
    .link_check_o, .link_expect_xpu_o, .link_expect_lane_o, .link_retrain_o
  );

  // ---------------------------------------------------------------- assertions
  `ASSERT_RESET_START
  // The register block keeps the sequencer's promises (its env_* assumptions).
  `ASSERT(ctl_no_staged_write_busy, !((map_we || dac_we) && seq_busy))
  `ASSERT(ctl_commit_only_idle, !(commit && !seq_idle))
  // Watchdog expiry: Safe (safe_o) the next cycle, the watchdog held while safe, and every
  // element write from then on carries SAFE_CODE.
  `ASSERT_PAST_RESET
  `ASSERT_PAST(f_past_expire, 1, wd_expire)
  `ASSERT_PAST(f_past_safe_code, DAC_BITS, safe_code_q)
  // The sequencer's env_range_still and env_safe_code_still, stated on the registers: the range
  // while a commit validates and programs, the safe code while the sweep writes it.
  `ASSERT_PAST(f_past_range, 2*DAC_BITS, {dac_min_q, dac_max_q})
  `ASSERT(ctl_range_still_committing, !f_past_rst_n || !(seq_state == ocs_reg_pkg::StValidate ||
          seq_state == ocs_reg_pkg::StProgram) || {dac_min_q, dac_max_q} == f_past_range)
  `ASSERT(ctl_safe_code_still_sweeping, !f_past_rst_n || !(seq_safe && seq_busy) || safe_code_q == f_past_safe_code)
  `ASSERT(ctl_watchdog_to_safe, !f_past_rst_n || !f_past_expire || safe_o)
  `ASSERT(ctl_watchdog_ends_hold, !f_past_rst_n || !f_past_expire || !hold_q)
  // LINK_HOLD changes only by a write to it or by the watchdog's expiry: a commit, a rollback or a
  // safe state leaves the host's hold as it was (rack_commit releases every board itself).
  `ASSERT_PAST(f_past_hold, 1, hold_q)
  `ASSERT_PAST(f_past_hold_write, 1, wr_req && wa == ocs_reg_pkg::LINK_HOLD_OFFSET)
  `ASSERT(ctl_hold_by_write_or_expiry, !f_past_rst_n || hold_q == f_past_hold || f_past_hold_write || f_past_expire)
  `ASSERT(ctl_watchdog_held_safe, !seq_safe || !wd_expire)
  `ASSERT(ctl_safe_writes_safe_code, !(safe_o && dac_valid_o) || dac_code_o == f_past_safe_code)
  `ASSERT(ctl_irq_level, irq_o == |({ev_count != 16'd0, irq_q} & ~mask_q))
  `ASSERT(ctl_write_error_no_effect, !wr_err || !(commit || map_we || dac_we || scratch_we || we_dac_min ||
          we_dac_max || we_safe_code))
`ifdef MXTB_ASSERT_ON
  // After reset every runtime register holds its *_RESET parameter, and every table code the
  // SAFE_CODE register's (docs/ocs-controller.md, parameters).
  logic f_regs_at_reset;
  assign f_regs_at_reset = dac_min_q == DAC_BITS'(DAC_MIN_RESET) && dac_max_q == DAC_BITS'(DAC_MAX_RESET) &&
                           safe_code_q == DAC_BITS'(SAFE_CODE_RESET) && upd_q == 16'(UPDATE_CYCLES_RESET) &&
                           settle_q == 32'(SETTLE_CYCLES_RESET) && vmin_q == 16'(VERIFY_MIN_RESET) &&
                           pdto_q == 16'(PD_TIMEOUT_RESET) && mask_q == 6'(IRQ_MASK_RESET) &&
                           wd_timeout_q == 32'(WATCHDOG_RESET) && irq_q == '0 && wd_cnt_q == '0 && !hold_q &&
                           dac_stg == {N_ELEMS{safe_code_q}} && dac_act == {N_ELEMS{safe_code_q}};
  `ASSERT(ctl_reset_values, f_past_rst_n || f_regs_at_reset)
  // The watchdog, from the bus: armed (WATCHDOG_TIMEOUT = T > 0) and not safe, it expires exactly
  // when T cycles have passed since its last restart, unless a write to WATCHDOG_KICK or
  // WATCHDOG_TIMEOUT in this very cycle restarts it.
  logic f_restart_write;
  assign f_restart_write = wr_req && (wa == ocs_reg_pkg::WATCHDOG_KICK_OFFSET || wa == ocs_reg_pkg::WATCHDOG_TIMEOUT_OFFSET);
  `ASSERT(ctl_watchdog_expiry_rule, wd_expire == (wd_timeout_q != 32'd0 && !seq_safe &&
          wd_cnt_q >= wd_timeout_q - 32'd1 && !f_restart_write))
`endif
  `COVER(cov_ctl_watchdog_expiry, wd_expire)
  `COVER(cov_ctl_safe_clear, safe_clear && seq_safe)
  `COVER(cov_ctl_hold_ended_by_watchdog, wd_expire && hold_q)
  `COVER(cov_ctl_hold_kept_through_commit, hold_q && commit)
  `COVER(cov_ctl_commit_busy_slverr, wr_req && wa == ocs_reg_pkg::COMMIT_OFFSET && wr_err)
  `COVER(cov_ctl_staged_busy_slverr, wr_req && seq_busy && wr_err)
  `COVER(cov_ctl_limits_locked_slverr, wr_req && limits_locked && wr_err && (wa == ocs_reg_pkg::DAC_MIN_OFFSET ||
         wa == ocs_reg_pkg::DAC_MAX_OFFSET || wa == ocs_reg_pkg::SAFE_CODE_OFFSET))
  `COVER(cov_ctl_read_unmapped, rd_req && rd_err)
  `COVER(cov_ctl_irq, irq_o)

endmodule
