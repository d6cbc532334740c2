// The AXI4-Lite and AXI4-Stream port lists of the RTL's modules, written once. Each macro expands
// to ANSI port declarations named PREFIX followed by the signal's name (PREFIX awaddr, PREFIX
// awvalid, ...), in the order below, with no comma after the last: a module writes
//
//   `AXIL_SLAVE_PORTS(s_axil_, [15:0]),
//
// where it would spell out the 17 ports. The names, widths and order are the ones the verilated
// tops' C++ ports (m.s_axil_awaddr), the proofs and the other simulators see: macros, not packed
// structs or interfaces, so that none of those changes (Yosys 0.23 and Icarus 11 take them).
//
//   `AXIL_SLAVE_PORTS(p, ADDR)     an AXI4-Lite slave: ADDR is the address's packed range, e.g.
//                                  [31:0]; 32-bit data, write strobes, 2-bit responses
//   `AXIL_MASTER_PORTS(p)          an AXI4-Lite master with 32-bit addresses
//   `AXIL_MASTER_PORTS_NO_WSTRB(p) the same without write strobes (the emulator's control block,
//                                  written a whole word at a time)
//   `AXIS_SINK_PORTS(p)            an AXI4-Stream sink: 32-bit tdata, tkeep, tlast, tvalid, tready
//   `AXIS_SOURCE_PORTS(p)          an AXI4-Stream source of whole words: tdata, tlast, tvalid,
//                                  tready (no tkeep)
//
// Every port of one macro has the line the macro is used on, in Verilator's messages, its coverage
// points and (by name within that line) the order of an FST trace's signals.
//
// Lint waivers: one around a macro would cover all its ports. A module that leaves some bits
// unused by design waives them by name in a verilator_config block at its end (ipbus_transactor.sv:
// as Verilator 5.006 takes only the first lint_off of such a block, one pattern must name them
// all); board_ram.sv, whose unused address and strobe bits no one pattern names alone, keeps its
// ports written out with their waivers.
`ifndef MXTB_AXI_PORTS_SVH
`define MXTB_AXI_PORTS_SVH

// One channel each, with its directions as arguments: m2s for the master's outputs (input on a
// slave, output on a master), s2m for the slave's.
`define AXIL_AW_PORTS(p, m2s, s2m, ADDR) \
  m2s logic ADDR   p``awaddr, \
  m2s logic        p``awvalid, \
  s2m logic        p``awready
`define AXIL_W_PORTS(p, m2s, s2m) \
  m2s logic [31:0] p``wdata, \
  m2s logic [3:0]  p``wstrb, \
  m2s logic        p``wvalid, \
  s2m logic        p``wready
`define AXIL_W_PORTS_NO_WSTRB(p, m2s, s2m) \
  m2s logic [31:0] p``wdata, \
  m2s logic        p``wvalid, \
  s2m logic        p``wready
`define AXIL_B_PORTS(p, m2s, s2m) \
  s2m logic [1:0]  p``bresp, \
  s2m logic        p``bvalid, \
  m2s logic        p``bready
`define AXIL_AR_PORTS(p, m2s, s2m, ADDR) \
  m2s logic ADDR   p``araddr, \
  m2s logic        p``arvalid, \
  s2m logic        p``arready
`define AXIL_R_PORTS(p, m2s, s2m) \
  s2m logic [31:0] p``rdata, \
  s2m logic [1:0]  p``rresp, \
  s2m logic        p``rvalid, \
  m2s logic        p``rready

`define AXIL_SLAVE_PORTS(p, ADDR) \
  `AXIL_AW_PORTS(p, input, output, ADDR), `AXIL_W_PORTS(p, input, output), `AXIL_B_PORTS(p, input, output), \
  `AXIL_AR_PORTS(p, input, output, ADDR), `AXIL_R_PORTS(p, input, output)
`define AXIL_MASTER_PORTS(p) \
  `AXIL_AW_PORTS(p, output, input, [31:0]), `AXIL_W_PORTS(p, output, input), `AXIL_B_PORTS(p, output, input), \
  `AXIL_AR_PORTS(p, output, input, [31:0]), `AXIL_R_PORTS(p, output, input)
`define AXIL_MASTER_PORTS_NO_WSTRB(p) \
  `AXIL_AW_PORTS(p, output, input, [31:0]), `AXIL_W_PORTS_NO_WSTRB(p, output, input), \
  `AXIL_B_PORTS(p, output, input), `AXIL_AR_PORTS(p, output, input, [31:0]), `AXIL_R_PORTS(p, output, input)

`define AXIS_SINK_PORTS(p) \
  input  logic [31:0] p``tdata, \
  input  logic [3:0]  p``tkeep, \
  input  logic        p``tlast, \
  input  logic        p``tvalid, \
  output logic        p``tready

`define AXIS_SOURCE_PORTS(p) \
  output logic [31:0] p``tdata, \
  output logic        p``tlast, \
  output logic        p``tvalid, \
  input  logic        p``tready

`endif
