// AXI4-Lite slave front end of the optical switch controller: one transaction at a time, turned
// into single-cycle register requests. A write needs both its address and its data; it is
// accepted (awready and wready together) when both are valid and no response is pending, and
// wr_req_o pulses that cycle; the register block answers wr_err_i combinationally and the response
// (OKAY or SLVERR) is held on b* until bready. Reads likewise: rd_req_o pulses on the address
// handshake, rd_data_i/rd_err_i are captured, and r* holds them until rready. Read side effects
// (pop, read-clear, latch) therefore happen exactly once per read. When a read and a write are
// both offered in the same cycle the write goes first.
`include "mxtb_assert.svh"
`include "axi_ports.svh"

module ocs_axil_slave #(
  parameter int AW = 16
) (
  input  logic          clk_i,
  input  logic          rst_ni,
  // AXI4-Lite
  `AXIL_SLAVE_PORTS(s_axil_, [AW-1:0]),
  // register requests
  output logic          wr_req_o,
  output logic [AW-1:0] wr_addr_o,
  output logic [31:0]   wr_data_o,
  output logic [3:0]    wr_strb_o,
  input  logic          wr_err_i,
  output logic          rd_req_o,
  output logic [AW-1:0] rd_addr_o,
  input  logic [31:0]   rd_data_i,
  input  logic          rd_err_i
);

  localparam logic [1:0] RespOkay   = 2'b00;
  localparam logic [1:0] RespSlverr = 2'b10;

  logic        bvalid_q, rvalid_q;
  logic [1:0]  bresp_q, rresp_q;
  logic [31:0] rdata_q;

  assign wr_req_o  = s_axil_awvalid && s_axil_wvalid && !bvalid_q;
  assign rd_req_o  = s_axil_arvalid && !rvalid_q && !wr_req_o;
  assign wr_addr_o = s_axil_awaddr;
  assign wr_data_o = s_axil_wdata;
  assign wr_strb_o = s_axil_wstrb;
  assign rd_addr_o = s_axil_araddr;

  assign s_axil_awready = wr_req_o;
  assign s_axil_wready  = wr_req_o;
  assign s_axil_arready = rd_req_o;
  assign s_axil_bvalid  = bvalid_q;
  assign s_axil_bresp   = bresp_q;
  assign s_axil_rvalid  = rvalid_q;
  assign s_axil_rresp   = rresp_q;
  assign s_axil_rdata   = rdata_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      bvalid_q <= 1'b0;
      bresp_q  <= RespOkay;
      rvalid_q <= 1'b0;
      rresp_q  <= RespOkay;
      rdata_q  <= '0;
    end else begin
      if (wr_req_o) begin
        bvalid_q <= 1'b1;
        bresp_q  <= wr_err_i ? RespSlverr : RespOkay;
      end else if (s_axil_bready) begin
        bvalid_q <= 1'b0;
      end
      if (rd_req_o) begin
        rvalid_q <= 1'b1;
        rresp_q  <= rd_err_i ? RespSlverr : RespOkay;
        rdata_q  <= rd_err_i ? 32'h0 : rd_data_i;
      end else if (s_axil_rready) begin
        rvalid_q <= 1'b0;
      end
    end
  end

  // ---------------------------------------------------------------- assertions
  `ASSERT_RESET_START
  // AXI4-Lite slave rules (docs/verification.md): a response only for a request, held with its
  // payload until taken, one transaction outstanding per channel (so responses come in order).
  `ASSERT_PAST_RESET
  `ASSERT_PAST(f_past_b, 4, {bvalid_q, s_axil_bready, bresp_q})
  `ASSERT_PAST(f_past_r, 36, {rvalid_q, s_axil_rready, rresp_q, rdata_q})
  `ASSERT_PAST(f_past_req, 2, {wr_req_o, rd_req_o})
  `ASSERT(axil_b_only_after_request, !f_past_rst_n || !(bvalid_q && !f_past_b[3]) || f_past_req[1])
  `ASSERT(axil_r_only_after_request, !f_past_rst_n || !(rvalid_q && !f_past_r[35]) || f_past_req[0])
  `ASSERT(axil_b_held_until_ready, !f_past_rst_n || !(f_past_b[3] && !f_past_b[2]) ||
          (bvalid_q && bresp_q == f_past_b[1:0]))
  `ASSERT(axil_r_held_until_ready, !f_past_rst_n || !(f_past_r[35] && !f_past_r[34]) ||
          (rvalid_q && rresp_q == f_past_r[33:32] && rdata_q == f_past_r[31:0]))
  `ASSERT(axil_one_write_outstanding, !(wr_req_o && bvalid_q))
  `ASSERT(axil_one_read_outstanding, !(rd_req_o && rvalid_q))
  `ASSERT(axil_aw_w_together, s_axil_awready == s_axil_wready)
  `ASSERT(axil_ready_needs_valid, !(s_axil_awready && !(s_axil_awvalid && s_axil_wvalid)) &&
          !(s_axil_arready && !s_axil_arvalid))
  `ASSERT(axil_resp_legal, (bresp_q == RespOkay || bresp_q == RespSlverr) &&
          (rresp_q == RespOkay || rresp_q == RespSlverr))
  `ASSERT(axil_slverr_reads_zero, !(rvalid_q && rresp_q == RespSlverr) || rdata_q == 32'h0)
  `COVER(cov_axil_write_okay, s_axil_bvalid && s_axil_bready && s_axil_bresp == RespOkay)
  `COVER(cov_axil_write_slverr, s_axil_bvalid && s_axil_bready && s_axil_bresp == RespSlverr)
  `COVER(cov_axil_read_okay, s_axil_rvalid && s_axil_rready && s_axil_rresp == RespOkay)
  `COVER(cov_axil_read_slverr, s_axil_rvalid && s_axil_rready && s_axil_rresp == RespSlverr)
  `COVER(cov_axil_write_beats_read, s_axil_arvalid && wr_req_o)
  `COVER(cov_axil_b_backpressure, s_axil_bvalid && !s_axil_bready)

endmodule
