// `mxtb demo`: the main job. Runs a failover scenario end to end (apps/mxtb/demo.h): the emulator
// on loopback, the failover manager over IPbus, an XPU killed and replaced by a spare; prints
// every phase against the 1.2 s the Morphlux prototype measured. `mxtb regress` runs it once per
// random scenario. docs/failover.md, docs/report.md.
#include "apps/mxtb/args.h"
#include "apps/mxtb/commands.h"
#include "apps/mxtb/demo.h"
#include "apps/mxtb/demo_sweep.h"
#include "apps/mxtb/engine_options.h"
#include "apps/mxtb/plot.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>

namespace mxtb::app {

namespace {

// Total and its phases against the state size at the run's lane rate, every lane count for the
// hot spare, all lanes for the relaunch: where the lines cross, another phase leads.
bool plot_sweep(const SweepInputs& in, const std::vector<SweepPoint>& points, const std::string& svg) {
  std::vector<PlotSeries> series;
  auto curve = [&](const std::string& title, host::comm::Restart r, int lanes, double SweepPoint::*field) {
    PlotSeries c{title, {}};
    for (const auto& p : points)
      if (p.restart == r && p.lanes == lanes && p.lane_gbps == in.lane_gbps) c.points.emplace_back(p.state_gib, p.*field / 1e6);
    series.push_back(std::move(c));
  };
  using host::comm::Restart;
  for (int lanes = 1; lanes <= in.lanes; ++lanes)
    curve(fmt::format("total, hot spare, {} lane{}", lanes, lanes == 1 ? "" : "s"), Restart::HotSpare, lanes, &SweepPoint::total_ns);
  curve(fmt::format("total, relaunch, {} lanes", in.lanes), Restart::Relaunch, in.lanes, &SweepPoint::total_ns);
  curve(fmt::format("state_restore, {} lanes", in.lanes), Restart::HotSpare, in.lanes, &SweepPoint::restore_ns);
  curve("communicator_reform on the path, relaunch", Restart::Relaunch, in.lanes, &SweepPoint::reform_ns);
  PlotSeries hot{"hot spare's whole re-form (beside the restore)", {}};
  for (const auto& p : series.front().points) hot.points.emplace_back(p.first, in.hot_spare_reform_ns / 1e6);
  series.push_back(std::move(hot));
  curve("failover before the restore", Restart::HotSpare, in.lanes, &SweepPoint::failover_ns);
  PlotSeries target{"the Morphlux prototype's 1.2 s", {}};
  for (const auto& p : series.front().points) target.points.emplace_back(p.first, in.target_ns / 1e6);
  series.push_back(std::move(target));
  return plot_series(svg,
                     fmt::format("set logscale x 2\nset logscale y 10\nset xlabel 'state per XPU (GiB)'\n"
                                 "set ylabel 'failure to the first verified collective (ms)'\n"
                                 "set title 'what-if: {} Gb/s per lane'\nset termoption noenhanced\n"
                                 "set key outside below maxrows 5\nset grid",
                                 in.lane_gbps),
                     series, "linespoints lw 2");
}

}  // namespace

int cmd_demo(const ArgList& argv) {
  Args args(argv, {"--scenario", "--scenario-seed", "--seed", "--out", "--json", "--time-mode", "--ipbus-timeout-ms", "--inject-stall",
                   "--ipbus-target", "--restart", "--host-decide-ns"},
            {"--no-waves", "--sweep"});
  args.exclusive("--scenario", "--scenario-seed");
  FailoverScenario s =
      args.has("--scenario-seed")
          ? random_failover_scenario(args.u64("--scenario-seed", 1))
          : load_failover_scenario(args.str("--scenario", source_root() + "/traces/scenarios/failover-default.json"));
  if (args.has("--seed")) s.seed = args.u64("--seed", s.seed);
  if (args.has("--host-decide-ns")) s.host_decide_ns = args.u64("--host-decide-ns", 1, 1, 100'000'000);
  s.time_mode = args.choice("--time-mode", s.time_mode, {"lockstep", "paced", "free"});
  DemoOptions o;
  o.out_dir = args.str("--out", "out");
  o.waves = !args.has("--no-waves");
  const bool sweep = args.has("--sweep");
  // By default the job's ranks run as processes and their communicator's re-form is measured (the
  // hot spare on the path, the relaunch beside it); none keeps the scenario's modeled constant.
  const std::string restart = args.choice("--restart", "both", {"hot-spare", "relaunch", "both", "none"});
  if (restart != "none" || sweep) {
    if (sweep && restart != "both")
      throw UsageError(fmt::format("--sweep recomputes both strategies from one run that measures both: --restart {} does "
                                   "not go with it (leave it out, or say both)",
                                   restart));
    // both: the hot spare on the path, the relaunch measured beside it in the same run.
    o.restart = restart == "relaunch" ? host::comm::Restart::Relaunch : host::comm::Restart::HotSpare;
    if (restart == "both") o.compare_restart = host::comm::Restart::Relaunch;
  }
  o.ipbus_target = resolve_ipbus_target(args, s.ipbus_target);
  o.ipbus_timeout = std::chrono::milliseconds(args.u64("--ipbus-timeout-ms", 1000, 10, 600'000));
  if (args.has("--inject-stall")) {
    parse_inject_stall(args.str("--inject-stall"));  // a bad value stops here, not in the emulator's log
    o.inject_stall = args.str("--inject-stall");
  }
  o.progress = [](const std::string& line) { fmt::print("  {}\n", line); };
  if (s.time_mode == "lockstep")
    fmt::print("mxtb demo: scenario {} (seed {}), time mode {}, {} XPUs x {} lanes, {}-port mesh, {} settle\n", s.name,
               s.seed, s.time_mode, s.shape.xpus, s.shape.lanes_per_xpu, s.shape.mesh_ports, sim::to_string(s.settle));
  DemoRun r = run_demo(s, o);
  fmt::print("{}", host::report::format_table(r.failover.timeline));
  fmt::print("  emulated {:.1f} us of the server in {:.1f} s wall; client: {} packets, {} timeouts ({} while the target was "
             "executing the packet, {} status rounds while its process was silent), slowest answer {:.1f} ms\n", r.sim_ns / 1000.0,
             r.wall_s, r.client.packets_sent, r.client.timeouts, r.client.busy_waits, r.client.silent_waits, r.client.worst_answer_ms);
  for (const auto& p : r.written) fmt::print("  wrote {}\n", p);
  if (args.has("--json")) {
    std::ofstream f(args.str("--json"));
    if (!(f << demo_json(s, r).dump(2) << "\n")) throw std::runtime_error("cannot write " + args.str("--json"));
  }
  if (sweep && r.failover.passed()) {
    SweepInputs in;
    try {
      in = sweep_inputs(r.failover.timeline);
    } catch (const std::runtime_error& e) {
      throw InputError(fmt::format("--sweep on scenario {}: {}", s.name, e.what()));
    }
    const auto points = app::sweep(in);
    fmt::print("{}", format_sweep(in, points));
    const std::string json_path = o.out_dir + "/sweep.json", svg = o.out_dir + "/sweep.svg";
    std::ofstream f(json_path);
    if (!(f << sweep_json(in, points).dump(2) << "\n")) throw std::runtime_error("cannot write " + json_path);
    fmt::print("  wrote {}\n", json_path);
    plot_sweep(in, points, svg);  // says what it wrote, or why it could not
  }
  if (sweep && !r.failover.passed()) fmt::print("no what-if sweep: the run it would start from failed\n");
  if (r.failover.passed()) {
    fmt::print("PASS\n");
    return 0;
  }
  for (const auto& f : r.failover.failures) fmt::print("FAIL: {}\n", f);
  return 1;
}

}  // namespace mxtb::app
