// `mxtb bench server`: the emulated server's speed, engine by engine (sim/server_bench.h). The
// figures and what they mean: docs/cli.md, docs/performance.md.
#include "args.h"
#include "commands.h"

#include "sim/server_bench.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace mxtb::host {

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

void print_breakdown(const sim::ServerBenchRun& run, const char* phase, const sim::ServerProfile& p,
                     const sim::PhaseFigures& f) {
  if (p.cycles == 0) return;
  auto us = [&](double s) { return s * 1e6 / static_cast<double>(p.cycles); };
  const bool threaded = run.c.threads > 1;
  // On one thread everything inside step() is one of the parts or glue; with threads the link
  // time is every thread's, so the coordinator's glue is what its own parts and waiting leave.
  double own_links = threaded ? p.links_s / run.c.threads : p.links_s + p.xpu_s;
  double glue = std::max(0.0, p.step_s - p.controller_s - p.mesh_s - p.wait_s - own_links);
  fmt::print("  {:<10} {:>2} {:<9} {:>7.2f} {:>7.2f} {:>7.2f} {:>7.2f} {:>7.2f} {:>7.2f} {:>7.2f} {:>9.2f}{}\n",
             sim::to_string(run.c.engine), run.c.threads, phase, us(f.wall_s), us(p.links_s), us(p.controller_s),
             us(p.mesh_s), us(p.xpu_s), us(p.wait_s), us(glue), us(std::max(0.0, f.wall_s - p.step_s)),
             threaded ? fmt::format("  ({} windows, {} rolled back)", p.windows, p.rollbacks) : "");
}

}  // namespace

int cmd_bench_server(const ArgList& argv) {
  Args args(argv, {"--cycles", "--rounds", "--threads", "--seed", "--json", "--calibration"},
            {"--no-systemc", "--no-breakdown", "--no-reference"});
  if (!args.positional().empty()) throw UsageError(fmt::format("unexpected argument '{}'", args.positional()[0]));
  sim::ServerBenchConfig cfg;
  cfg.traffic_cycles = args.u64("--cycles", 100000);
  if (cfg.traffic_cycles < 1000) throw UsageError("--cycles must be at least 1000");
  uint64_t rounds = args.u64("--rounds", 2);
  if (rounds < 1 || rounds > 100) throw UsageError("--rounds must be in 1..100");
  cfg.rounds = static_cast<int>(rounds);
  cfg.seed = args.u64("--seed", 1);
  cfg.systemc = !args.has("--no-systemc");
  cfg.breakdown = !args.has("--no-breakdown");
  cfg.calibration_file = args.str("--calibration", source_root() + "/traces/calibration/mesh32.json");
  cfg.cases.clear();
  if (!args.has("--no-reference")) cfg.cases.push_back({sim::ServerEngine::Reference, 1});
  for (int t : parse_threads(args.str("--threads", "1,2"))) cfg.cases.push_back({sim::ServerEngine::Fast, t});

  const auto& s = cfg.shape;
  fmt::print("mxtb bench server: {} XPUs x {} lanes ({} link layers), {}-port mesh (thermo-optic), controller RTL, "
             "firmware; seed {}\n  traffic phase: {} cycles, every lane saturated; reconfiguration: the tenant re-placed, "
             "until every circuit is Active again\n  {} plain-loop rounds per engine, alternating; time mode free\n\n",
             s.xpus, s.lanes_per_xpu, s.xpus * s.lanes_per_xpu, s.mesh_ports, cfg.seed, cfg.traffic_cycles, cfg.rounds);
  std::fflush(stdout);
  sim::ServerBenchResult r = sim::run_server_bench(cfg);

  const sim::ServerBenchRun* ref = best_run(r, {sim::ServerEngine::Reference, 1}, "loop");
  fmt::print("  {:<10} {:>7} {:>8} {:>14} {:>9} {:>14} {:>9}\n", "engine", "threads", "harness", "traffic cyc/s",
             "vs ref", "reconfig cyc/s", "vs ref");
  auto row = [&](const sim::ServerBenchRun& b) {
    auto ratio = [&](double x, double base) { return ref && base > 0 ? fmt::format("{:.2f}x", x / base) : std::string("-"); };
    fmt::print("  {:<10} {:>7} {:>8} {:>14.0f} {:>9} {:>14.0f} {:>9}\n", sim::to_string(b.c.engine), b.c.threads, b.harness,
               b.traffic.cycles_per_s(), ratio(b.traffic.cycles_per_s(), ref ? ref->traffic.cycles_per_s() : 0),
               b.reconfig.cycles_per_s(), ratio(b.reconfig.cycles_per_s(), ref ? ref->reconfig.cycles_per_s() : 0));
  };
  for (const auto& c : cfg.cases)
    if (const auto* b = best_run(r, c, "loop")) row(*b);
  for (const auto& run : r.runs)
    if (run.harness == "systemc") row(run);
  fmt::print("  (best of {} timed runs per engine; wall-clock cycles per second; the reconfiguration phase is "
             "{} cycles)\n",
             cfg.rounds, ref ? ref->reconfig.cycles : r.runs.front().reconfig.cycles);

  if (cfg.breakdown) {
    fmt::print("\n  where the time goes (us of wall time per simulated cycle, one profiled run per engine):\n");
    fmt::print("  {:<10} {:>2} {:<9} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>9}\n", "engine", "th", "phase", "total",
               "links", "ctl", "mesh", "xpu", "wait", "glue", "firmware");
    for (const auto& run : r.runs)
      if (run.profiled) {
        print_breakdown(run, "traffic", run.traffic_profile, run.traffic);
        print_breakdown(run, "reconfig", run.reconfig_profile, run.reconfig);
      }
  }

  const sim::ServerBenchRun* fast = best_run(r, {sim::ServerEngine::Fast, 1}, "loop");
  if (ref && fast) {
    double rate = fast->traffic.cycles_per_s(), ratio = rate / ref->traffic.cycles_per_s();
    fmt::print("\n  one core under traffic: {:.0f} cycles/s, {:.2f}x the reference engine (goal: >= 100000 cycles/s or "
               ">= 3x): {}\n",
               rate, ratio, rate >= 100000 || ratio >= 3 ? "met" : "NOT met");
  }
  fmt::print("  every plain-loop run identical (transitions, link counters, cycles): {}\n", r.identical ? "yes" : "NO");
  if (args.has("--json")) {
    std::ofstream out(args.str("--json"));
    if (!out) throw std::runtime_error(fmt::format("cannot write {}", args.str("--json")));
    out << sim::to_json(r).dump(2) << "\n";
    fmt::print("  wrote {}\n", args.str("--json"));
  }
  return r.identical ? 0 : 1;
}

}  // namespace mxtb::host
