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
#include "apps/mxtb/scenario.h"
#include "apps/mxtb/served_rack.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>

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

// The rack rows: the same death on a rack of boards (its settle preset the run's), once with a
// spare in the dead XPU's own server and once with that server's spares used up, so the spare is
// in another one; the host's rack path (host/failover/rack_failover.h) each time.
struct RackRows {
  std::string source;                    // the rack file
  nlohmann::json file;                   // as the served rack will read it
  sim::rack::RackConfig cfg;
  std::vector<protocol::RackXpu> victims;  // in the order they die
  std::optional<host::failover::RackJob> job;  // the run's job of collectives, on the rack tenant's ring
  // The migration baseline's row (with a job): the rack's torus left static, the job on the half of
  // it that holds the first victim, the same XPU dying there.
  std::optional<host::failover::TorusBlock> slice;
};

// Read, checked and the deaths chosen before anything starts: a bad rack file stops the demo here.
RackRows prepare_rack_rows(const FailoverScenario& s, const std::string& rack_path) {
  using protocol::RackXpu;
  RackRows rows{rack_path, read_rack_file(rack_path), {}, {}, {}, {}};
  rows.file["settle"] = sim::to_string(s.settle);
  rows.cfg = parse_rack_scenario(rows.file, rack_path, source_root() + "/traces/calibration/mesh32.json");
  const sim::rack::RackConfig& cfg = rows.cfg;
  // The first server with a spare and two tenant XPUs; its XPU of the run's first failure if that
  // one is the tenant's there, else its first.
  const auto& placed = cfg.tenant.xpu_of_position;
  const auto spares = spares_of(cfg.shape, cfg.tenant);
  std::vector<RackXpu> victims;
  for (int server = 0; server < cfg.shape.servers() && victims.empty(); ++server) {
    std::vector<RackXpu> mine;
    for (const auto& x : placed)
      if (x.server == server) mine.push_back(x);
    const auto own_spares = std::count_if(spares.begin(), spares.end(), [&](const RackXpu& x) { return x.server == server; });
    if (own_spares == 0 || mine.size() < static_cast<size_t>(own_spares) + 1) continue;
    const RackXpu first_failure{server, s.failures.front().xpu};
    auto it = std::find(mine.begin(), mine.end(), first_failure);
    if (it != mine.end()) std::rotate(mine.begin(), it, mine.end());
    victims.assign(mine.begin(), mine.begin() + own_spares + 1);  // the last one finds its server's spares used
  }
  if (victims.empty())
    throw InputError(fmt::format("--rack {}: no server has a spare and more tenant XPUs than spares, so neither case can be shown", rack_path));
  rows.victims = victims;
  if (s.collective) {  // the same job as the run's (op, type, bytes per rank), on the rack tenant's ring
    host::failover::RackJob job;
    job.spec = failover_run(s).manager.job->spec;
    rows.job = job;
    const host::failover::TorusBlock half = host::failover::half_block(cfg.tenant);
    for (const host::failover::TorusBlock b : {half, host::failover::TorusBlock{half.dim_x % cfg.tenant.dim_x, half.dim_y % cfg.tenant.dim_y,
                                                                                half.dim_x, half.dim_y}}) {
      const auto xs = host::failover::block_placement(cfg.tenant, b).xpu_of_position;
      if (!rows.slice && std::find(xs.begin(), xs.end(), victims.front()) != xs.end()) rows.slice = b;
    }
  }
  return rows;
}

