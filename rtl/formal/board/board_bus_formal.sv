// Formal harness of the board's IPbus side (rtl/board/board_bus.sv): reset in the first cycle, then
// every input free (the request stream within the transactor's assumptions on tkeep; the
// controller's and the emulator block's slaves and the reply sink arbitrary), so ABC's bounded
// check explores every datagram and every behaviour of the slaves behind the decoder up to its
// depth. The parameters are the harness's own (Yosys 0.23 fails on chparam of a top whose
// submodules take them). rtl/formal/formal.sh, groups board_bus_small (as the emulator runs it,
// EMU_PORT 1) and board_bus_board (as a board does: no emulator block, its window refused).
module board_bus_formal #(
  parameter bit EMU_PORT = 1'b1,
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
  input  logic        m_ctrl_awready,
  input  logic        m_ctrl_wready,
  input  logic [1:0]  m_ctrl_bresp,
  input  logic        m_ctrl_bvalid,
  input  logic        m_ctrl_arready,
  input  logic [31:0] m_ctrl_rdata,
  input  logic [1:0]  m_ctrl_rresp,
  input  logic        m_ctrl_rvalid,
  input  logic        m_emu_awready,
  input  logic        m_emu_wready,
  input  logic [1:0]  m_emu_bresp,
  input  logic        m_emu_bvalid,
  input  logic        m_emu_arready,
  input  logic [31:0] m_emu_rdata,
  input  logic [1:0]  m_emu_rresp,
  input  logic        m_emu_rvalid
);
  logic rst_ni = 1'b0;
  always_ff @(posedge clk_i) rst_ni <= 1'b1;

  board_bus #(.EMU_PORT(EMU_PORT), .N_BUFFERS(N_BUFFERS), .MTU_BYTES(MTU_BYTES), .RAM_WORDS(RAM_WORDS), .AXI_TIMEOUT(AXI_TIMEOUT)) dut (
    .clk_i, .rst_ni,
    .s_axis_tdata, .s_axis_tkeep, .s_axis_tlast, .s_axis_tvalid, .s_axis_tready(),
    .m_axis_tdata(), .m_axis_tlast(), .m_axis_tvalid(), .m_axis_tready,
    .stat_valid_o(), .stat_kind_o(), .stat_fault_o(),
    .m_ctrl_awaddr(), .m_ctrl_awvalid(), .m_ctrl_awready, .m_ctrl_wdata(), .m_ctrl_wstrb(), .m_ctrl_wvalid(),
    .m_ctrl_wready, .m_ctrl_bresp, .m_ctrl_bvalid, .m_ctrl_bready(), .m_ctrl_araddr(), .m_ctrl_arvalid(),
    .m_ctrl_arready, .m_ctrl_rdata, .m_ctrl_rresp, .m_ctrl_rvalid, .m_ctrl_rready(),
    .m_emu_awaddr(), .m_emu_awvalid(), .m_emu_awready, .m_emu_wdata(), .m_emu_wvalid(), .m_emu_wready,
    .m_emu_bresp, .m_emu_bvalid, .m_emu_bready(), .m_emu_araddr(), .m_emu_arvalid(), .m_emu_arready,
    .m_emu_rdata, .m_emu_rresp, .m_emu_rvalid, .m_emu_rready());
endmodule
