// The board's scratch RAM as a block RAM behind an AXI4-Lite slave: what IPbus example designs
// put at the end of the register bus for a host to test block transfers against. A read answers
// the cycle after its address is taken (the block RAM's latency), a write the cycle after both its
// address and data are; a response is OKAY, or SLVERR for a word past WORDS, which changes nothing
// and reads 0. The next request is taken in the cycle a response is, so a master that streams gets
// a word a cycle.
`include "mxtb_assert.svh"

module board_ram #(
  parameter int WORDS = 4096
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  // AXI4-Lite slave, written out for its waivers (rtl/common/axi_ports.svh says why)
  /* verilator lint_off UNUSEDSIGNAL */  // byte addresses of whole words: bits 1:0 are 0
  input  logic [31:0] s_axil_awaddr,   // byte address within the RAM
  /* verilator lint_on UNUSEDSIGNAL */
  input  logic        s_axil_awvalid,
  output logic        s_axil_awready,
  input  logic [31:0] s_axil_wdata,
  /* verilator lint_off UNUSEDSIGNAL */  // IPbus writes whole words
  input  logic [3:0]  s_axil_wstrb,
  /* verilator lint_on UNUSEDSIGNAL */
  input  logic        s_axil_wvalid,
  output logic        s_axil_wready,
  output logic [1:0]  s_axil_bresp,
  output logic        s_axil_bvalid,
  input  logic        s_axil_bready,
  /* verilator lint_off UNUSEDSIGNAL */
  input  logic [31:0] s_axil_araddr,
  /* verilator lint_on UNUSEDSIGNAL */
  input  logic        s_axil_arvalid,
  output logic        s_axil_arready,
  output logic [31:0] s_axil_rdata,
  output logic [1:0]  s_axil_rresp,
  output logic        s_axil_rvalid,
  input  logic        s_axil_rready
);
  localparam int AW = $clog2(WORDS);

  logic [31:0] mem [WORDS];
  logic bvalid_q, rvalid_q, berr_q, rerr_q;
  logic [31:0] rdata_q;

  // A write is taken whole (address and data in one cycle), so nothing is half written.
  wire write_fire = s_axil_awvalid && s_axil_wvalid && (!bvalid_q || s_axil_bready);
  wire read_fire = s_axil_arvalid && (!rvalid_q || s_axil_rready);
  wire [29:0] wword = s_axil_awaddr[31:2], rword = s_axil_araddr[31:2];
  wire w_in = wword < 30'(WORDS), r_in = rword < 30'(WORDS);

  assign s_axil_awready = write_fire;
  assign s_axil_wready = write_fire;
  assign s_axil_arready = read_fire;
  assign s_axil_bvalid = bvalid_q;
  assign s_axil_bresp = berr_q ? 2'b10 : 2'b00;
  assign s_axil_rvalid = rvalid_q;
  assign s_axil_rresp = rerr_q ? 2'b10 : 2'b00;
  assign s_axil_rdata = rdata_q;

  always_ff @(posedge clk_i) begin
    if (write_fire && w_in) mem[wword[AW-1:0]] <= s_axil_wdata;
    if (read_fire) rdata_q <= r_in ? mem[rword[AW-1:0]] : 32'h0;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      bvalid_q <= 1'b0;
      rvalid_q <= 1'b0;
      berr_q <= 1'b0;
      rerr_q <= 1'b0;
    end else begin
      if (write_fire) begin
        bvalid_q <= 1'b1;
        berr_q <= !w_in;
      end else if (s_axil_bready) bvalid_q <= 1'b0;
      if (read_fire) begin
        rvalid_q <= 1'b1;
        rerr_q <= !r_in;
      end else if (s_axil_rready) rvalid_q <= 1'b0;
    end
  end

  // The rules the docs state, at the ports, each from its own expression rather than the logic
  // it checks: a write is taken whole (address and data in one cycle); a request is taken only
  // when no response would be lost (none pending, or the pending one taken in that cycle); a
  // response is up exactly when its request was taken the cycle before or it waits to be taken
  // (the latency, and AXI4-Lite's hold); it is an error exactly for a word past WORDS.
  `ASSERT_RESET_START
  `ASSERT_PAST_RESET
  `ASSERT_PAST(f_bvalid, 1, bvalid_q && !s_axil_bready)
  `ASSERT_PAST(f_rvalid, 1, rvalid_q && !s_axil_rready)
  `ASSERT_PAST(f_write_taken, 1, s_axil_awvalid && s_axil_awready && s_axil_wvalid && s_axil_wready)
  `ASSERT_PAST(f_read_taken, 1, s_axil_arvalid && s_axil_arready)
  `ASSERT_PAST(f_w_past_end, 1, s_axil_awaddr[31:2] >= 30'(WORDS))
  `ASSERT_PAST(f_r_past_end, 1, s_axil_araddr[31:2] >= 30'(WORDS))
  `ASSERT(brd_ram_write_whole, s_axil_awready == s_axil_wready && (!s_axil_awready || (s_axil_awvalid && s_axil_wvalid)))
  `ASSERT(brd_ram_b_no_overrun, !(s_axil_awvalid && s_axil_awready) || !s_axil_bvalid || s_axil_bready)
  `ASSERT(brd_ram_r_no_overrun, !(s_axil_arvalid && s_axil_arready) || !s_axil_rvalid || s_axil_rready)
  `ASSERT(brd_ram_b_timing, !f_past_rst_n || s_axil_bvalid == (f_write_taken || f_bvalid))
  `ASSERT(brd_ram_r_timing, !f_past_rst_n || s_axil_rvalid == (f_read_taken || f_rvalid))
  `ASSERT(brd_ram_b_error, !f_past_rst_n || !f_write_taken || s_axil_bresp == (f_w_past_end ? 2'b10 : 2'b00))
  `ASSERT(brd_ram_r_error, !f_past_rst_n || !f_read_taken || s_axil_rresp == (f_r_past_end ? 2'b10 : 2'b00))
  `ASSERT(brd_ram_r_error_data, !f_past_rst_n || !f_read_taken || !f_r_past_end || s_axil_rdata == 32'h0)
  // A write past the end changes nothing: the one word its address bits could reach keeps its value.
  `ASSERT_PAST(f_w_index, AW, s_axil_awaddr[AW+1:2])
  `ASSERT_PAST(f_w_alias, 32, mem[s_axil_awaddr[AW+1:2]])
  `ASSERT(brd_ram_past_end_unchanged, !f_past_rst_n || !f_write_taken || !f_w_past_end || mem[f_w_index] == f_w_alias)
  `COVER(cov_brd_ram_read, read_fire && r_in)
  `COVER(cov_brd_ram_write, write_fire && w_in)
  `COVER(cov_brd_ram_past_end, (read_fire && !r_in) || (write_fire && !w_in))
  `COVER(cov_brd_ram_read_streamed, read_fire && rvalid_q)
  `COVER(cov_brd_ram_write_streamed, write_fire && bvalid_q)
endmodule
