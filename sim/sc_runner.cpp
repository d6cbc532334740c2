#include "sc_runner.h"

#include <systemc>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace {
std::function<int()> g_body;
bool g_used = false;
}  // namespace

int sc_main(int, char*[]) { return g_body ? g_body() : 1; }

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
  return sc_core::sc_elab_and_sim(1, argv);
}

uint64_t next_batch(sc_core::sc_time period, uint64_t wanted) {
  while (sc_core::sc_pending_activity_at_current_time()) sc_core::wait(sc_core::SC_ZERO_TIME);
  uint64_t n = std::max<uint64_t>(1, wanted);
  if (sc_core::sc_pending_activity()) {
    uint64_t gap = sc_core::sc_time_to_pending_activity().value() / period.value();
    n = std::max<uint64_t>(1, std::min(n, gap));
  }
  return n;
}

}  // namespace mxtb::sim