// `ranks`: the job's ranks run as processes in the rack too (as the run's do), their re-form on the path.
nlohmann::json run_rack_rows(const RackRows& prepared, const std::string& out_dir, bool ranks) {
  const std::string out = out_dir + "/rack", path = out + "/scenario.json";
  std::filesystem::create_directories(out);
  {
    std::ofstream f(path);  // closed before the served rack reads it
    if (!(f << prepared.file.dump(2) << "\n")) throw std::runtime_error("cannot write " + path);
  }
  const sim::rack::RackConfig& cfg = prepared.cfg;
  ServedRack::Options so;
  so.job = prepared.job;
  so.ranks = ranks && prepared.job;
  ServedRack served(cfg, path, source_root() + "/traces/calibration/mesh32.json", out, so);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& v : prepared.victims) {
    const auto rec = served.fail(v);
    const bool placed_spare = rec.spare.server >= 0;
    rows.push_back({{"case", !placed_spare ? "no spare" : rec.same_server ? "spare in the same server" : "spare in another server"},
                    {"failed", rack_xpu_name(rec.failed)},
                    {"spare", placed_spare ? nlohmann::json(rack_xpu_name(rec.spare)) : nlohmann::json(nullptr)},
                    {"outcome", placed_spare ? nlohmann::json(to_string(rec.commit.outcome)) : nlohmann::json(nullptr)},
                    {"boards_touched", rec.blast.boards_touched},
                    {"xpus_left_active", rack_xpu_names(rec.blast.left_active)},
                    {"words_lost", rec.blast.words_lost},
                    {"scoreboard_errors", rec.blast.scoreboard_errors},
                    {"lanes_active_ns", rec.done_ns > 0 ? nlohmann::json(rec.done_ns - rec.failure_ns) : nlohmann::json(nullptr)},
                    {"first_collective_ns", rec.job && rec.job->first_verified_ns > 0 ? nlohmann::json(rec.path_ns()) : nlohmann::json(nullptr)},
                    {"communicator_reform_ns", rec.reform ? nlohmann::json(rec.reform->total_s() * 1e9) : nlohmann::json(nullptr)},
                    {"collectives_aborted", rec.job ? nlohmann::json(rec.job->aborted) : nlohmann::json(nullptr)},
                    {"collectives_wrong", rec.job ? nlohmann::json(rec.job->wrong) : nlohmann::json(nullptr)},
                    {"problems", rec.problems}});
  }
  if (prepared.slice) {  // the same first death on the same rack, its torus static: the slice migrated
    StaticTorus st(cfg, path, source_root() + "/traces/calibration/mesh32.json", out_dir + "/rack-static", *prepared.slice, *prepared.job,
                   ranks, 0);
    const auto m = st.fail(prepared.victims.front());
    rows.push_back({{"case", "static torus: slice migrated"},
                    {"failed", rack_xpu_name(m.failed)},
                    {"spare", nullptr},
                    {"outcome", m.to.dim_x ? nlohmann::json("migrated") : nlohmann::json(nullptr)},
                    {"boards_touched", m.boards_touched},
                    {"ranks_relaunched", m.relaunched.size()},
                    {"xpus_left_active", rack_xpu_names(m.blast.left_active)},
                    {"words_lost", m.blast.words_lost},
                    {"scoreboard_errors", m.blast.scoreboard_errors},
                    {"lanes_active_ns", nullptr},
                    {"first_collective_ns", m.path_ns() > 0 ? nlohmann::json(m.path_ns()) : nlohmann::json(nullptr)},
                    {"communicator_reform_ns", m.relaunch ? nlohmann::json(m.relaunch->total_s() * 1e9) : nlohmann::json(nullptr)},
                    {"collectives_aborted", m.job.aborted},
                    {"collectives_wrong", m.job.wrong},
                    {"problems", m.problems}});
  }
  return {{"rack", cfg.name}, {"file", prepared.source}, {"servers", cfg.shape.servers()}, {"settle", prepared.file["settle"]},
          {"job", prepared.job.has_value()}, {"rows", rows}};
}

// The demo's table beside the rack's rows and the prototype's 1.2 s: the same two ends for each,
// every lane of the placement Active and the job's first verified collective.
void print_rack_table(const DemoRun& r, const nlohmann::json& rack) {
  const auto& t = r.failover.timeline;
  const bool fast = !r.failover.records.empty() && r.failover.records.front().fast_path;
  fmt::print("# the failover path, one server against a rack ({}, {} servers, settle {} as this run; docs/failover.md, \"The rack rows\")\n",
             rack["rack"].get<std::string>(), rack["servers"].get<int>(), rack["settle"].get<std::string>());
  fmt::print("  {:<36} {:>6} {:>6} {:<9} {:<7} {:>22} {:>34} {:>6}\n", "case", "failed", "spare", "path", "boards", "to every lane Active",
             "to the first verified collective", "lost");
  const auto& first = r.failover.records.front();
  fmt::print("  {:<36} {:>6} {:>6} {:<9} {:<7} {:>19.1f} us {:>31.3f} ms {:>6}\n", "one server (this run)", first.failed,
             first.spare ? std::to_string(*first.spare) : "-", fast ? "firmware" : "host", "0", t.hardware_ns / 1e3, t.total_ns / 1e6,
             r.failover.passed() ? "0" : "-");
  for (const auto& row : rack["rows"]) {
    const bool done = !row["lanes_active_ns"].is_null();
    const bool migrated = row.contains("ranks_relaunched");
    fmt::print("  {:<36} {:>6} {:>6} {:<9} {:<7} {:>22} {:>34} {:>6}\n", "rack, " + row["case"].get<std::string>(),
               row["failed"].get<std::string>(), row["spare"].is_null() ? "-" : row["spare"].get<std::string>(), "host",
               fmt::format("{}", fmt::join(row["boards_touched"].get<std::vector<int>>(), ",")),
               done ? fmt::format("{:.1f} us", row["lanes_active_ns"].get<double>() / 1e3) : "-",
               !rack["job"].get<bool>() ? "not run: this run has no job"
               : row["first_collective_ns"].is_null()
                   ? "-"
                   : fmt::format("{:.3f} ms ({})", row["first_collective_ns"].get<double>() / 1e6, migrated ? "no state moved" : "no restore"),
               row["words_lost"].get<uint64_t>());
  }
  fmt::print("  {:<36} {:>6} {:>6} {:<9} {:<7} {:>22} {:>34}\n", "the Morphlux prototype", "", "", "", "", "", "1.2 s (measured)");
}

