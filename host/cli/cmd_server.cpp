// `mxtb server` runs the emulated server with its firmware through a failover; `mxtb bench
// reconfig` runs it for every settle preset (one process each: SystemC elaborates once per
// process) and tabulates the failover's phases.
#include "args.h"
#include "commands.h"
#include "engine_options.h"

#include "host/failover/spare.h"
#include "host/report/report.h"
#include "host/ipbus/emulator_process.h"
#include "sim/failover_run.h"
#include "sim/scenario.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace mxtb::host {

using nlohmann::json;

namespace {

void write_json_file(const std::string& path, const json& j) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path));
  out << j.dump(2) << "\n";
}

sim::SettlePreset parse_preset(const std::string& s) {
  auto p = sim::settle_preset_from_string(s);
  if (!p) throw UsageError(fmt::format("--preset must be thermo_optic, electro_optic or mems, got '{}'", s));
  return *p;
}

}  // namespace

int cmd_server(const ArgList& argv) {
  Args args(argv,
            {"--preset", "--kill-xpu", "--kill-after-us", "--spare", "--seed", "--json", "--limit-us", "--progress-us",
             kEngineFlags[0], kEngineFlags[1]},
            {"--no-kill", "--reprogram"});
  if (!args.positional().empty()) throw UsageError(fmt::format("unexpected argument '{}'", args.positional()[0]));
  sim::FailoverRunConfig cfg;
  cfg.server.mesh.settle = parse_preset(args.str("--preset", "thermo_optic"));
  cfg.server.seed = args.u64("--seed", 1);
  apply_engine_options(args, cfg.server);
  cfg.calibration_file = source_root() + "/traces/calibration/mesh32.json";
  cfg.spare = static_cast<int>(args.u64("--spare", 4));
  if (args.has("--no-kill")) cfg.kill_xpu.reset();
  else cfg.kill_xpu = static_cast<int>(args.u64("--kill-xpu", 2));
  cfg.kill_after_armed_us = args.real("--kill-after-us", 50);
  cfg.reprogram = args.has("--reprogram");
  cfg.limit_us = args.real("--limit-us", 0);
  cfg.progress_us = args.real("--progress-us", 1000);
  if (cfg.kill_after_armed_us < 0) throw UsageError("--kill-after-us must not be negative");
  if (cfg.limit_us < 0) throw UsageError("--limit-us must not be negative");
  if (cfg.kill_xpu && (*cfg.kill_xpu == cfg.spare || *cfg.kill_xpu < 0 || *cfg.kill_xpu > 3))
    throw UsageError(fmt::format("--kill-xpu must be one of the tenant's XPUs 0..3, got {}", *cfg.kill_xpu));
  if (cfg.spare != 4) throw UsageError("--spare: the default server has one spare, XPU 4");

  double tau = sim::preset_tau_ns(cfg.server.mesh.settle);
  fmt::print("mxtb server: 4 XPUs + 1 spare, 4 lanes each, 32-port Beneš mesh, {} (tau {} us), time mode free, seed {}, "
             "{} engine on {} thread{}\n",
             sim::to_string(cfg.server.mesh.settle), tau / 1000, cfg.server.seed, sim::to_string(cfg.server.engine),
             cfg.server.threads, cfg.server.threads == 1 ? "" : "s");
  sim::FailoverRunResult r = sim::run_failover(cfg);
  if (r.initial_map_ok) fmt::print("  tenant 2x2 torus on XPUs 0-3: all 16 circuits Active at {:.1f} us\n", r.initial_up_ns / 1000);
  if (cfg.reprogram && r.reprogram_ok)
    fmt::print("  reprogrammed under traffic (tenant re-placed as 0,1,3,2): circuits Active again {:.1f} us after the command\n",
               r.reprogram_ns / 1000);
  if (cfg.kill_xpu) {
    fmt::print("  backup armed at {:.1f} us; XPU {} killed at {:.1f} us; spare XPU {}\n", r.armed_ns / 1000, *cfg.kill_xpu,
               r.failure_ns / 1000, cfg.spare);
    fmt::print("  {:<10} {:>12} {:>14}  {}\n", "phase", "start_us", "duration_us", "source");
    for (const auto& p : r.phases)
      fmt::print("  {:<10} {:>12.3f} {:>14.3f}  {}\n", p.name, (p.start_ns - r.failure_ns) / 1000,
                 (p.end_ns - p.start_ns) / 1000, p.source);
    if (r.failover_done)
      fmt::print("  {:<10} {:>12} {:>14.3f}  failure to every circuit Active (goal with thermo-optic: < 1000 us; Morphlux prototype: 1.2 s)\n",
                 "total", "", r.total_ns / 1000);
  }
  if (cfg.kill_xpu && r.failover_done)
    fmt::print("  links the failure did not touch that dropped while the mesh re-routed: {}\n", r.collateral_links);
  fmt::print("  traffic: {} messages delivered, {} scoreboard errors on living XPUs, {} on the spare after failover\n",
             r.messages_delivered, r.scoreboard_errors, r.messages_after_failover_on_spare);
  fmt::print("  controller: {} DAC writes, {} photodiode reads; firmware: {} bus reads, {} bus writes\n", r.dac_writes,
             r.pd_reads, r.bus_reads, r.bus_writes);
  fmt::print("  simulated {:.1f} us ({} cycles) in {:.2f} s wall\n", r.cycles / cfg.server.clock_mhz, r.cycles, r.wall_s);
  if (args.has("--json")) write_json_file(args.str("--json"), sim::to_json(cfg, r));
  if (r.passed()) {
    fmt::print("PASS\n");
    return 0;
  }
  for (const auto& f : r.failures) fmt::print("FAIL: {}\n", f);
  return 1;
}

