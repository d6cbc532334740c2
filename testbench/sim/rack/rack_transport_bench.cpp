// What one window's exchange costs over the rack's MPI transport, run under hydra:
//   mpiexec -n <P> -bind-to none rack_transport_bench [--windows N] [--bytes B] [--busy-poll]
//           [--json FILE]
// Every process exchanges B bytes with every other process once a window, with no work between
// windows: the transport's own cost, the floor of a window in the rack's projection. Rank 0 prints
// the figures (per window: min, p50, p99, mean, in us; the whole run's wall time) and writes them as
// JSON. --busy-poll waits as MPI's blocking calls do (spinning, never sleeping), to measure what
// yielding saves when processes outnumber cores.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/rack/mpi_exchange.h"

namespace rack = mxtb::sim::rack;

namespace {

struct BenchArgs {
  uint64_t windows = 20000;
  size_t bytes = 64;
  bool busy_poll = false;
  std::string json;
};

BenchArgs parse(int argc, char** argv) {
  BenchArgs a;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--windows") {
      a.windows = std::stoull(value());
    } else if (arg == "--bytes") {
      a.bytes = std::stoull(value());
    } else if (arg == "--busy-poll") {
      a.busy_poll = true;
    } else if (arg == "--json") {
      a.json = value();
    } else {
      throw std::invalid_argument("unknown option '" + arg + "' (--windows N, --bytes B, --busy-poll, --json FILE)");
    }
  }
  if (a.windows < 1) throw std::invalid_argument("--windows: at least 1");
  return a;
}

double percentile(const std::vector<double>& sorted, double p) {
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * static_cast<double>(sorted.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  BenchArgs args;
  try {
    args = parse(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "rack_transport_bench: {}\n", e.what());
    return 64;
  }
  rack::MpiExchangeOptions options;
  options.busy_poll = args.busy_poll;
  options.peer_timeout_s = 60;
  auto ex = rack::make_mpi_exchange(options);
  const int rank = ex->rank(), size = ex->size();
  ex->introduce(fmt::format("bench process {}", rank));
  std::vector<int> peers;
  for (int r = 0; r < size; ++r)
    if (r != rank) peers.push_back(r);
  ex->set_peers(peers);
  std::vector<std::vector<uint8_t>> outbox(static_cast<size_t>(size), std::vector<uint8_t>(args.bytes, static_cast<uint8_t>(rank)));

  std::vector<double> us;
  us.reserve(args.windows);
  ex->min_all(0);  // start together
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t w = 0; w < args.windows; ++w) {
    auto t0 = std::chrono::steady_clock::now();
    ex->exchange(outbox);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ex->min_all(0);
  if (rank != 0) return 0;

  std::sort(us.begin(), us.end());
  const double mean = std::accumulate(us.begin(), us.end(), 0.0) / static_cast<double>(us.size());
  const unsigned cores = std::thread::hardware_concurrency();
  fmt::print("rack transport: {} processes on {} cores, {} windows of {} B to every other process, {}\n", size, cores, args.windows,
             args.bytes, args.busy_poll ? "busy-polling (MPI's way)" : "yielding waits");
  fmt::print("  per window: min {:.1f} us, p50 {:.1f} us, p99 {:.1f} us, mean {:.1f} us; wall {:.2f} s\n", us.front(),
             percentile(us, 0.5), percentile(us, 0.99), mean, wall_s);
  if (!args.json.empty()) {
    nlohmann::json j = {{"benchmark", "rack_transport"},
                        {"processes", size},
                        {"cores", cores},
                        {"windows", args.windows},
                        {"bytes_per_peer", args.bytes},
                        {"wait", args.busy_poll ? "busy_poll" : "yield"},
                        {"wall_s", wall_s},
                        {"window_us", {{"min", us.front()}, {"p50", percentile(us, 0.5)}, {"p99", percentile(us, 0.99)}, {"mean", mean}}}};
    std::ofstream out(args.json);
    if (!out) {
      fmt::print(stderr, "rack_transport_bench: cannot write {}\n", args.json);
      return 1;
    }
    out << j.dump(2) << "\n";
    fmt::print("  wrote {}\n", args.json);
  }
  return 0;
}
