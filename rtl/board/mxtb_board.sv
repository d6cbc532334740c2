// The board's FPGA top: what a Morphlux board runs between its UDP core and its photonics. Its
// IPbus side (board_bus.sv: the transactor, the AXI4-Lite decoder, the scratch RAM as a block RAM,
// and in the emulator only, EMU_PORT, a port out to the emulator's control block) masters the
// optical switch controller (rtl/ocs) through its register slave; the controller's DAC, photodiode
// and link ports are the top's. docs/board.md.

module mxtb_board #(
  parameter bit EMU_PORT  = 1'b1,   // the emulator's control block on the bus (0 on a board)
  parameter int RAM_WORDS = 4096,
  parameter int N_BUFFERS = 16,
  parameter int N_PORTS   = 32,
  parameter int N_ELEMS   = 144,
  parameter int DAC_BITS  = 12,
  parameter int N_LINKS   = 20
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  // the UDP core's payloads (AXI4-Stream), as ipbus_transactor takes and gives them
  input  logic [31:0]          s_axis_tdata,
  input  logic [3:0]           s_axis_tkeep,
  input  logic                 s_axis_tlast,
  input  logic                 s_axis_tvalid,
  output logic                 s_axis_tready,
  output logic [31:0]          m_axis_tdata,
  output logic                 m_axis_tlast,
  output logic                 m_axis_tvalid,
  input  logic                 m_axis_tready,
  output logic                 stat_valid_o,
  output logic [1:0]           stat_kind_o,
  output logic [3:0]           stat_fault_o,
  // the controller's physical ports
  output logic                 dac_valid_o,
  output logic [7:0]           dac_elem_o,
  output logic [DAC_BITS-1:0]  dac_code_o,
  output logic                 pd_req_o,
  output logic [5:0]           pd_port_o,
  input  logic                 pd_valid_i,
  input  logic [15:0]          pd_dbm_i,
  input  logic [N_LINKS*4-1:0] link_state_i,
  input  logic [N_LINKS*4-1:0] link_reason_i,
  output logic                 irq_o,
  output logic                 safe_o,
  output logic [N_LINKS-1:0]   link_check_o,
  output logic [N_LINKS*8-1:0] link_expect_xpu_o,
  output logic [N_LINKS*8-1:0] link_expect_lane_o,
  output logic [N_LINKS-1:0]   link_retrain_o,
  // the emulator's control block (EMU_PORT; byte addresses within the block), AXI4-Lite master
  output logic [31:0]          m_emu_awaddr,
  output logic                 m_emu_awvalid,
  input  logic                 m_emu_awready,
  output logic [31:0]          m_emu_wdata,
  output logic                 m_emu_wvalid,
  input  logic                 m_emu_wready,
  input  logic [1:0]           m_emu_bresp,
  input  logic                 m_emu_bvalid,
  output logic                 m_emu_bready,
  output logic [31:0]          m_emu_araddr,
  output logic                 m_emu_arvalid,
  input  logic                 m_emu_arready,
  input  logic [31:0]          m_emu_rdata,
  input  logic [1:0]           m_emu_rresp,
  input  logic                 m_emu_rvalid,
  output logic                 m_emu_rready
);
  logic [31:0] ctrl_awaddr, ctrl_wdata, ctrl_araddr, ctrl_rdata;
  logic [3:0] ctrl_wstrb;
  logic ctrl_awvalid, ctrl_awready, ctrl_wvalid, ctrl_wready, ctrl_bvalid, ctrl_bready;
  logic ctrl_arvalid, ctrl_arready, ctrl_rvalid, ctrl_rready;
  logic [1:0] ctrl_bresp, ctrl_rresp;

  board_bus #(.EMU_PORT(EMU_PORT), .RAM_WORDS(RAM_WORDS), .N_BUFFERS(N_BUFFERS)) u_bus (
    .clk_i, .rst_ni,
    .s_axis_tdata, .s_axis_tkeep, .s_axis_tlast, .s_axis_tvalid, .s_axis_tready,
    .m_axis_tdata, .m_axis_tlast, .m_axis_tvalid, .m_axis_tready,
    .stat_valid_o, .stat_kind_o, .stat_fault_o,
    .m_ctrl_awaddr(ctrl_awaddr), .m_ctrl_awvalid(ctrl_awvalid), .m_ctrl_awready(ctrl_awready),
    .m_ctrl_wdata(ctrl_wdata), .m_ctrl_wstrb(ctrl_wstrb), .m_ctrl_wvalid(ctrl_wvalid), .m_ctrl_wready(ctrl_wready),
    .m_ctrl_bresp(ctrl_bresp), .m_ctrl_bvalid(ctrl_bvalid), .m_ctrl_bready(ctrl_bready),
    .m_ctrl_araddr(ctrl_araddr), .m_ctrl_arvalid(ctrl_arvalid), .m_ctrl_arready(ctrl_arready),
    .m_ctrl_rdata(ctrl_rdata), .m_ctrl_rresp(ctrl_rresp), .m_ctrl_rvalid(ctrl_rvalid), .m_ctrl_rready(ctrl_rready),
    .m_emu_awaddr, .m_emu_awvalid, .m_emu_awready, .m_emu_wdata, .m_emu_wvalid, .m_emu_wready,
    .m_emu_bresp, .m_emu_bvalid, .m_emu_bready, .m_emu_araddr, .m_emu_arvalid, .m_emu_arready,
    .m_emu_rdata, .m_emu_rresp, .m_emu_rvalid, .m_emu_rready);

  /* verilator lint_off UNUSEDSIGNAL */  // the controller's window is 64 KiB: its port takes 16 bits
  logic [15:0] ctrl_awaddr_hi, ctrl_araddr_hi;
  /* verilator lint_on UNUSEDSIGNAL */
  assign ctrl_awaddr_hi = ctrl_awaddr[31:16];
  assign ctrl_araddr_hi = ctrl_araddr[31:16];

  ocs_controller #(.N_PORTS(N_PORTS), .N_ELEMS(N_ELEMS), .DAC_BITS(DAC_BITS), .N_LINKS(N_LINKS)) u_ctrl (
    .clk_i, .rst_ni,
    .s_axil_awaddr(ctrl_awaddr[15:0]), .s_axil_awvalid(ctrl_awvalid), .s_axil_awready(ctrl_awready),
    .s_axil_wdata(ctrl_wdata), .s_axil_wstrb(ctrl_wstrb), .s_axil_wvalid(ctrl_wvalid), .s_axil_wready(ctrl_wready),
    .s_axil_bresp(ctrl_bresp), .s_axil_bvalid(ctrl_bvalid), .s_axil_bready(ctrl_bready),
    .s_axil_araddr(ctrl_araddr[15:0]), .s_axil_arvalid(ctrl_arvalid), .s_axil_arready(ctrl_arready),
    .s_axil_rdata(ctrl_rdata), .s_axil_rresp(ctrl_rresp), .s_axil_rvalid(ctrl_rvalid), .s_axil_rready(ctrl_rready),
    .dac_valid_o, .dac_elem_o, .dac_code_o, .pd_req_o, .pd_port_o, .pd_valid_i, .pd_dbm_i,
    .link_state_i, .link_reason_i, .irq_o, .safe_o,
    .link_check_o, .link_expect_xpu_o, .link_expect_lane_o, .link_retrain_o);
endmodule
