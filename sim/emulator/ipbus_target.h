// Who answers IPbus (docs/ipbus-rtl.md), behind one interface for the serve loop (emulator.cpp):
//  - the RTL target (rtl_target.cpp, `--ipbus-target rtl`): the socket is the board's UDP core,
//    and each datagram goes into the board top's UDP port clock by clock, its transactor
//    answering it; the accesses it makes of the emulator's block are answered within the clock or
//    with the server's step stopped (emu_answer.h);
//  - the C++ target (cpp_target.cpp, `cpp`): protocol/ipbus/target.h runs on the socket's threads
//    (ipbus_server.h), and the accesses that reach the simulation come here as jobs, run against the
//    controller through the top's firmware port or against the emulator's block.
// Both reach the block through EmuBlock's read() and write() only, and count what they did for
// emu.IPBUS_STATS.
#pragma once

#include "protocol/ipbus/target.h"
#include "sim/emulator/emu_block.h"
#include "sim/emulator/emu_log.h"
#include "sim/emulator/ipbus_server.h"
#include "sim/emulator/sim_thread.h"
#include "sim/server/server_sc.h"
#include "sim/server/server_sim.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace mxtb::sim {

// --inject-stall (tools/ipbus_stress.py): every `every`th request that reaches the simulation waits
// `ms` before it runs, as if the simulation thread were starved. ms 0: never.
struct StallInjection {
  uint32_t ms = 0, every = 0;
};

class RequestTarget {
 public:
  virtual ~RequestTarget() = default;
  RequestTarget(const RequestTarget&) = delete;
  RequestTarget& operator=(const RequestTarget&) = delete;

  // How the socket serves this target: Raw (the board's UDP core) or Target (the C++ target).
  virtual IpbusServer::Mode socket_mode() const = 0;
  virtual const char* describe() const = 0;  // for the start-up line
  // The socket is open: requests come from `server`, until stop().
  void start(IpbusServer& server) { server_ = &server; }
  void stop() { server_ = nullptr; }
  // The simulation thread: one request, waiting up to `timeout` for it, run and answered. False:
  // none came.
  virtual bool serve_one(std::chrono::microseconds timeout) = 0;
  // What the target counted (IPBUS_STATS): from the simulation thread or the clock thread.
  virtual protocol::ipbus::TargetStats stats() const = 0;

  // The slowest request so far, for the stop line.
  struct Longest {
    double wall_s = 0, sim_ns = 0;
    std::string what;
  };
  const Longest& longest() const { return longest_; }

 protected:
  RequestTarget(SimThread& thread, StallInjection inject) : thread_(thread), inject_(inject) {}
  // Before a request runs: waits when --inject-stall says this one does, `activity` saying so.
  void stall_if_due(const char* activity);
  // After it ran, from its start: `what` names it if it is the slowest yet.
  void note_request(std::chrono::steady_clock::time_point wall_start, double sim_start_ns,
                    const std::function<std::string()>& what);

  SimThread& thread_;
  IpbusServer* server_ = nullptr;

 private:
  StallInjection inject_;
  uint64_t requests_seen_ = 0;
  Longest longest_;
};

// The RTL target. Sets the server's emulator responder (the block's answers within the clock).
std::unique_ptr<RequestTarget> make_rtl_target(ServerSim& sim, ServerClock& clock, EmuBlock& block, SimThread& thread,
                                               EmuLog& log, StallInjection inject);
// The C++ target.
std::unique_ptr<RequestTarget> make_cpp_target(ServerSim& sim, ServerClock& clock, EmuBlock& block, SimThread& thread,
                                               StallInjection inject);

}  // namespace mxtb::sim
