#include "sim/common/sc_runner.h"

#include <systemc>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <utility>

namespace {
std::function<int()> g_body;
bool g_used = false;
std::exception_ptr g_body_error;     // what the body threw, rethrown after sc_elab_and_sim
std::exception_ptr g_process_error;  // what a guarded process threw, rethrown after sc_start
}  // namespace

int sc_main(int, char*[]) {
  if (!g_body) return 1;
  try {
    return g_body();
  } catch (...) {
    g_body_error = std::current_exception();
    return 1;
  }
}

namespace mxtb::sim {

int run_under_systemc(std::function<int()> body) {
  if (g_used) throw std::logic_error("run_under_systemc: SystemC elaborates once per process");
  g_used = true;
  g_body = std::move(body);
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  // sc_stop() is how every run ends; its info message is noise.
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  char name[] = "mxtb";
  char* argv[] = {name, nullptr};
  int rc = sc_core::sc_elab_and_sim(1, argv);
  if (g_body_error) std::rethrow_exception(std::exchange(g_body_error, nullptr));
  return rc;
}

void guard_process(const std::function<void()>& body) {
  try {
    body();
  } catch (const sc_core::sc_unwind_exception&) {
    throw;  // SystemC killing or resetting the process: must pass through
  } catch (...) {
    if (!g_process_error) g_process_error = std::current_exception();
    sc_core::sc_stop();
  }
}

void rethrow_process_error() {
  if (g_process_error) std::rethrow_exception(std::exchange(g_process_error, nullptr));
}

uint64_t next_batch(sc_core::sc_time period, uint64_t wanted, int max_yields) {
  for (int yields = 0; sc_core::sc_pending_activity_at_current_time() && (max_yields < 0 || yields < max_yields); ++yields)
    sc_core::wait(sc_core::SC_ZERO_TIME);
  uint64_t n = std::max<uint64_t>(1, wanted);
  if (sc_core::sc_pending_activity()) {
    uint64_t gap = sc_core::sc_time_to_pending_activity().value() / period.value();
    n = std::max<uint64_t>(1, std::min(n, gap));
  }
  return n;
}

}  // namespace mxtb::sim
