// Coverage builds of the verilated models (cmake -DMXTB_COVERAGE=ON, docs/coverage.md): every
// program that owns models writes their counters to a file of its own under $MXTB_COVERAGE_DIR, so
// parallel runs (regression seeds, test binaries) never share a file and `mxtb cover` merges them.
// In the ordinary build this does nothing.
#pragma once

class VerilatedContext;

namespace mxtb::rtl {

// Whether this program was built with coverage models.
bool coverage_build();

// Writes the context's coverage counters to $MXTB_COVERAGE_DIR/<what>-<pid>-<n>.dat (nothing when
// the variable is unset or this is no coverage build). The counters live inside the models, so
// this must run while they still exist.
void write_coverage(VerilatedContext& ctx, const char* what);

// Declared after the models of a context, so that it is destroyed, and writes, before them.
class CoverageDump {
 public:
  CoverageDump(VerilatedContext& ctx, const char* what) : ctx_(ctx), what_(what) {}
  CoverageDump(const CoverageDump&) = delete;
  CoverageDump& operator=(const CoverageDump&) = delete;
  ~CoverageDump() { write_coverage(ctx_, what_); }

 private:
  VerilatedContext& ctx_;
  const char* what_;
};

}  // namespace mxtb::rtl
