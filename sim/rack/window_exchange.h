// How the processes of one rack emulation talk (docs/rack.md): servers are partitioned over
// processes, and once per window each process sends every peer process the fibre samples bound
// for that peer's servers and receives those bound for its own. Conservative synchronization: a
// window is never longer than the shortest fibre latency between processes, so what a window
// receives was sent in earlier windows and no process ever waits on a later one.
//
// Two transports behind this interface: one process holding every server (local_exchange(),
// nothing to send), and MPI (sim/rack/mpi_exchange.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace mxtb::sim::rack {

// A process of the rack died, stopped answering or disagrees; the message names the process
// (rank, host, pid) and the servers it holds.
struct RackTransportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class WindowExchange {
 public:
  virtual ~WindowExchange() = default;
  virtual int rank() const = 0;  // this process, 0..size()-1
  virtual int size() const = 0;  // processes in the rack

  // Collective, once at start: what this process holds ("servers 2-3"), so that every later error
  // about a process names it.
  virtual void introduce(const std::string& label) = 0;
  // Collective: every process passes its `value` for `what` (the rack file's digest, say); when
  // any differ, every process throws RackTransportError naming the first process whose value
  // differs from rank 0's and both values.
  virtual void check_same(const std::string& what, const std::string& value) = 0;
  // The processes this one exchanges with, the same every window (symmetric: r lists s iff s
  // lists r). Before the first exchange().
  virtual void set_peers(const std::vector<int>& peers) = 0;
  // One window: outbox[r] goes to peer r (outbox.size() == size(); entries for non-peers and
  // this process are ignored). Returns inbox, inbox[r] what peer r sent this process in this
  // window (empty for non-peers). Waits without busy-polling a core; throws RackTransportError
  // when a peer has sent nothing within the timeout, naming it.
  virtual std::vector<std::vector<uint8_t>> exchange(const std::vector<std::vector<uint8_t>>& outbox) = 0;
  // Whether a peer has sent this process its message for the next window, waiting up to `within`
  // (without busy-polling) for one to come. A rack served in lockstep runs a window only when some
  // process's host asked for time, and the others follow when its message arrives.
  virtual bool window_arrives(std::chrono::microseconds within) = 0;
  // Collective: every process's string in rank order on rank 0; an empty vector elsewhere.
  virtual std::vector<std::string> gather(const std::string& mine) = 0;
  // Collective: the smallest of every process's value, on every process.
  virtual uint64_t min_all(uint64_t value) = 0;
};

// The transport of a rack held by one process: size 1, no peers, nothing to exchange.
std::unique_ptr<WindowExchange> local_exchange();

}  // namespace mxtb::sim::rack
