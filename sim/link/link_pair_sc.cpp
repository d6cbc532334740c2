#include "sim/link/link_pair_sc.h"

#include "sim/common/sc_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace mxtb::sim {

using sc_core::sc_time;
using sc_core::SC_NS;

sc_time clock_period(const LinkPair& pair) { return sc_time(pair.period_ns(), SC_NS); }

LinkPairSc::LinkPairSc(sc_core::sc_module_name name, LinkPair& pair, uint64_t max_batch)
    : sc_module(name), pair_(pair), max_batch_(std::max<uint64_t>(1, max_batch)) {
  SC_THREAD(clock_thread);
}

void LinkPairSc::clock_thread() {
  // Guarded: a failed RTL assertion in step() stops the run and reaches run_link_pair_sc's caller
  // as itself, not as SystemC's report of an uncaught exception.
  guard_process([this] {
    const sc_time period = clock_period(pair_);
    for (;;) {
      // Whatever else is due at this instant (a fault) happens before the harness acts.
      while (sc_core::sc_pending_activity_at_current_time()) wait(sc_core::SC_ZERO_TIME);
      pair_.act();
      if (pair_.finished()) {
        sc_core::sc_stop();
        return;
      }
      uint64_t n = next_batch(period, std::min(pair_.cycles_to_next_action(), max_batch_));
      pair_.step(n);
      ++batches_;
      wait(period * static_cast<double>(n));
    }
  });
}

FaultInjector::FaultInjector(sc_core::sc_module_name name, LinkPair& pair) : sc_module(name), pair_(pair) {
  SC_THREAD(run);
}

void FaultInjector::run() {
  const sc_time period = clock_period(pair_);
  for (const LinkAction& a : pair_.config().actions) {
    sc_time at = period * static_cast<double>(a.cycle);
    if (at > sc_core::sc_time_stamp()) wait(at - sc_core::sc_time_stamp());
    pair_.apply(a);
    ++applied_;
  }
}

ProgressMonitor::ProgressMonitor(sc_core::sc_module_name name, LinkPair& pair, uint64_t every_cycles)
    : sc_module(name), pair_(pair), every_(every_cycles) {
  SC_THREAD(run);
}

void ProgressMonitor::run() {
  const sc_time period = clock_period(pair_);
  for (;;) {
    wait(period * static_cast<double>(every_));
    std::fprintf(stderr, "  ... %s cycles (%.1f us simulated), A %s, B %s\n",
                 fmt::format("{:L}", pair_.cycle()).c_str(), pair_.cycle() * pair_.period_ns() / 1000.0,
                 std::string(link::to_string(pair_.state('a'))).c_str(),
                 std::string(link::to_string(pair_.state('b'))).c_str());
  }
}

LinkPairResult run_link_pair_sc(LinkPair& pair, const ScRunOptions& opt) {
  LinkPairSc harness("link_pair", pair, opt.max_batch);
  FaultInjector injector("fault_injector", pair);
  std::unique_ptr<ProgressMonitor> progress;
  if (opt.progress_every) progress = std::make_unique<ProgressMonitor>("progress", pair, opt.progress_every);
  sc_core::sc_start();
  rethrow_process_error();
  return pair.result();
}

}  // namespace mxtb::sim
