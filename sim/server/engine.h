// Inside ServerSim (sim/server/server_sim.h): the engine interface and what both engines share.
// Not for users of the server.
//
// Two engines run the same server. The reference engine (engine_reference.cpp) is the emulator as
// it was first written: every clock evaluates every model at both edges and rewires every port.
// The fast engine (engine_fast.cpp) runs the same cycles with less work, alone or across threads,
// and must give identical results: transitions, scoreboards, bus results, to the cycle
// (testbench/sim/test_server_engines.cpp). docs/performance.md says what each shortcut saves.
//
// An engine gets the server's shared state (sim/server/server_state.h) by reference when it is
// built, and its models, built and wired once for both (sim/server/server_models.h).
#pragma once

#include "sim/server/server_sim.h"
#include "sim/server/server_state.h"

#include "sim/server/board_port.h"
#include "sim/link/lane_channel.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>

namespace mxtb::sim {

// A receiver's injected faults: bit errors drawn from its own generator, and a dark window.
struct LaneFault {
  explicit LaneFault(uint64_t seed) : rng(seed) {}
  LaneFault(const LaneFault&) = delete;  // errors draws from rng
  LaneFault& operator=(const LaneFault&) = delete;
  std::mt19937_64 rng;
  BitErrors errors{rng};
  uint64_t dark_until_cycle = 0;
};

class ServerSim::Impl {
 public:
  struct LinkView {
    link::LinkState state;
    link::Reason reason;
    EndpointIdentity peer;
    uint64_t frames_tx, frames_rx, crc_errors, replays, retrains;
  };
  virtual ~Impl() = default;
  // Clocks until a stop condition (ServerState::stops, ServerSim::step) or `max_cycles`; returns
  // the clocks run.
  virtual uint64_t run(uint64_t max_cycles) = 0;
  virtual BoardPort& board_port() = 0;
  virtual void start_read(uint32_t addr) = 0;
  virtual void start_write(uint32_t addr, uint32_t data) = 0;
  virtual bool bus_busy() const = 0;
  virtual bool irq() const = 0;
  virtual LinkView link_view(int i) const = 0;
  virtual const TrafficSource& source(int i) const = 0;
  virtual TrafficSource& source(int i) = 0;
  virtual const Scoreboard& scoreboard(int i) const = 0;
  virtual LaneFault& lane_fault(int i) = 0;
  virtual void finish() = 0;
  virtual void start_waveform(const std::string& path) = 0;
  virtual void stop_waveform() = 0;
  virtual bool waveform_on() const = 0;
  virtual ServerProfile profile() const { return {}; }
};

// The engines, for ServerSim's constructor: each builds its models for the server's shape and
// options (ServerConfig::trace_capable, the 32-link top).
std::unique_ptr<ServerSim::Impl> make_reference_engine(ServerState& st);
std::unique_ptr<ServerSim::Impl> make_fast_engine(ServerState& st);

// The board top's ports for one clock, before its rising edge: the firmware port's master and the
// UDP core's and emulator block's ports set their inputs; when one changed, the top is evaluated
// with its clock low (its arbiter grants, and its transactor starts an access, within the cycle a
// valid or a response arrives); then each reads the handshakes the edge takes. Returns whether the
// board port wants the emulator after this clock (ServerSim::board_event).
template <class Ctl>
bool drive_board_ports(Ctl& c, AxilMaster<Ctl>& bus, BoardPort& port, const EmuResponder* respond) {
  bool changed = bus.set_inputs(c);
  if (port.busy()) changed = port.drive(c) || changed;
  if (changed) {
    c.clk_i = 0;
    c.eval();
  }
  bus.observe(c);
  return port.busy() && port.sample(c, respond);
}

// Both engines seed the XPUs' streams, scoreboards and receivers alike.
inline uint64_t stream_seed(uint64_t seed, int link) { return seed * 1000003ull + static_cast<uint64_t>(link); }
inline uint64_t source_rng_seed(uint64_t seed, int link) { return seed * 7 + static_cast<uint64_t>(link); }
inline uint64_t scoreboard_rng_seed(uint64_t seed, int link) { return seed * 11 + static_cast<uint64_t>(link); }
inline uint64_t fault_rng_seed(uint64_t seed, int link) { return seed * 13 + static_cast<uint64_t>(link); }

// Light within this of its target phase counts as settled (the mesh is then no longer re-traced).
constexpr double kSettleToleranceRad = 1e-3;

// `width` bits of a verilated port (32-bit words: IData, QData or VlWide) from bit `lsb`, at most
// one word boundary crossed.
template <class W>
uint32_t get_bits(const W& w, int lsb, int width) {
  uint64_t word = w[lsb / 32];
  if (lsb % 32 + width > 32) word |= uint64_t{w[lsb / 32 + 1]} << 32;
  return static_cast<uint32_t>((word >> (lsb % 32)) & ((uint64_t{1} << width) - 1));
}

// ---- profiling (ServerConfig::profile) ----

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Adds the time from construction to destruction to `*sink`, when there is a sink.
class Stopwatch {
 public:
  explicit Stopwatch(double* sink) : sink_(sink) {
    if (sink_) t0_ = std::chrono::steady_clock::now();
  }
  ~Stopwatch() {
    if (sink_) add();  // the check alone inline: most clocks are not profiled
  }
  Stopwatch(const Stopwatch&) = delete;
  Stopwatch& operator=(const Stopwatch&) = delete;

 private:
  void add() { *sink_ += seconds_since(t0_); }
  double* sink_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace mxtb::sim
