// `mxtb server` runs the emulated server with its firmware through a failover; `mxtb bench
// reconfig` runs it for every settle preset (one process each: SystemC elaborates once per
// process) and tabulates the failover's phases.
#include "args.h"
#include "commands.h"

#include "host/failover/spare.h"
#include "host/report/report.h"
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

std::string source_root() {
  if (const char* r = std::getenv("MXTB_ROOT")) return r;
  return MXTB_SOURCE_DIR;
}

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

// `mxtb server --scenario FILE | --scenario-seed N`: a failover scenario (sim/scenario.h) through
// the in-process run, reported as a failover timeline (host/report). This is the child that
// `mxtb regress` runs today; what the in-process run cannot emulate is listed in the report's notes.
int run_server_scenario(const Args& args) {
  for (const char* flag : {"--preset", "--kill-xpu", "--kill-after-us", "--spare", "--no-kill", "--reprogram"})
    if (args.has(flag)) throw UsageError(fmt::format("{} cannot be combined with a scenario (the scenario says it)", flag));
  if (args.has("--scenario") && args.has("--scenario-seed"))
    throw UsageError("give either --scenario FILE or --scenario-seed N, not both");
  sim::FailoverScenario s = args.has("--scenario") ? sim::load_failover_scenario(args.str("--scenario"))
                                                   : sim::random_failover_scenario(args.u64("--scenario-seed", 1));
  if (args.has("--seed")) s.seed = args.u64("--seed", s.seed);

  std::vector<failover::FailureGroup> groups;
  for (const auto& [kind, list] : s.failure_groups)
    for (size_t i = 0; i < list.size(); ++i) groups.push_back({fmt::format("{}[{}]", kind, i), list[i]});
  fmt::print("mxtb server: scenario {} (seed {}), {} XPUs x {} lanes, {}-port mesh, {}, time mode free\n", s.name, s.seed,
             s.shape.xpus, s.shape.lanes_per_xpu, s.shape.mesh_ports, sim::to_string(s.settle));
  std::vector<std::string> notes, failures;
  // The manager's choice for each failure in turn: the first is emulated, later ones are reported.
  std::vector<int> free_spares = s.spares, failed;
  std::optional<failover::SpareChoice> first;
  bool degraded = false;  // some failure found no spare: from then on the tenant runs without it
  for (const auto& f : s.failures) {
    failover::SpareChoice c = failover::choose_spare(f.xpu, free_spares, groups, failed);
    notes.push_back(fmt::format("XPU {} fails at {} us: {}", f.xpu, f.at_us, c.reason));
    if (!first) first = c;
    degraded = degraded || c.degraded();
    failed.push_back(f.xpu);
    if (c.spare) free_spares.erase(std::find(free_spares.begin(), free_spares.end(), *c.spare));
  }

  report::Timeline t;
  t.scenario = s.name;
  t.seed = s.seed;
  t.time_mode = "free";
  sim::FailoverRunConfig cfg;
  sim::FailoverRunResult r;
  if (first && first->degraded()) {
    // Nothing to arm: the in-process run only knows the pre-armed fast failover.
    t.degraded = true;
    notes.push_back("degraded: the in-process run has no spare to arm, so it does not run; the tenant continues without "
                    "the failed XPU");
  } else {
    std::vector<std::string> not_covered;
    cfg = sim::to_failover_run_config(s, source_root() + "/traces/calibration/mesh32.json", first ? *first->spare : -1,
                                      &not_covered);
    cfg.progress_us = args.real("--progress-us", 1000);
    if (args.has("--limit-us")) cfg.limit_us = args.real("--limit-us", 0);
    for (const auto& n : not_covered) notes.push_back("not emulated: " + n);
    r = sim::run_failover(cfg);
    failures = r.failures;
    t = report::timeline_of_run(s, r, "free");
    if (s.expect_hardware_ns_max > 0 && t.hardware_ns > s.expect_hardware_ns_max)
      failures.push_back(fmt::format("hardware {} exceeds expect.hardware_ns_max {}", report::human_duration(t.hardware_ns),
                                     report::human_duration(s.expect_hardware_ns_max)));
    if (s.expect_total_ns_max > 0 && t.total_ns > s.expect_total_ns_max)
      failures.push_back(fmt::format("total {} exceeds expect.total_ns_max {}", report::human_duration(t.total_ns),
                                     report::human_duration(s.expect_total_ns_max)));
  }
  t.notes = notes;
  t.degraded = t.degraded || degraded;
  for (const auto& p : report::check_timeline(t)) failures.push_back("timeline: " + p);
  fmt::print("{}", report::format_table(t));
  if (!t.degraded)
    fmt::print("  traffic: {} messages delivered, {} scoreboard errors on living XPUs, {} on the spare after failover\n"
               "  simulated {:.1f} us in {:.2f} s wall\n",
               r.messages_delivered, r.scoreboard_errors, r.messages_after_failover_on_spare, r.cycles / s.clock_mhz, r.wall_s);
  if (args.has("--json")) {
    json j = t.degraded ? json::object() : sim::to_json(cfg, r);
    j["scenario"] = sim::to_json(s);
    j["report"] = report::to_json(t);
    j["failures"] = failures;
    j["passed"] = failures.empty();
    write_json_file(args.str("--json"), j);
  }
  if (args.has("--out"))
    for (const auto& path : report::write_report_files(t, args.str("--out"))) fmt::print("  wrote {}\n", path);
  if (failures.empty()) {
    fmt::print("PASS\n");
    return 0;
  }
  for (const auto& f : failures) fmt::print("FAIL: {}\n", f);
  return 1;
}

}  // namespace

int cmd_server(const ArgList& argv) {
  Args args(argv,
            {"--preset", "--kill-xpu", "--kill-after-us", "--spare", "--seed", "--json", "--limit-us", "--progress-us",
             "--scenario", "--scenario-seed", "--out"},
            {"--no-kill", "--reprogram"});
  if (!args.positional().empty()) throw UsageError(fmt::format("unexpected argument '{}'", args.positional()[0]));
  if (args.has("--scenario") || args.has("--scenario-seed")) return run_server_scenario(args);
  if (args.has("--out")) throw UsageError("--out needs a failover scenario (--scenario FILE or --scenario-seed N)");
  sim::FailoverRunConfig cfg;
  cfg.server.mesh.settle = parse_preset(args.str("--preset", "thermo_optic"));
  cfg.server.seed = args.u64("--seed", 1);
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
  fmt::print("mxtb server: 4 XPUs + 1 spare, 4 lanes each, 32-port Beneš mesh, {} (tau {} us), time mode free, seed {}\n",
             sim::to_string(cfg.server.mesh.settle), tau / 1000, cfg.server.seed);
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
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) throw std::runtime_error("cannot find the mxtb executable (/proc/self/exe)");
  self[n] = '\0';
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
