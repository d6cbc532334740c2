// The emulator's IPbus endpoint: a Boost.Asio UDP socket served on its own thread by the IPbus
// target (protocol/ipbus/target.h). Status and resend packets are answered on that thread at
// once, even while a control packet runs; control packets go in order to a transactor thread,
// which answers the board's scratch RAM itself and turns every access that reaches the
// simulation (the controller, the emulator control block) into a job for the thread that owns
// the SystemC kernel, which runs it between sc_start() calls: neither server thread touches
// signals, eval() or the kernel. A packet for the RAM alone with no reply owed ahead of it the
// socket thread runs itself, so replies still leave in the order packets came. docs/protocol.md.
//
// In raw mode (`mxtb sim --ipbus-target rtl`) the socket is all the server is, as a board's UDP
// core: every datagram goes whole, in order, to the simulation thread, whose RTL transactor
// (the board top's, sim/server/board_port.h) answers it; the C++ target, the transactor thread and the RAM here
// are not used.
#pragma once

#include "protocol/ipbus/target.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::sim {

namespace ipbus = protocol::ipbus;

// "ADDR:PORT" (IPv4 or localhost; port 0 picks a free one) -> (address, port). Throws
// std::invalid_argument naming the text and what is wrong with it.
std::pair<std::string, uint16_t> parse_listen_address(const std::string& listen);

class IpbusServer {
 public:
  // An access for the simulation thread; call `done` once, from any thread. A job destroyed
  // without it (an exception while it ran) is answered with a bus timeout.
  struct Job {
    ipbus::BusPort::Access access;
    std::vector<uint32_t> body;  // copy of the request body (access.body points into it)
    std::function<void(ipbus::InfoCode, std::vector<uint32_t>)> done;
  };

  // A datagram for the simulation thread (raw mode); call `reply` once, from any thread, with the
  // reply's bytes or nullopt for none. A datagram dropped without it gets no reply.
  struct Datagram {
    std::vector<uint8_t> bytes;
    std::function<void(std::optional<std::vector<uint8_t>>)> reply;
  };
  enum class Mode { Target, Raw };

  // listen: "ADDR:PORT"; port 0 picks a free one. Throws std::runtime_error naming the address.
  // on_fault: every dropped packet and error reply, with its reason (called on the socket thread;
  // never in raw mode, where the simulation thread sees the faults).
  IpbusServer(const std::string& listen, std::function<void(ipbus::Fault, const std::string&)> on_fault, Mode mode = Mode::Target);
  ~IpbusServer();
  IpbusServer(const IpbusServer&) = delete;
  IpbusServer& operator=(const IpbusServer&) = delete;

  std::string local_address() const;  // "127.0.0.1:40123"
  // Simulation thread: the next job, waiting up to `timeout`.
  std::optional<Job> next_job(std::chrono::microseconds timeout);
  bool job_waiting() const;
  // Raw mode, simulation thread: the next datagram, waiting up to `timeout`.
  std::optional<Datagram> next_datagram(std::chrono::microseconds timeout);
  // The target's counters, from any thread. Transactions and faults of a packet count when it
  // finishes. Raw mode: all zero (the simulation thread counts what its transactor did).
  ipbus::TargetStats stats() const;

  // The server reports its own stalls. A watchdog thread looks every threshold / 4: when a
  // request has waited for the simulation thread longer than `threshold`, or datagrams have
  // waited unread in the socket that long, `report` gets one line saying so: the request (type,
  // words, address), how long it has waited, whether the simulation thread has taken it, how many
  // control packets wait behind it, and
  // `describe_sim()` (what the simulation thread is doing; called on the watchdog thread, so it
  // may read only thread-safe state). Again every `threshold` while the stall lasts, and once when
  // it ends. Call once, before the first request; `report` runs on the watchdog thread.
  struct StallWatch {
    std::chrono::milliseconds threshold{2000};
    std::function<std::string()> describe_sim;
    std::function<void(const std::string&)> report;
  };
  void watch_stalls(StallWatch watch);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mxtb::sim