// What the rack rows' rules say of them: nothing lost, every placement committed and every slice
// migrated, the job's first collective on the new ring verified, none wrong.
std::vector<std::string> rack_row_failures(const nlohmann::json& rack) {
  std::vector<std::string> failures;
  for (const auto& row : rack["rows"]) {
    const std::string who = fmt::format("rack {}, XPU {} ({})", rack["rack"].get<std::string>(), row["failed"].get<std::string>(),
                                        row["case"].get<std::string>());
    if (row["words_lost"] != 0 || row["scoreboard_errors"] != 0)
      failures.push_back(fmt::format("{}: {} words lost, {} scoreboard errors", who, row["words_lost"].dump(), row["scoreboard_errors"].dump()));
    if (!row["spare"].is_null() && row["outcome"] != "committed")
      failures.push_back(fmt::format("{}: the placement was {}", who, row["outcome"].get<std::string>()));
    if (row.contains("ranks_relaunched") && row["outcome"] != "migrated")
      failures.push_back(fmt::format("{}: the slice was not migrated: {}", who, row["problems"].dump()));
    if (rack["job"].get<bool>() && (!row["spare"].is_null() || row.contains("ranks_relaunched")) && row["first_collective_ns"].is_null())
      failures.push_back(fmt::format("{}: the job formed again has no verified collective", who));
    if (rack["job"].get<bool>() && row["collectives_wrong"] != 0)
      failures.push_back(fmt::format("{}: {} of the job's collectives ended wrong", who, row["collectives_wrong"].dump()));
  }
  return failures;
}

}  // namespace

int cmd_demo(const ArgList& argv) {
  Args args(argv, {"--scenario", "--scenario-seed", "--seed", "--out", "--json", "--time-mode", "--ipbus-timeout-ms", "--inject-stall",
                   "--ipbus-target", "--restart", "--host-decide-ns", "--rack"},
            {"--no-waves", "--sweep", "--no-rack"});
  args.exclusive("--scenario", "--scenario-seed");
  args.exclusive("--rack", "--no-rack");
  // The rack rows: asked for, or by default for the main job (no scenario named).
  const bool with_rack = args.has("--rack") || (!args.has("--no-rack") && !args.has("--scenario") && !args.has("--scenario-seed"));
  const std::string rack_path = args.str("--rack", source_root() + "/traces/scenarios/rack/rack-2x1.json");
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
  std::optional<RackRows> rack_rows;
  if (with_rack) rack_rows = prepare_rack_rows(s, rack_path);
  if (s.time_mode == "lockstep")
    fmt::print("mxtb demo: scenario {} (seed {}), time mode {}, {} XPUs x {} lanes, {}-port mesh, {} settle\n", s.name,
               s.seed, s.time_mode, s.shape.xpus, s.shape.lanes_per_xpu, s.shape.mesh_ports, sim::to_string(s.settle));
  DemoRun r = run_demo(s, o);
  fmt::print("{}", host::report::format_table(r.failover.timeline));
  fmt::print("  emulated {:.1f} us of the server in {:.1f} s wall; client: {} packets, {} timeouts ({} while the target was "
             "executing the packet, {} status rounds while its process was silent), slowest answer {:.1f} ms\n", r.sim_ns / 1000.0,
             r.wall_s, r.client.packets_sent, r.client.timeouts, r.client.busy_waits, r.client.silent_waits, r.client.worst_answer_ms);
  for (const auto& p : r.written) fmt::print("  wrote {}\n", p);
  std::vector<std::string> failures = r.failover.failures;
  nlohmann::json rack;
  if (rack_rows && r.failover.passed()) {
    rack = run_rack_rows(*rack_rows, o.out_dir, o.restart.has_value());
    print_rack_table(r, rack);
    const auto rack_failures = rack_row_failures(rack);
    failures.insert(failures.end(), rack_failures.begin(), rack_failures.end());
  } else if (rack_rows) {
    fmt::print("no rack rows: the run they stand beside failed\n");
  }
  if (args.has("--json")) {
    nlohmann::json j = demo_json(s, r);
    if (!rack.is_null()) j["rack"] = rack;
    std::ofstream f(args.str("--json"));
    if (!(f << j.dump(2) << "\n")) throw std::runtime_error("cannot write " + args.str("--json"));
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
  if (failures.empty()) {
    fmt::print("PASS\n");
    return 0;
  }
  for (const auto& f : failures) fmt::print("FAIL: {}\n", f);
  return 1;
}

}  // namespace mxtb::app
