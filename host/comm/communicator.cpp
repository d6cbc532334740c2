#include "host/comm/communicator.h"

#if MXTB_HAVE_NCCL
#include "host/comm/nccl_communicator.h"
#endif

#include <gloo/allreduce_ring.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <fmt/format.h>

#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <set>

namespace mxtb::host::comm {

namespace {

// The process's TCP sockets now. Gloo does not hand out its connections, so a communicator
// remembers the sockets that appeared while it formed (exactly its own where one communicator forms
// at a time in the process, as in a rank process; tests forming several at once never revoke).
std::set<int> tcp_sockets() {
  std::set<int> out;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      char* end = nullptr;
      const long fd = std::strtol(e->d_name, &end, 10);
      if (end == e->d_name || *end || fd == dirfd(d)) continue;
      struct stat st {};
      int domain = 0;
      socklen_t len = sizeof domain;
      if (fstat(static_cast<int>(fd), &st) == 0 && S_ISSOCK(st.st_mode) &&
          getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && (domain == AF_INET || domain == AF_INET6))
        out.insert(static_cast<int>(fd));
    }
    closedir(d);
  }
  return out;
}

class GlooCommunicator : public Communicator {
 public:
  explicit GlooCommunicator(const Rendezvous& r) {
    std::error_code ec;
    std::filesystem::create_directories(r.store_dir, ec);
    const std::set<int> before = tcp_sockets();
    try {
      gloo::transport::tcp::attr attr("127.0.0.1");
      device_ = gloo::transport::tcp::CreateDevice(attr);
      gloo::rendezvous::FileStore files(r.store_dir);
      gloo::rendezvous::PrefixStore store(r.prefix, files);
      auto ctx = std::make_shared<gloo::rendezvous::Context>(r.rank, r.size);
      ctx->setTimeout(r.timeout);
      ctx->connectFullMesh(store, device_);
      context_ = ctx;
    } catch (const gloo::Exception& e) {
      throw CommError(fmt::format("gloo rendezvous {} as rank {} of {} in {}: {}", r.prefix, r.rank, r.size, r.store_dir,
                                  e.what()));
    }
    for (int fd : tcp_sockets())
      if (!before.count(fd)) sockets_.push_back(fd);
  }
  // Gloo has no revoke: shutting its connections down (the descriptors stay open, so nothing
  // else can take their numbers) makes its device thread fail every pair, which wakes a waiting
  // operation with an error here and a read error on every peer.
  void revoke() override {
    revoked_ = true;
    for (int fd : sockets_) ::shutdown(fd, SHUT_RDWR);
  }
  ~GlooCommunicator() override {
    op_.reset();  // its buffers unregistered from the pairs before the context closes them
    context_.reset();
  }
  std::string library() const override { return "gloo"; }
  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }
  void all_reduce(std::vector<float>& data) override {
    if (revoked_) throw CommError(fmt::format("gloo all-reduce on rank {} of {}: the communicator was revoked", rank(), size()));
    try {
      // One algorithm instance per size, kept (as Gloo's algorithms are meant to be used): its
      // buffers stay registered with the pairs, so a connection lost between two all-reduces fails
      // the next one at once. A buffer registered after its pair failed would wait out the timeout.
      if (!op_ || staging_.size() != data.size()) {
        op_.reset();
        staging_.assign(data.size(), 0.0f);
        std::vector<float*> ptrs{staging_.data()};
        op_ = std::make_unique<gloo::AllreduceRing<float>>(context_, ptrs, static_cast<int>(staging_.size()));
      }
      std::copy(data.begin(), data.end(), staging_.begin());
      op_->run();
      std::copy(staging_.begin(), staging_.end(), data.begin());
    } catch (const gloo::Exception& e) {
      throw CommError(fmt::format("gloo all-reduce of {} floats on rank {} of {}: {}{}", data.size(), rank(), size(),
                                  revoked_ ? "revoked: " : "", e.what()));
    }
  }

 private:
  std::vector<float> staging_;  // the kept algorithm's buffer
  std::unique_ptr<gloo::AllreduceRing<float>> op_;
  std::vector<int> sockets_;  // this communicator's connections (and its device's listener)
  std::atomic<bool> revoked_{false};
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> context_;
};

}  // namespace

std::vector<std::string> backends() {
#if MXTB_HAVE_NCCL
  return {"gloo", "nccl"};
#else
  return {"gloo"};
#endif
}

std::unique_ptr<Communicator> connect(const std::string& library, const Rendezvous& r) {
  if (r.size < 1 || r.rank < 0 || r.rank >= r.size)
    throw std::invalid_argument(fmt::format("rank {} of {}: not a rank of the communicator", r.rank, r.size));
  if (library == "gloo") return std::make_unique<GlooCommunicator>(r);
#if MXTB_HAVE_NCCL
  if (library == "nccl") return connect_nccl(r);
#endif
  std::string have;
  for (const auto& b : backends()) have += (have.empty() ? "" : ", ") + b;
  throw std::invalid_argument(fmt::format("unknown collective library '{}' (this build has: {})", library, have));
}

float check_input(uint64_t seed, int rank, uint64_t element) {
  uint64_t h = (seed + 1) * 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(rank) + 1) * 0xC2B2AE3D27D4EB4Full ^ element * 0x165667B19E3779F9ull;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return static_cast<float>(static_cast<int>(h % 2049) - 1024);  // |x| <= 1024: sums of up to 8192 ranks exact
}

uint64_t check_wrong(const std::vector<float>& sum, uint64_t seed, int ranks) {
  uint64_t wrong = 0;
  for (uint64_t e = 0; e < sum.size(); ++e) {
    double want = 0;
    for (int r = 0; r < ranks; ++r) want += check_input(seed, r, e);
    if (sum[e] != static_cast<float>(want)) ++wrong;
  }
  return wrong;
}

}  // namespace mxtb::host::comm
