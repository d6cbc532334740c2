// The job's ranks reach their collective library through this one interface: Gloo (Debian's
// libgloo, the library PyTorch uses on CPUs) here, NCCL where GPUs are. A rank forms a
// communicator with its peers through a rendezvous store, runs all-reduces on it, and learns that
// a peer is gone when a collective fails (CommError), never from an oracle. docs/failover.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace mxtb::host::comm {

struct CommError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Where and how a communicator is formed: every rank of one generation uses the same store
// directory and prefix.
struct Rendezvous {
  std::string store_dir;   // a directory all ranks share (the file store)
  std::string prefix;      // one per communicator generation ("gen-1", "gen-2", ...)
  int rank = 0, size = 1;
  std::chrono::milliseconds timeout{10'000};  // rendezvous and every collective
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string library() const = 0;  // "gloo", "nccl"
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Sums `data` over the ranks in place. Throws CommError when a peer is gone or the timeout passed.
  virtual void all_reduce(std::vector<float>& data) = 0;
  // From another thread, while an operation may be waiting: that operation and every later one
  // end in CommError at once, and so do the peers' (they see this rank's connections go), as
  // MPIX_Comm_revoke and ncclCommRevoke do. How the host stops the survivors of a dead rank
  // without waiting for each library's own timeout. The next form replaces the communicator.
  virtual void revoke() = 0;
};

// The backends this build has: "gloo", and "nccl" where CUDA and NCCL were found at configure
// (MXTB_HAVE_NCCL; host/comm/nccl_communicator.cpp).
std::vector<std::string> backends();
// Forms a communicator with `library`; CommError when the rendezvous fails or times out,
// std::invalid_argument for a library this build lacks (naming those it has).
std::unique_ptr<Communicator> connect(const std::string& library, const Rendezvous& r);

// Rank r's input element e of the job's check all-reduce: small integers, so every sum is exact.
float check_input(uint64_t seed, int rank, uint64_t element);
// Elements of `sum` that differ from the exact sum over `ranks` ranks.
uint64_t check_wrong(const std::vector<float>& sum, uint64_t seed, int ranks);

}  // namespace mxtb::host::comm
