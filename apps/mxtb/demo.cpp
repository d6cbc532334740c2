#include "apps/mxtb/demo.h"

#include "apps/mxtb/args.h"
#include "host/fabric/board.h"
#include "host/fabric/emulator_process.h"
#include "protocol/board_map.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>

namespace mxtb::app {

using nlohmann::json;
namespace fabric = host::fabric;
namespace report = host::report;

DemoRun run_demo(const FailoverScenario& s, const DemoOptions& o) {
  if (s.time_mode != "lockstep")
    throw UsageError(fmt::format("the demo measures in lockstep (the scenario asks for {}): in paced and free modes the "
                                 "host's own timing would be wall time, not simulated time",
                                 s.time_mode));
  auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  const auto wall0 = std::chrono::steady_clock::now();
  std::filesystem::create_directories(o.out_dir);
  const std::string scenario_file = o.out_dir + "/scenario.json";
  {
    std::ofstream f(scenario_file);
    if (!(f << to_json(s).dump(2) << "\n")) throw std::runtime_error("cannot write " + scenario_file);
  }
  std::vector<std::string> sim_args{"--scenario", scenario_file, "--time-mode", s.time_mode, "--ipbus-target", o.ipbus_target};
  if (o.waves) sim_args.insert(sim_args.end(), {"--fst", o.out_dir + "/waves.fst"});
  if (!o.inject_stall.empty()) sim_args.insert(sim_args.end(), {"--inject-stall", o.inject_stall});
  fabric::EmulatorProcess emu(fabric::self_executable(), sim_args, o.out_dir + "/emulator.log");
  say(fmt::format("emulator: {} (log: {}/emulator.log)", emu.target(), o.out_dir));
  fabric::ClientOptions opts;
  opts.describe = protocol::describe;
  opts.timeout = o.ipbus_timeout;
  opts.target_alive = [&emu] { return emu.running(); };
  fabric::Client client(emu.target(), opts);
  fabric::Board board(client);

  host::failover::FailoverRun failover = failover_run(s);
  failover.waves = o.waves;
  if (o.restart) {
    host::comm::RankGroupConfig rc;
    rc.executable = fabric::self_executable();
    rc.work_dir = o.out_dir + "/ranks";
    rc.restart = *o.restart;
    failover.manager.comm = rc;
    failover.manager.compare_restart = o.compare_restart;
  }
  DemoRun run;
  run.failover = host::failover::run_failover(board, failover, say);
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  try {
    run.sim_ns = board.clock().now_ns();
  } catch (const std::exception&) {
    // The emulator is gone: the failover run's failures say why.
  }
  // An emulator that ended on its own (a failed RTL assertion, a crash) is the reason for whatever
  // the failover run saw after it: say how, with the end of its log (Verilator's line, the rerun command).
  if (auto how = emu.ended()) run.failover.failures.push_back(fmt::format("the emulator (mxtb sim) {}", *how));
  run.client = client.stats();
  run.written = report::write_report_files(run.failover.timeline, o.out_dir);
  if (o.waves) run.written.push_back(o.out_dir + "/waves.fst");
  emu.stop();
  return run;
}

json demo_json(const FailoverScenario& s, const DemoRun& r) {
  json failovers = json::array();
  for (const auto& f : r.failover.records)
    failovers.push_back({{"failed", f.failed}, {"spare", f.spare ? json(*f.spare) : json(nullptr)},
                         {"fast_path", f.fast_path}, {"report", report::to_json(f.timeline)}, {"problems", f.problems}});
  return json{{"scenario", to_json(s)},        {"report", report::to_json(r.failover.timeline)}, {"failovers", failovers},
              {"failures", r.failover.failures},    {"passed", r.failover.passed()},                  {"wall_s", r.wall_s},
              {"ipbus", {{"packets", r.client.packets_sent}, {"timeouts", r.client.timeouts}, {"busy_waits", r.client.busy_waits},
                         {"silent_waits", r.client.silent_waits},
                         {"status_requests", r.client.status_requests}, {"resend_requests", r.client.resend_requests},
                         {"worst_answer_ms", r.client.worst_answer_ms}}}};
}

}  // namespace mxtb::app
