// `--engine reference|fast` and `--threads N` of the commands that run the emulated server
// (`mxtb sim`, `mxtb bench server`). Their defaults come from MXTB_ENGINE and MXTB_THREADS when set, so a
// command that starts the emulator as a child (demo, regress, bench bridge, bench reconfig, serve)
// runs it the same way: `MXTB_ENGINE=reference mxtb regress ...` measures the reference engine.
// Also `--inject-stall`, the other option that `mxtb sim` takes and `mxtb demo` passes on to it.
#pragma once

#include "apps/mxtb/args.h"

#include "sim/server/server_sim.h"

namespace mxtb::app {

// The value flags to add to a command's Args.
inline const char* const kEngineFlags[] = {"--engine", "--threads"};

// Sets cfg.engine and cfg.threads; a bad value (flag or variable) is a UsageError naming it.
void apply_engine_options(const Args& args, sim::ServerConfig& cfg);

// `--inject-stall MS/EVERY` of `mxtb sim` and `mxtb demo` (the IPbus stress harness's fault):
// every EVERY-th request that reaches the simulation waits MS before it runs. Returns (MS, EVERY);
// a malformed value is a UsageError naming it.
std::pair<uint32_t, uint32_t> parse_inject_stall(const std::string& value);

}  // namespace mxtb::app
