// The one way into the SystemC kernel: elaboration and simulation happen once per process, so
// every command that needs SystemC hands its body to run_under_systemc().
#pragma once

#include <functional>

namespace mxtb::sim {

// Runs body inside sc_main (through sc_elab_and_sim). Returns body's result, or 1 when SystemC
// reported an error. May be called once per process.
int run_under_systemc(std::function<int()> body);

}  // namespace mxtb::sim
