// `mxtb sim`: the emulated board served over IPbus 2.0 on a UDP socket, in a time mode, from a
// scenario or flags. docs/cli.md, docs/protocol.md.
#include "apps/mxtb/args.h"
#include "apps/mxtb/commands.h"
#include "apps/mxtb/engine_options.h"

#include "apps/mxtb/scenario.h"
#include "sim/emulator/emulator.h"
#include "sim/emulator/ipbus_server.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>

namespace mxtb::app {

using nlohmann::json;

int cmd_sim(const ArgList& argv) {
  Args args(argv,
            ArgSpec{{"--scenario", "--preset", "--seed", "--listen", "--time-mode", "--rtf", "--fst", "--stop-after-s",
                     "--calibration", "--stall-report-ms", "--inject-stall", "--ipbus-target", kEngineFlags[0], kEngineFlags[1]},
                    {},
                    {"--job-xpus"},
                    false});
  args.exclusive("--scenario", "--preset");
  const std::string calibration = args.str("--calibration", source_root() + "/traces/calibration/mesh32.json");
  sim::EmulatorConfig cfg;
  std::string scenario_mode = "lockstep";
  std::optional<std::string> scenario_target;
  if (args.has("--scenario")) {
    // The server part of a failover scenario: its shape, settle, clock, traffic, seed and time mode.
    const std::string path = args.str("--scenario");
    FailoverScenario s = load_failover_scenario(path);
    cfg = emulator_config(s, path, calibration);
    scenario_mode = s.time_mode;
    scenario_target = s.ipbus_target;
  } else {
    std::string preset = args.choice("--preset", "thermo_optic", {"thermo_optic", "electro_optic", "mems"});
    cfg.server.mesh.settle = *sim::settle_preset_from_string(preset);
    cfg.calibration_file = calibration;
  }
  cfg.server.seed = args.u64("--seed", cfg.server.seed);
  apply_engine_options(args, cfg.server);
  cfg.listen = args.str("--listen", "127.0.0.1:0");
  cfg.stall_report_ms = static_cast<uint32_t>(args.u64("--stall-report-ms", cfg.stall_report_ms, 0, 3'600'000));
  if (cfg.stall_report_ms > 0 && cfg.stall_report_ms < 4)
    throw UsageError(fmt::format("--stall-report-ms must be 0 (off) or at least 4, got {}", cfg.stall_report_ms));
  if (args.has("--inject-stall")) {
    auto [ms, every] = parse_inject_stall(args.str("--inject-stall"));
    cfg.inject_stall_ms = ms;
    cfg.inject_stall_every = every;
  }
  try {
    sim::parse_listen_address(cfg.listen);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  cfg.ipbus_target = *sim::ipbus_target_from_string(resolve_ipbus_target(args, scenario_target));
  std::string mode = args.choice("--time-mode", scenario_mode, {"lockstep", "paced", "free"});
  cfg.time_mode = *sim::time_mode_from_string(mode);
  cfg.rtf = args.real("--rtf", 1.0);
  if (!(cfg.rtf > 0)) throw UsageError(fmt::format("--rtf must be above 0, got {}", cfg.rtf));
  if (args.has("--rtf") && cfg.time_mode != emu::TimeMode::Paced) throw UsageError("--rtf only applies to --time-mode paced");
  if (args.has("--job-xpus")) {
    cfg.job.xpus = parse_xpus(args, "--job-xpus");
    for (int x : cfg.job.xpus)
      if (x >= cfg.server.shape.xpus)
        throw UsageError(fmt::format("--job-xpus {}: the server has XPUs 0..{}", x, cfg.server.shape.xpus - 1));
  }
  if (!cfg.job.xpus.empty() && cfg.server.engine == sim::ServerEngine::Fast && cfg.server.threads > 1)
    throw UsageError(fmt::format("a job of collectives (--job-xpus, or the scenario's collective) runs on one thread, not {}: "
                                 "an XPU's lanes share its memory", cfg.server.threads));
  cfg.fst_path = args.str("--fst", "");
  cfg.stop_after_wall_s = args.real("--stop-after-s", 0);
  return sim::run_emulator(cfg);
}
}  // namespace mxtb::app
