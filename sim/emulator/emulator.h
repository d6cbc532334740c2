// `mxtb sim`: the emulated server (controller RTL, 20 link layers, photonic mesh, firmware) as a
// board on the network. Host software reaches it over IPbus 2.0 / UDP exactly as it would reach
// the FPGA board: the controller's registers, the board's scratch RAM, and an emulator-only
// control block (protocol/emu_regs.json) for time control, fault injection and the event queue.
// Time modes: lockstep (time moves only when the host asks), paced (held to wall time x a
// real-time factor), free (as fast as it goes). docs/protocol.md, docs/cli.md.
#pragma once

#include "sim/collective/tenant_job.h"
#include "sim/server/server_sim.h"

#include <mxtb/emu_regs.h>

#include <cstdint>
#include <optional>
#include <string>

namespace mxtb::sim {

// Who answers IPbus (docs/ipbus-rtl.md): the transactor RTL clocked inside the simulation, as a
// board's firmware does, or the C++ target it is checked against, on the server's own threads.
enum class IpbusTarget { Rtl, Cpp };
std::optional<IpbusTarget> ipbus_target_from_string(const std::string& s);

struct EmulatorConfig {
  std::string scenario = "default";        // named in the start-up lines
  ServerConfig server;
  std::string calibration_file;            // traces/calibration/mesh32.json
  double settle_taus = 5;                  // SETTLE_CYCLES = settle_taus x the mesh's time constant
  uint64_t route_cost_ns = 20000;          // the firmware's modelled routing time
  emu::TimeMode time_mode = emu::TimeMode::Lockstep;
  double rtf = 1.0;                        // paced: simulated seconds per wall second
  std::string listen = "127.0.0.1:0";
  IpbusTarget ipbus_target = IpbusTarget::Rtl;
  std::string fst_path;                    // where WAVE_CTRL dumps; empty: no waveforms
  double stop_after_wall_s = 0;            // 0: serve until SIGINT/SIGTERM or the parent exits
  uint32_t stall_report_ms = 2000;         // log an IPbus request unanswered this long (0: never)
  // Fault injection for the IPbus stress harness (tools/ipbus_stress.py): every Nth request that
  // reaches the simulation waits this long before it runs, as if the simulation thread were
  // starved. 0: never.
  uint32_t inject_stall_ms = 0, inject_stall_every = 0;
  // The tenant's job (sim/collective/tenant_job.h): these XPUs' lanes run its collectives instead of
  // random traffic, formed and re-formed through JOB_* (protocol/emu_regs.json). Empty: no job.
  TenantJobConfig job;
};

std::optional<emu::TimeMode> time_mode_from_string(const std::string& s);

// Serves until SIGINT, SIGTERM or the death of the parent process. Prints
// "listening on udp://ADDR:PORT" on stdout when it answers. SystemC: once per process.
int run_emulator(const EmulatorConfig& cfg);

}  // namespace mxtb::sim
