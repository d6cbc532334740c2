// What a failed RTL assertion does to a run (rtl/common/mxtb_assert.svh, docs/verification.md).
//
// The models are built with assertions on. Verilator prints a failed one's name, instance and
// time, then stops the model; by default it aborts the process, which would lose the cycle and
// the command line. catch_assertions() turns that into an error flag, check_assertions() (after
// each cycle) into an RtlAssertionFailure carrying the cycle, and the program prints the command
// that reruns the run with a waveform up to it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace mxtb::sim {

class RtlAssertionFailure : public std::runtime_error {
 public:
  explicit RtlAssertionFailure(uint64_t cycle)
      : std::runtime_error("RTL assertion failed by cycle " + std::to_string(cycle) +
                           " (Verilator's %Error line above names it and its instance)"),
        cycle_(cycle) {}
  uint64_t cycle() const { return cycle_; }

 private:
  uint64_t cycle_;
};

// Ctx: VerilatedContext (a template so this header needs no Verilator include path).
template <class Ctx>
void catch_assertions(Ctx& ctx) {
  ctx.fatalOnError(false);
}

template <class Ctx>
void check_assertions(const Ctx& ctx, uint64_t cycle) {
  if (ctx.gotError()) [[unlikely]]
    throw RtlAssertionFailure(cycle);
}

}  // namespace mxtb::sim
