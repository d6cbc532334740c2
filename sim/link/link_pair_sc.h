// The link pair under SystemC. Simulated time is the master clock: cycle n happens at n x the
// clock period. One SC_THREAD advances the verilated RTL in batches, each ending where any other
// SystemC process has something scheduled (sc_time_to_pending_activity), so the fault injector,
// the progress monitor and later the socket bridge act at cycle-exact times without an sc_clock
// waking every port every cycle. Measured against the plain loop in `mxtb bench link`.
#pragma once

#include "sim/link/link_pair.h"

#include <systemc>

#include <cstdint>

namespace mxtb::sim {

sc_core::sc_time clock_period(const LinkPair& pair);

class LinkPairSc : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(LinkPairSc);
  LinkPairSc(sc_core::sc_module_name name, LinkPair& pair, uint64_t max_batch);
  uint64_t batches() const { return batches_; }

 private:
  void clock_thread();
  LinkPair& pair_;
  uint64_t max_batch_;
  uint64_t batches_ = 0;
};

// Applies the scenario's faults and control actions at their simulated times.
class FaultInjector : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(FaultInjector);
  FaultInjector(sc_core::sc_module_name name, LinkPair& pair);
  uint64_t applied() const { return applied_; }

 private:
  void run();
  LinkPair& pair_;
  uint64_t applied_ = 0;
};

// Prints a progress line every `every_cycles` of simulated time.
class ProgressMonitor : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(ProgressMonitor);
  ProgressMonitor(sc_core::sc_module_name name, LinkPair& pair, uint64_t every_cycles);

 private:
  void run();
  LinkPair& pair_;
  uint64_t every_;
};

struct ScRunOptions {
  uint64_t max_batch = 1000;
  uint64_t progress_every = 0;  // 0: no progress lines
};

// Elaborates the harness and runs the scenario to its end; call inside run_under_systemc().
LinkPairResult run_link_pair_sc(LinkPair& pair, const ScRunOptions& opt);

}  // namespace mxtb::sim
