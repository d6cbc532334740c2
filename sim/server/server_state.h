// Inside ServerSim (sim/server/server_sim.h): the server's state that ServerSim and its engine
// share. Not for users of the server.
//
// Why a plain struct and not an interface class: the engines read and write most of it every
// clock, some of it per link per clock (the lanes' rx sources, the living XPUs, the lanes an XPU
// program owns), where a virtual call or an accessor behind another pointer would cost what the
// engines were made fast to save. So ServerSim owns one ServerState, checks every change a user
// asks for (ServerSim's public functions), and hands the engine a reference to it at
// construction; the engine keeps that reference as it kept the server's before, and reaches each
// field at the same cost. What the engine alone holds (the models, the XPUs behind the lanes, its
// fibres and checkpoints) stays in the engine, behind ServerSim::Impl (sim/server/engine.h).
#pragma once

#include "sim/server/server_sim.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <vector>

namespace mxtb::sim {

struct ServerState {
  // Checks the mesh side of `cfg` and builds the mesh with every input dark; the engine's side is
  // ServerSim's to check.
  explicit ServerState(const ServerConfig& cfg);

  const ServerConfig cfg;
  const int n_links;

  // The mesh, and the light through it: re-traced when an input or a DAC changed (light_dirty)
  // and while elements move.
  std::unique_ptr<PhotonicMesh> mesh;
  Propagation light;
  bool light_dirty = true;
  uint64_t last_light_cycle = 0;
  std::mt19937_64 rng;  // the server's one noise generator: garbled light, in the reference's order
  FibrePorts fibres;    // the ports joined to other servers' meshes (a rack), with their own noise

  // Faults the engines read every clock (ServerSim::kill_xpu, swap_lanes).
  std::vector<bool> alive;      // per XPU
  std::vector<int> rx_source;  // receiver o sees mesh output rx_source[o] (identity unless fibres are swapped)

  // An XPU program and the links it owns (ServerSim::set_lane_program).
  LaneProgram* program = nullptr;
  std::vector<uint8_t> program_lane;  // per link: program owns it

  // Time, and what the last step() saw: the clock after which it stops.
  uint64_t cycle = 0;
  struct Stops {
    bool irq_rose = false, bus_done = false, link_changed = false, board_event = false;
    bool program_event = false;  // the program asked for attention
    bool any() const { return irq_rose || bus_done || link_changed || program_event || board_event; }
  } stops;

  // What the engine hands out and ServerSim's users take or read.
  std::optional<AxilResult> bus_result;
  EmuResponder emu_responder;
  std::vector<LinkTransition> transitions;
  uint64_t dac_writes = 0, pd_reads = 0;

  double period_ns() const { return 1000.0 / cfg.clock_mhz; }
  double now_ns() const { return static_cast<double>(cycle) * period_ns(); }
};

}  // namespace mxtb::sim
