// `mxtb bench server`: simulated cycles per wall second of the whole emulated server (controller
// RTL, every lane's link layer, the mesh, XPU traffic and scoreboards, the firmware), under
// saturating traffic and through a reconfiguration (the thermo-optic mesh moving), for each engine
// and thread count side by side in one process, in the plain loop and under SystemC, with a
// breakdown of where step()'s time goes. docs/performance.md explains every figure.
#pragma once

#include "sim/server/server_sim.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace mxtb::app {

struct ServerBenchCase {
  sim::ServerEngine engine = sim::ServerEngine::Fast;
  int threads = 1;
};

struct ServerBenchConfig {
  protocol::ServerShape shape;            // every lane of every XPU carries a circuit
  uint64_t seed = 1;
  uint64_t traffic_cycles = 100000;       // measured under saturating traffic
  std::vector<ServerBenchCase> cases{{sim::ServerEngine::Reference, 1}, {sim::ServerEngine::Fast, 1}};
  int rounds = 2;                         // plain-loop runs per case, alternating case by case
  bool systemc = true;                    // one SystemC run: the fast engine on one thread if a case, else the last case
                                          // (SystemC elaborates once per process)
  bool breakdown = true;                  // one profiled plain-loop run per case
  std::string calibration_file;           // traces/calibration/meshN.json
};

// One measured phase of one run.
struct PhaseFigures {
  uint64_t cycles = 0;
  double wall_s = 0, cpu_s = 0;  // cpu: the process's, every thread's
  double cycles_per_s() const { return wall_s > 0 ? static_cast<double>(cycles) / wall_s : 0; }
};

struct ServerBenchRun {
  ServerBenchCase c;
  std::string harness;  // "loop" or "systemc"
  PhaseFigures traffic, reconfig;
  uint64_t messages = 0;  // delivered during the traffic phase
  std::string digest;     // transitions and link counters: equal digests, identical runs
  bool profiled = false;
  sim::ServerProfile traffic_profile, reconfig_profile;  // a profiled run's, per phase
};

// Speed on more threads than this machine has cores, predicted from what one profiled run per
// engine measured here (docs/performance.md derives it): per window of W clocks each thread runs
// its links (evaluation, XPU, receiver words) and saves their checkpoints, thread 0 also the
// controller, the light and the glue, then all hand off:
//   T(P) = max(thread 0, slowest other thread) + s(P),  s(P) = s(2) * P / 2
// (the coordinator reads one more done-flag per thread). Cycles per second = W / T(P). Costs are
// the profiled run's shares of its CPU time (a busy machine inflates wall time, not CPU time); s(2)
// is the fastest hand-off measured (a round in which both threads had a core).
struct ScalingModel {
  bool valid = false;
  int links = 0;
  double link_us = 0;           // one link's clock: evaluation, XPU traffic, its receiver's words
  double coordinator_us = 0;    // per clock: controller, light, photodiodes, glue
  double checkpoint_us = 0;     // one link's checkpoint, per speculative window (the fastest window's)
  double window_cycles = 0;     // mean window length under traffic, from the profiled threaded run
  double round_trip_us = 0;     // s(2): measured hand-off of an empty window between 2 threads (fastest round)
  double round_trip_p50_us = 0; // its median, for comparison
  struct Row {
    int threads;
    double cycles_per_s, speedup;
  };
  std::vector<Row> rows;
};

struct ServerBenchResult {
  ServerBenchConfig config;
  std::vector<ServerBenchRun> runs;  // timed runs in the order run, then the profiled ones
  bool identical = true;             // every run's digest equal
  unsigned hardware_threads = 0;
  ScalingModel scaling;              // when the breakdown ran with a one-thread and a threaded fast case
};

// The model above for `links` links from the profiles in `r` (traffic phase); rows for `threads`.
ScalingModel predict_scaling(const ServerBenchResult& r, int links, const std::vector<int>& threads);

// Throws std::invalid_argument on a bad configuration, std::runtime_error when the server does
// not come up (a circuit never trains). SystemC: at most once per process (config.systemc).
ServerBenchResult run_server_bench(const ServerBenchConfig& config);
nlohmann::json to_json(const ServerBenchResult& r);
// The best (fastest) timed plain-loop run of a case, or null.
const ServerBenchRun* best_run(const ServerBenchResult& r, const ServerBenchCase& c, const std::string& harness);

// The port map the bench programs: the tenant's 2x2 torus on XPUs 0-3 (placed as `order`), every
// other XPU's lanes paired with each other, so every link carries a circuit. Exposed for tests.
std::vector<int> bench_port_map(const protocol::ServerShape& shape, const std::vector<int>& order);

}  // namespace mxtb::app