int cmd_bench_reconfig(const ArgList& argv) {
  Args args(argv, {"--json", "--seed"}, {});
  if (!args.positional().empty()) throw UsageError(fmt::format("unexpected argument '{}'", args.positional()[0]));
  uint64_t seed = args.u64("--seed", 1);
  const std::string self = ipbus::self_executable();
  fmt::print("mxtb bench reconfig: failover of XPU 2 to spare XPU 4, per settle preset (time mode free)\n");
  json runs = json::array();
  bool all_ok = true;
  for (const char* preset : {"electro_optic", "thermo_optic", "mems"}) {
    std::string out = fmt::format("{}/mxtb-reconfig-{}-{}.json", std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp", preset, getpid());
    std::string cmd = fmt::format("'{}' server --preset {} --seed {} --json '{}' > /dev/null", self, preset, seed, out);
    fmt::print("  running {} ...\n", preset);
    std::fflush(stdout);
    int rc = std::system(cmd.c_str());
    std::ifstream in(out);
    if (!in) throw std::runtime_error(fmt::format("the {} run wrote no result (exit {})", preset, rc));
    json j = json::parse(in);
    std::remove(out.c_str());
    all_ok = all_ok && rc == 0 && j.value("passed", false);
    runs.push_back(j);
  }
  std::vector<std::string> names{"detect", "firmware", "program", "settle", "verify", "train"};
  fmt::print("\n  {:<14}", "preset");
  for (const auto& n2 : names) fmt::print(" {:>10}", n2);
  fmt::print(" {:>11} {:>9}\n", "total_us", "wall_s");
  for (const auto& j : runs) {
    fmt::print("  {:<14}", j["settle_preset"].get<std::string>());
    for (const auto& p : j["failover"]["phases"]) fmt::print(" {:>10.3f}", p["duration_ns"].get<double>() / 1000);
    fmt::print(" {:>11.3f} {:>9.2f}{}\n", j["failover"]["total_ns"].get<double>() / 1000, j["wall_s"].get<double>(),
               j["passed"].get<bool>() ? "" : "  FAILED");
  }
  double thermo_us = runs[1]["failover"]["total_ns"].get<double>() / 1000;
  fmt::print("  (phase durations in simulated us)\n  thermo-optic failure to Active: {:.1f} us, goal < 1000 us: {}\n", thermo_us,
             thermo_us < 1000 ? "met" : "NOT met");
  if (args.has("--json")) {
    write_json_file(args.str("--json"), json{{"bench", "reconfig"}, {"time_mode", "free"}, {"runs", runs},
                                             {"goal_thermo_optic_us", 1000}, {"thermo_optic_total_us", thermo_us},
                                             {"goal_met", thermo_us < 1000}});
    fmt::print("  wrote {}\n", args.str("--json"));
  }
  return all_ok ? 0 : 1;
}

}  // namespace mxtb::host
