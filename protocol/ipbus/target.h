// The board's side of IPbus 2.0: sequence checking, the reply buffers that make a resend replay
// a reply instead of executing a write twice, status replies, and the handling of bad input
// (every dropped packet and every error reply counted by reason). Plain C++ without sockets or
// SystemC: the emulator's UDP endpoint (sim/emulator/ipbus_server.h) feeds it datagrams and gives it a
// BusPort into the emulated board.
#pragma once

#include "protocol/ipbus/codec.h"

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::protocol::ipbus {

// What the target's transactions reach. execute() must check the whole access first and answer
// an error without touching anything when any word of it is out of range, so that a rejected
// block write is never half applied.
class BusPort {
 public:
  virtual ~BusPort() = default;
  struct Access {
    TxType type;
    uint32_t addr;
    uint32_t words;
    const uint32_t* body;  // write data (words of them), or the RMW terms
  };
  // Appends the reply body (read data, or the RMW's old value) to `out` on success.
  virtual InfoCode execute(const Access& a, std::vector<uint32_t>& out) = 0;
};

// Why a datagram was dropped or answered with an error.
enum class Fault : uint8_t {
  Oversized,       // longer than the MTU
  Truncated,       // not a whole number of words, or shorter than a header
  BadPacketHeader, // wrong version, reserved bits, byte-order qualifier or packet type
  BadStatus,       // a status request that is not 16 words
  BadResend,       // resend of an id with no stored reply, or not one word
  OutOfSequence,   // control packet id is neither 0 nor the next expected
  BadTransaction,  // answered with a bad-header info code (version, type, truncated body, reply past MTU)
  BusError,        // answered with a bus error (address out of range, access refused)
  kCount
};
const char* to_string(Fault f);

struct TargetStats {
  uint64_t datagrams = 0, control = 0, status = 0, resends_served = 0, transactions = 0;
  uint64_t resends_while_running = 0;  // resend of a packet still executing: ignored, its reply follows
  std::array<uint64_t, static_cast<size_t>(Fault::kCount)> faults{};
  uint64_t dropped() const;
};

// A control packet taken in sequence, waiting for or in execution.
struct AcceptedPacket {
  std::vector<uint32_t> words;
  ByteOrder order;
  uint16_t id;
};

class Target {
 public:
  explicit Target(BusPort& port, uint32_t n_buffers = 16) : port_(port), n_buffers_(n_buffers) {}
  // Handles one datagram; the reply's bytes, or nullopt to drop it.
  std::optional<std::vector<uint8_t>> handle(const uint8_t* data, size_t size);

  // handle() in three steps, so that a server can answer status and resend requests while a
  // control packet executes, as a board's packet engine does beside its transactor. accept():
  // status, resend and bad packets are answered (or dropped) at once; a control packet in
  // sequence is taken (the next expected id moves past it, so a status request says it arrived
  // and, while its header is not among the sent ones, that it is executing) and returned for
  // execute(), which touches only the bus and `counts`; finish() stores the reply for resends.
  // accept() and finish() must not run concurrently with each other; execute() may run beside
  // both. Packets are executed and finished in the order they were accepted.
  struct Intake {
    std::optional<std::vector<uint8_t>> reply;  // to send now
    std::optional<AcceptedPacket> control;      // to execute
  };
  Intake accept(const uint8_t* data, size_t size);
  std::vector<uint8_t> execute(const AcceptedPacket& p, TargetStats& counts);
  void finish(const AcceptedPacket& p, const std::vector<uint8_t>& reply, const TargetStats& counts);

  const TargetStats& stats() const { return stats_; }
  uint16_t next_expected_id() const { return next_id_; }
  // Called with every fault and a description naming the packet and what was wrong.
  void on_fault(std::function<void(Fault, const std::string&)> f) { on_fault_ = std::move(f); }

 private:
  std::optional<std::vector<uint8_t>> drop(Fault f, const std::string& what);
  std::vector<uint32_t> run_control(const std::vector<uint32_t>& in, uint16_t id, TargetStats& counts);
  void note_history(uint8_t kind);

  BusPort& port_;
  uint32_t n_buffers_;
  uint16_t next_id_ = 1;
  std::deque<std::pair<uint16_t, std::vector<uint8_t>>> replies_;  // newest last
  std::deque<uint16_t> running_;                                    // accepted, not finished; oldest first
  std::deque<uint32_t> received_, sent_;                            // newest first
  std::deque<uint8_t> history_;                                     // newest first
  TargetStats stats_;
  std::function<void(Fault, const std::string&)> on_fault_;
};

}  // namespace mxtb::protocol::ipbus
