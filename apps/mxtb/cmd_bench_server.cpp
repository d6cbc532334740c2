// `mxtb bench server`: the emulated server's speed, engine by engine (apps/mxtb/bench_server.h). The
// figures and what they mean: docs/cli.md, docs/performance.md.
#include "apps/mxtb/args.h"
#include "apps/mxtb/commands.h"

#include "apps/mxtb/bench_server.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace mxtb::app {

namespace {

std::vector<int> parse_threads(const std::string& list) {
  std::vector<int> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');) {
    try {
      size_t used = 0;
      int n = std::stoi(item, &used);
      if (used != item.size() || n < 1 || n > 64) throw std::invalid_argument(item);
      out.push_back(n);
    } catch (const std::exception&) {
      throw UsageError(fmt::format("--threads wants thread counts 1..64 separated by commas, got '{}'", list));
    }
  }
  if (out.empty()) throw UsageError("--threads: no thread count given");
  return out;
}

void print_breakdown(const ServerBenchRun& run, const char* phase, const sim::ServerProfile& p,
                     const PhaseFigures& f) {
  if (p.cycles == 0) return;
  auto us = [&](double s) { return s * 1e6 / static_cast<double>(p.cycles); };
  // One thread: step() is the parts plus glue. Threads: links, words and checkpoints are every
  // thread's (each thread's share runs in parallel); thread 0 adds the controller, light, glue.
  const bool threaded = run.c.threads > 1;
  double parts = p.controller_s + p.mesh_s + p.wait_s + (threaded ? p.links_s / run.c.threads : p.links_s + p.xpu_s + p.stage_s);
  fmt::print("  {:<9} {:>2} {:<9} {:>7.2f} {:>7.2f} {:>7.2f} {:>7.2f} {:>7.2f} {:>7.2f} {:>7.2f} {:>7.2f} {:>7.2f} {:>7.2f}{}\n",
             sim::to_string(run.c.engine), run.c.threads, phase, us(f.wall_s), us(p.links_s), us(p.xpu_s), us(p.stage_s),
             us(p.checkpoint_s), us(p.controller_s), us(p.mesh_s), us(p.wait_s), us(std::max(0.0, p.step_s - parts)),
             us(std::max(0.0, f.wall_s - p.step_s)),
             threaded ? fmt::format("  ({} windows, {} rolled back)", p.windows, p.rollbacks) : "");
}

}  // namespace

