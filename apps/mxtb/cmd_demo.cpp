// `mxtb demo`: the main job. Runs a failover scenario end to end (apps/mxtb/demo.h): the emulator
// on loopback, the failover manager over IPbus, an XPU killed and replaced by a spare; prints
// every phase against the 1.2 s the Morphlux prototype measured. `mxtb regress` runs it once per
// random scenario. docs/failover.md, docs/report.md.
#include "apps/mxtb/args.h"
#include "apps/mxtb/commands.h"
#include "apps/mxtb/demo.h"
#include "apps/mxtb/engine_options.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>

namespace mxtb::app {

int cmd_demo(const ArgList& argv) {
  Args args(argv, {"--scenario", "--scenario-seed", "--seed", "--out", "--json", "--time-mode", "--ipbus-timeout-ms", "--inject-stall",
                   "--restart"},
            {"--no-waves"});
  args.exclusive("--scenario", "--scenario-seed");
  FailoverScenario s =
      args.has("--scenario-seed")
          ? random_failover_scenario(args.u64("--scenario-seed", 1))
          : load_failover_scenario(args.str("--scenario", source_root() + "/traces/scenarios/failover-default.json"));
  if (args.has("--seed")) s.seed = args.u64("--seed", s.seed);
  s.time_mode = args.choice("--time-mode", s.time_mode, {"lockstep", "paced", "free"});
  DemoOptions o;
  o.out_dir = args.str("--out", "out");
  o.waves = !args.has("--no-waves");
  if (args.has("--restart"))
    o.restart = *host::comm::restart_from_string(args.choice("--restart", "hot-spare", {"hot-spare", "relaunch"}));
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
  fmt::print("{}", host::report::format_table(r.job.timeline));
  fmt::print("  emulated {:.1f} us of the server in {:.1f} s wall; client: {} packets, {} timeouts ({} while the target was "
             "executing the packet, {} status rounds while its process was silent), slowest answer {:.1f} ms\n", r.sim_ns / 1000.0,
             r.wall_s, r.client.packets_sent, r.client.timeouts, r.client.busy_waits, r.client.silent_waits, r.client.worst_answer_ms);
  for (const auto& p : r.written) fmt::print("  wrote {}\n", p);
  if (args.has("--json")) {
    std::ofstream f(args.str("--json"));
    if (!(f << demo_json(s, r).dump(2) << "\n")) throw std::runtime_error("cannot write " + args.str("--json"));
  }
  if (r.job.passed()) {
    fmt::print("PASS\n");
    return 0;
  }
  for (const auto& f : r.job.failures) fmt::print("FAIL: {}\n", f);
  return 1;
}

}  // namespace mxtb::app
