// Assertion macros for the RTL: one spelling, expanded per tool.
//
//   `ASSERT(name, prop)        prop holds at every rising clock edge out of reset
//   `ASSERT_NEVER(name, prop)  prop never holds there
//   `ASSUME(name, prop)        what the environment promises (formal: a constraint; simulation:
//                              checked like an assertion, so a testbench breaking it is caught)
//   `ASSERT_RESET_START        once per module: formal runs start in reset (every register at
//                              its reset value); nothing elsewhere
//   `ASSERT_PAST(name, width, expr)   a register `name` holding expr from the previous edge: what
//                              $past(expr) means, for properties to use instead of $past and
//                              $stable (Verilator 5.006 samples $past of a combinational
//                              expression after the edge when its inputs change in the same
//                              eval() as the clock, which the emulator does)
//   `ASSERT_PAST_RESET         declares f_past_rst_n: low at the first edge out of reset (the
//                              guard for ASSERT_PAST values, which hold reset-time values then)
//   `COVER(name, prop)         a point coverage counts (Verilator --coverage-user) and formal
//                              cover mode can reach
//
// prop is a boolean expression sampled at the clock edge; $past() and $stable() refer to the
// previous edge in the formal tools; the RTL uses ASSERT_PAST registers instead. It may contain commas inside parentheses. The clock and active-low reset are
// clk_i and rst_ni unless a module defines ASSERT_CLK / ASSERT_RST_N before including this file.
//
// Expansions:
//   FORMAL (Yosys read_verilog -formal): immediate assert/assume/cover in always @(posedge clk),
//     which yosys-smtbmc proves. Checked before SYNTHESIS because Yosys defines both.
//   VERILATOR (needs --assert): assertions and assumptions as immediate assertions in
//     always @(posedge clk), covers as `cover property` (counted by --coverage-user); a failure
//     prints its name, the instance and the time, and stops the model (the C++ side reports the
//     rerun command).
//   SYNTHESIS, MXTB_ASSERT_OFF (the models `bench link` compares against), Icarus and anything
//   else: nothing.
// MXTB_ASSERT_ON is defined when assertions are compiled, for the small shadow models some
// properties need: they sit under `ifdef MXTB_ASSERT_ON and never reach synthesis.
`ifndef MXTB_ASSERT_SVH
`define MXTB_ASSERT_SVH

`ifndef ASSERT_CLK
`define ASSERT_CLK clk_i
`endif
`ifndef ASSERT_RST_N
`define ASSERT_RST_N rst_ni
`endif

`ifdef MXTB_ASSERT_OFF
  `define ASSERT(name, prop)
  `define ASSUME(name, prop)
  `define COVER(name, prop)
`elsif FORMAL
  `define MXTB_ASSERT_ON
  `define ASSERT(name, prop) \
    always @(posedge `ASSERT_CLK) if (`ASSERT_RST_N) name: assert (prop);
  `define ASSUME(name, prop) \
    always @(posedge `ASSERT_CLK) if (`ASSERT_RST_N) name: assume (prop);
  `define COVER(name, prop) \
    always @(posedge `ASSERT_CLK) if (`ASSERT_RST_N) name: cover (prop);
  `define ASSERT_RESET_START initial assume (!`ASSERT_RST_N);
`elsif SYNTHESIS
  `define ASSERT(name, prop)
  `define ASSUME(name, prop)
  `define COVER(name, prop)
`elsif VERILATOR
  `define MXTB_ASSERT_ON
  // Immediate assertions in a clocked block: the same sampling as a concurrent property (values
  // before the edge), but Verilator 5.006 miscompiles the sampled copies of wide vectors that
  // concurrent properties make, and these cost less per cycle.
  `define ASSERT(name, prop) \
    /*verilator lint_off SYNCASYNCNET*/ always @(posedge `ASSERT_CLK) if (`ASSERT_RST_N) name: assert (prop) \
      else $error("assertion %s failed", `"name`"); /*verilator lint_on SYNCASYNCNET*/
  `define ASSUME(name, prop) \
    /*verilator lint_off SYNCASYNCNET*/ always @(posedge `ASSERT_CLK) if (`ASSERT_RST_N) name: assume (prop) \
      else $error("assumption %s failed", `"name`"); /*verilator lint_on SYNCASYNCNET*/
  `define COVER(name, prop) \
    /*verilator lint_off SYNCASYNCNET*/ name: cover property (@(posedge `ASSERT_CLK) disable iff (!`ASSERT_RST_N) (prop)) /*verilator lint_on SYNCASYNCNET*/;
`else
  `define ASSERT(name, prop)
  `define ASSUME(name, prop)
  `define COVER(name, prop)
`endif

`ifndef ASSERT_RESET_START
  `define ASSERT_RESET_START
`endif
`ifdef MXTB_ASSERT_ON
  `define ASSERT_PAST(name, width, expr) \
    logic [(width)-1:0] name; \
    always_ff @(posedge `ASSERT_CLK) name <= (expr);
  `define ASSERT_PAST_RESET \
    logic f_past_rst_n; \
    always_ff @(posedge `ASSERT_CLK or negedge `ASSERT_RST_N) \
      if (!`ASSERT_RST_N) f_past_rst_n <= 1'b0; else f_past_rst_n <= 1'b1;
`else
  `define ASSERT_PAST(name, width, expr)
  `define ASSERT_PAST_RESET
`endif
`define ASSERT_NEVER(name, prop) `ASSERT(name, !(prop))

`endif