int cmd_bench_server(const ArgList& argv) {
  Args args(argv, {"--cycles", "--rounds", "--threads", "--seed", "--json", "--calibration", "--xpus"},
            {"--no-systemc", "--no-breakdown", "--no-reference"});
  ServerBenchConfig cfg;
  cfg.traffic_cycles = args.u64("--cycles", 100000);
  if (cfg.traffic_cycles < 1000) throw UsageError("--cycles must be at least 1000");
  uint64_t rounds = args.u64("--rounds", 2);
  if (rounds < 1 || rounds > 100) throw UsageError("--rounds must be in 1..100");
  cfg.rounds = static_cast<int>(rounds);
  cfg.seed = args.u64("--seed", 1);
  cfg.systemc = !args.has("--no-systemc");
  cfg.breakdown = !args.has("--no-breakdown");
  cfg.calibration_file = args.str("--calibration", source_root() + "/traces/calibration/mesh32.json");
  uint64_t xpus = args.u64("--xpus", 5);
  if (xpus != 5 && xpus != 8)
    throw UsageError(fmt::format("--xpus must be 5 (20 links) or 8 (32 links, the controller's most), got {}", xpus));
  cfg.shape.xpus = static_cast<int>(xpus);
  cfg.cases.clear();
  // The reference models are built for the default server only.
  if (!args.has("--no-reference") && xpus == 5) cfg.cases.push_back({sim::ServerEngine::Reference, 1});
  for (int t : parse_threads(args.str("--threads", "1,2"))) cfg.cases.push_back({sim::ServerEngine::Fast, t});

  const auto& s = cfg.shape;
  fmt::print("mxtb bench server: {} XPUs x {} lanes ({} link layers), {}-port mesh (thermo-optic), controller RTL, "
             "firmware; seed {}\n  traffic phase: {} cycles, every lane saturated; reconfiguration: the tenant re-placed, "
             "until every circuit is Active again\n  {} plain-loop rounds per engine, alternating; time mode free\n\n",
             s.xpus, s.lanes_per_xpu, s.xpus * s.lanes_per_xpu, s.mesh_ports, cfg.seed, cfg.traffic_cycles, cfg.rounds);
  std::fflush(stdout);
  ServerBenchResult r = run_server_bench(cfg);

  const ServerBenchRun* ref = best_run(r, {sim::ServerEngine::Reference, 1}, "loop");
  fmt::print("  {:<9} {:>7} {:>8} {:>13} {:>7} {:>12} {:>14} {:>7}\n", "engine", "threads", "harness", "traffic cyc/s",
             "vs ref", "per cpu-s", "reconfig cyc/s", "vs ref");
  auto row = [&](const ServerBenchRun& b) {
    auto ratio = [&](double x, double base) { return ref && base > 0 ? fmt::format("{:.2f}x", x / base) : std::string("-"); };
    fmt::print("  {:<9} {:>7} {:>8} {:>13.0f} {:>7} {:>12.0f} {:>14.0f} {:>7}\n", sim::to_string(b.c.engine), b.c.threads,
               b.harness, b.traffic.cycles_per_s(), ratio(b.traffic.cycles_per_s(), ref ? ref->traffic.cycles_per_s() : 0),
               b.traffic.cpu_s > 0 ? static_cast<double>(b.traffic.cycles) / b.traffic.cpu_s : 0.0, b.reconfig.cycles_per_s(),
               ratio(b.reconfig.cycles_per_s(), ref ? ref->reconfig.cycles_per_s() : 0));
  };
  for (const auto& c : cfg.cases)
    if (const auto* b = best_run(r, c, "loop")) row(*b);
  for (const auto& run : r.runs)
    if (run.harness == "systemc") row(run);
  fmt::print("  (best of {} timed runs per engine, wall-clock cycles per second; per cpu-s: per second of the process's "
             "CPU time, every thread's, which a busy machine does not inflate; the reconfiguration phase is {} cycles)\n",
             cfg.rounds, ref ? ref->reconfig.cycles : r.runs.front().reconfig.cycles);

  if (cfg.breakdown) {
    fmt::print("\n  where the time goes (us of wall time per simulated cycle, one profiled run per engine):\n");
    fmt::print("  {:<9} {:>2} {:<9} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}\n", "engine", "th", "phase",
               "total", "links", "xpu", "words", "ckpt", "ctl", "light", "wait", "glue", "fw+hal");
    for (const auto& run : r.runs)
      if (run.profiled) {
        print_breakdown(run, "traffic", run.traffic_profile, run.traffic);
        print_breakdown(run, "reconfig", run.reconfig_profile, run.reconfig);
      }
  }

  if (r.scaling.valid) {
    const auto& m = r.scaling;
    fmt::print("\n  predicted scaling under traffic (model: docs/performance.md; measured here, in CPU time: a link's clock "
               "{:.3f} us, the coordinator's {:.3f} us, a link's checkpoint {:.3f} us per window; windows of {:.2f} clocks; "
               "hand-off between 2 threads {:.2f} us (fastest of 20000; median {:.2f} us)):\n",
               m.link_us, m.coordinator_us, m.checkpoint_us, m.window_cycles, m.round_trip_us, m.round_trip_p50_us);
    fmt::print("  {:>7} {:>16} {:>9} {:>11} {:>18}\n", "threads", "predicted cyc/s", "speed-up", "per thread", "measured cyc/s");
    for (const auto& row : m.rows) {
      const ServerBenchRun* measured = best_run(r, {sim::ServerEngine::Fast, row.threads}, "loop");
      fmt::print("  {:>7} {:>16.0f} {:>8.2f}x {:>11.2f} {:>18}\n", row.threads, row.cycles_per_s, row.speedup,
                 row.speedup / row.threads, measured ? fmt::format("{:.0f}", measured->traffic.cycles_per_s()) : "-");
    }
    fmt::print("  (goal: speed-up >= 0.7 x threads up to 8 threads; this machine has {} hardware threads)\n",
               r.hardware_threads);
  }

  const ServerBenchRun* fast = best_run(r, {sim::ServerEngine::Fast, 1}, "loop");
  if (ref && fast) {
    // A busy machine stretches wall time but hardly CPU time: both are judged, each stated.
    auto cpu_rate = [](const ServerBenchRun& b) { return b.traffic.cpu_s > 0 ? b.traffic.cycles / b.traffic.cpu_s : 0.0; };
    double rate = fast->traffic.cycles_per_s(), ratio = rate / ref->traffic.cycles_per_s();
    double cpu = cpu_rate(*fast), cpu_ratio = cpu_rate(*ref) > 0 ? cpu / cpu_rate(*ref) : 0;
    auto verdict = [](double r, double x) { return r >= 100000 || x >= 3 ? "met" : "NOT met"; };
    fmt::print("\n  one core under traffic (goal: >= 100000 cycles/s or >= 3x the reference engine):\n"
               "    wall clock: {:.0f} cycles/s, {:.2f}x: {}\n    per CPU second (one free core): {:.0f} cycles/s, {:.2f}x: {}\n",
               rate, ratio, verdict(rate, ratio), cpu, cpu_ratio, verdict(cpu, cpu_ratio));
  }
  fmt::print("  every plain-loop run identical (transitions, link counters, cycles): {}\n", r.identical ? "yes" : "NO");
  if (args.has("--json")) {
    std::ofstream out(args.str("--json"));
    if (!out) throw std::runtime_error(fmt::format("cannot write {}", args.str("--json")));
    out << to_json(r).dump(2) << "\n";
    fmt::print("  wrote {}\n", args.str("--json"));
  }
  return r.identical ? 0 : 1;
}

}  // namespace mxtb::app
