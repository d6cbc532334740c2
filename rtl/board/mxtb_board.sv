// The board's FPGA top: what a Morphlux board runs between its UDP core and its photonics. Its
// IPbus side (board_bus.sv: the transactor, the AXI4-Lite decoder, the scratch RAM as a block RAM,
// and in the emulator only, EMU_PORT, a port out to the emulator's control block) and the board's
// firmware processor (its AXI4-Lite master, the s_fw_* port) share the optical switch controller's
// register slave through axil_arbiter.sv; the controller's DAC, photodiode and link ports are the
// top's. docs/board.md.
`include "axi_ports.svh"

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
  `AXIS_SINK_PORTS(s_axis_),
  `AXIS_SOURCE_PORTS(m_axis_),
  output logic                 stat_valid_o,
  output logic [1:0]           stat_kind_o,
  output logic [3:0]           stat_fault_o,
  // the firmware processor's AXI4-Lite master (byte addresses within the controller's window)
  `AXIL_SLAVE_PORTS(s_fw_, [31:0]),
  // the controller's physical ports
  output logic                 dac_valid_o,
  output logic [7:0]           dac_elem_o,
  output logic [DAC_BITS-1:0]  dac_code_o,
  output logic                 pd_req_o,
  output logic [5:0]           pd_port_o,
  input  logic                 pd_valid_i,
  input  logic [15:0]          pd_dbm_i,
  input  logic [7:0]           xpu_base_i,    // straps: the board's first XPU number in its rack (0 alone)
  input  logic [N_LINKS*4-1:0] link_state_i,
  input  logic [N_LINKS*4-1:0] link_reason_i,
  output logic                 irq_o,
  output logic                 safe_o,
  output logic [N_LINKS-1:0]   link_check_o,
  output logic [N_LINKS*8-1:0] link_expect_xpu_o,
  output logic [N_LINKS*8-1:0] link_expect_lane_o,
  output logic [N_LINKS-1:0]   link_retrain_o,
  // the emulator's control block (EMU_PORT; byte addresses within the block), AXI4-Lite master
  `AXIL_MASTER_PORTS_NO_WSTRB(m_emu_)
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

  // The IPbus side (master 0) and the firmware (master 1) onto the controller's register slave.
  logic [1:0] arb_bresp, arb_rresp;
  logic [31:0] arb_rdata;
  logic [1:0] arb_awready, arb_wready, arb_bvalid, arb_arready, arb_rvalid;
  /* verilator lint_off UNUSEDSIGNAL */  // the controller's window is 64 KiB: its port takes 16 bits
  logic [31:0] reg_awaddr, reg_araddr;
  /* verilator lint_on UNUSEDSIGNAL */
  logic [31:0] reg_wdata, reg_rdata;
  logic [3:0] reg_wstrb;
  logic reg_awvalid, reg_awready, reg_wvalid, reg_wready, reg_bvalid, reg_bready;
  logic reg_arvalid, reg_arready, reg_rvalid, reg_rready;
  logic [1:0] reg_bresp, reg_rresp;

  axil_arbiter u_arb (
    .clk_i, .rst_ni,
    .s_awaddr({s_fw_awaddr, ctrl_awaddr}), .s_awvalid({s_fw_awvalid, ctrl_awvalid}), .s_awready(arb_awready),
    .s_wdata({s_fw_wdata, ctrl_wdata}), .s_wstrb({s_fw_wstrb, ctrl_wstrb}), .s_wvalid({s_fw_wvalid, ctrl_wvalid}),
    .s_wready(arb_wready), .s_bresp(arb_bresp), .s_bvalid(arb_bvalid), .s_bready({s_fw_bready, ctrl_bready}),
    .s_araddr({s_fw_araddr, ctrl_araddr}), .s_arvalid({s_fw_arvalid, ctrl_arvalid}), .s_arready(arb_arready),
    .s_rdata(arb_rdata), .s_rresp(arb_rresp), .s_rvalid(arb_rvalid), .s_rready({s_fw_rready, ctrl_rready}),
    .m_awaddr(reg_awaddr), .m_awvalid(reg_awvalid), .m_awready(reg_awready), .m_wdata(reg_wdata), .m_wstrb(reg_wstrb),
    .m_wvalid(reg_wvalid), .m_wready(reg_wready), .m_bresp(reg_bresp), .m_bvalid(reg_bvalid), .m_bready(reg_bready),
    .m_araddr(reg_araddr), .m_arvalid(reg_arvalid), .m_arready(reg_arready), .m_rdata(reg_rdata), .m_rresp(reg_rresp),
    .m_rvalid(reg_rvalid), .m_rready(reg_rready));
  assign {s_fw_awready, ctrl_awready} = arb_awready;
  assign {s_fw_wready, ctrl_wready} = arb_wready;
  assign {s_fw_bvalid, ctrl_bvalid} = arb_bvalid;
  assign {s_fw_arready, ctrl_arready} = arb_arready;
  assign {s_fw_rvalid, ctrl_rvalid} = arb_rvalid;
  assign s_fw_bresp = arb_bresp;
  assign ctrl_bresp = arb_bresp;
  assign s_fw_rresp = arb_rresp;
  assign ctrl_rresp = arb_rresp;
  assign s_fw_rdata = arb_rdata;
  assign ctrl_rdata = arb_rdata;

  ocs_controller #(.N_PORTS(N_PORTS), .N_ELEMS(N_ELEMS), .DAC_BITS(DAC_BITS), .N_LINKS(N_LINKS)) u_ctrl (
    .clk_i, .rst_ni,
    .s_axil_awaddr(reg_awaddr[15:0]), .s_axil_awvalid(reg_awvalid), .s_axil_awready(reg_awready),
    .s_axil_wdata(reg_wdata), .s_axil_wstrb(reg_wstrb), .s_axil_wvalid(reg_wvalid), .s_axil_wready(reg_wready),
    .s_axil_bresp(reg_bresp), .s_axil_bvalid(reg_bvalid), .s_axil_bready(reg_bready),
    .s_axil_araddr(reg_araddr[15:0]), .s_axil_arvalid(reg_arvalid), .s_axil_arready(reg_arready),
    .s_axil_rdata(reg_rdata), .s_axil_rresp(reg_rresp), .s_axil_rvalid(reg_rvalid), .s_axil_rready(reg_rready),
    .dac_valid_o, .dac_elem_o, .dac_code_o, .pd_req_o, .pd_port_o, .pd_valid_i, .pd_dbm_i,
    .xpu_base_i, .link_state_i, .link_reason_i, .irq_o, .safe_o,
    .link_check_o, .link_expect_xpu_o, .link_expect_lane_o, .link_retrain_o);
endmodule
