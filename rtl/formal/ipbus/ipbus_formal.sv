// Formal harness of the IPbus transactor: reset in the first cycle, then every input free (the
// request stream within the transactor's own assumptions on tkeep; the AXI4-Lite slave and the
// reply sink arbitrary), so ABC's bounded check explores every datagram and bus behaviour up to
// its depth. rtl/formal/formal.sh, group ipbus_small.
module ipbus_formal #(
  parameter int N_BUFFERS = 2,
  parameter int MTU_BYTES = 32,
  parameter int RAM_WORDS = 4,
  parameter int AXI_TIMEOUT = 3
) (
  input  logic        clk_i,
  input  logic [31:0] s_axis_tdata,
  input  logic [3:0]  s_axis_tkeep,
  input  logic        s_axis_tlast,
  input  logic        s_axis_tvalid,
  input  logic        m_axis_tready,
  input  logic        m_axil_awready,
  input  logic        m_axil_wready,
  input  logic [1:0]  m_axil_bresp,
  input  logic        m_axil_bvalid,
  input  logic        m_axil_arready,
  input  logic [31:0] m_axil_rdata,
  input  logic [1:0]  m_axil_rresp,
  input  logic        m_axil_rvalid
);
  logic rst_ni = 1'b0;
  always_ff @(posedge clk_i) rst_ni <= 1'b1;

  ipbus_transactor #(.N_BUFFERS(N_BUFFERS), .MTU_BYTES(MTU_BYTES), .RAM_WORDS(RAM_WORDS), .AXI_TIMEOUT(AXI_TIMEOUT)) dut (
    .clk_i, .rst_ni,
    .s_axis_tdata, .s_axis_tkeep, .s_axis_tlast, .s_axis_tvalid, .s_axis_tready(),
    .m_axis_tdata(), .m_axis_tlast(), .m_axis_tvalid(), .m_axis_tready,
    .stat_valid_o(), .stat_kind_o(), .stat_fault_o(),
    .m_axil_awaddr(), .m_axil_awvalid(), .m_axil_awready, .m_axil_wdata(), .m_axil_wstrb(), .m_axil_wvalid(),
    .m_axil_wready, .m_axil_bresp, .m_axil_bvalid, .m_axil_bready(), .m_axil_araddr(), .m_axil_arvalid(),
    .m_axil_arready, .m_axil_rdata, .m_axil_rresp, .m_axil_rvalid, .m_axil_rready());
endmodule
