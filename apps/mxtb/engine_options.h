// `--engine reference|fast` and `--threads N` of the commands that run the emulated server
// (`mxtb sim`, `mxtb bench server`). Their defaults come from MXTB_ENGINE and MXTB_THREADS when set, so a
// command that starts the emulator as a child (demo, regress, bench bridge, bench reconfig, serve)
// runs it the same way: `MXTB_ENGINE=reference mxtb regress ...` measures the reference engine.
// Also the board's IPbus target and `--inject-stall`, the options that `mxtb sim` takes and
// `mxtb demo` passes on to it.
#pragma once

#include "apps/mxtb/args.h"

#include "sim/server/server_sim.h"

#include <optional>
#include <string>

namespace mxtb::app {

// The value flags to add to a command's Args.
inline const char* const kEngineFlags[] = {"--engine", "--threads"};

// Sets cfg.engine and cfg.threads; a bad value (flag or variable) is a UsageError naming it.
void apply_engine_options(const Args& args, sim::ServerConfig& cfg);

// The emulator's IPbus target, "rtl" (the board top's transactor) or "cpp" (the C++ target):
// `--ipbus-target` when given, else the scenario's `ipbus_target` when it has one, else
// MXTB_IPBUS_TARGET (which, like MXTB_ENGINE, reaches every command that starts the emulator),
// else "rtl". A bad value is a UsageError naming where it came from.
std::string resolve_ipbus_target(const Args& args, const std::optional<std::string>& scenario_target);

// `--inject-stall MS/EVERY` of `mxtb sim` and `mxtb demo` (the IPbus stress harness's fault):
// every EVERY-th request that reaches the simulation waits MS before it runs. Returns (MS, EVERY);
// a malformed value is a UsageError naming it.
std::pair<uint32_t, uint32_t> parse_inject_stall(const std::string& value);

}  // namespace mxtb::app
