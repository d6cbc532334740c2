// The host's fabric client: IPbus 2.0 over UDP on Boost.Asio, to the emulator or to a board.
// Transactions are queued and dispatched in as few packets as fit the MTU, with several packets
// in flight; lost requests and lost replies are recovered the way uHAL does (a status request
// tells which requests arrived; those get a resend request, which replays the stored reply and
// never executes a write twice; the others are sent again). Errors are typed and name the
// register. docs/protocol.md.
#pragma once

#include "protocol/ipbus/codec.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace mxtb::host::fabric {

namespace ipbus = protocol::ipbus;

// A transaction the target answered with an error info code.
struct TransactionError : std::runtime_error {
  TransactionError(const std::string& what, uint32_t addr, ipbus::InfoCode code)
      : std::runtime_error(what), addr(addr), code(code) {}
  uint32_t addr;
  ipbus::InfoCode code;
};
// No answer after every retry.
struct TimeoutError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The target answered something that is not a valid reply to what was sent.
struct ProtocolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ClientOptions {
  std::chrono::milliseconds timeout{1000};  // per attempt
  int retries = 5;                          // recovery rounds before TimeoutError
  // A target whose status says it took the packet and has not replied yet is executing it (a
  // long emulator request, a starved emulator): the client waits for it without counting retries,
  // up to this long after its first send, then TimeoutError.
  std::chrono::milliseconds busy_limit{120'000};
  // For a target whose process the caller can see (an emulator child on this host): whether it is
  // still alive. A target that answers nothing, status included, through every retry while its
  // process is alive is one the machine has not scheduled (a loaded host, memory pressure): the
  // client keeps asking, up to busy_limit, instead of declaring it gone. Empty: a board.
  std::function<bool()> target_alive;
  uint32_t max_in_flight = 8;               // packets; capped by the target's reply buffers
  ipbus::ByteOrder order = ipbus::ByteOrder::Little;      // what x86 uHAL clients send
  // Sequenced packets (ids 1..65535) are what make lost packets recoverable, but a target keeps
  // one sequence: only one sequenced client may talk to it at a time. A second, concurrent client
  // sends id 0 (never sequence-checked, never stored); a lost packet then ends in TimeoutError,
  // since whether it executed cannot be known.
  bool sequenced = true;
  // Names an address in error messages (e.g. "LINK_STATUS[3]"); default prints the address.
  std::function<std::string(uint32_t)> describe;
};

struct ClientStats {
  uint64_t packets_sent = 0, bytes_sent = 0, bytes_received = 0, replies = 0, timeouts = 0, status_requests = 0, resend_requests = 0, packets_resent = 0,
           stray_replies = 0;
  uint64_t busy_waits = 0;         // timeouts on a packet the target said it was executing
  uint64_t silent_waits = 0;       // status rounds unanswered while target_alive() said alive
  double worst_answer_ms = 0;      // longest first send -> reply of a packet, recovery included
};

// The result of a queued read or RMW: valid after dispatch().
class Pending {
 public:
  uint32_t value() const;                       // first word
  const std::vector<uint32_t>& values() const;  // all words
  bool ready() const;

 private:
  friend class Client;
  struct State {
    bool done = false;
    std::vector<uint32_t> data;
  };
  std::shared_ptr<State> s_ = std::make_shared<State>();
};

class Client {
 public:
  // target: "udp://HOST:PORT" (or "HOST:PORT"). Sends a status request to learn the target's
  // next packet id; throws TimeoutError when nothing answers.
  explicit Client(const std::string& target, ClientOptions opts = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Queue; nothing is sent before dispatch(). Blocks of any length are split into transactions
  // of at most 255 words.
  Pending queue_read(uint32_t addr, uint32_t words = 1, bool incrementing = true);
  void queue_write(uint32_t addr, std::vector<uint32_t> data, bool incrementing = true);
  Pending queue_rmw_bits(uint32_t addr, uint32_t and_term, uint32_t or_term);
  Pending queue_rmw_sum(uint32_t addr, uint32_t addend);
  // Sends everything queued and waits for every reply. Throws TransactionError for the first
  // transaction in error (the ones after it in its packet were not executed), TimeoutError.
  // `timeout`: per attempt, for operations known to take long (emulator time control).
  void dispatch(std::chrono::milliseconds timeout = std::chrono::milliseconds{0});

  // One transaction each, dispatched at once.
  uint32_t read(uint32_t addr);
  void write(uint32_t addr, uint32_t value);
  std::vector<uint32_t> read_block(uint32_t addr, uint32_t words, bool incrementing = true);
  void write_block(uint32_t addr, const std::vector<uint32_t>& data, bool incrementing = true);
  uint32_t rmw_bits(uint32_t addr, uint32_t and_term, uint32_t or_term);
  uint32_t rmw_sum(uint32_t addr, uint32_t addend);

  // A status request now (never queued): the target's view of the stream.
  ipbus::StatusReply status();
  const ClientStats& stats() const { return stats_; }
  const std::string& target() const { return target_; }
  const ClientOptions& options() const { return opts_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string target_;
  ClientOptions opts_;
  ClientStats stats_;
};

// "udp://HOST:PORT" or "HOST:PORT" -> (host, port); throws std::invalid_argument naming the text.
std::pair<std::string, uint16_t> parse_target(const std::string& target);

}  // namespace mxtb::host::fabric
