// The NCCL backend of the job's communicator (docs/failover.md, "The communicator"): one rank per
// process, its device rank % cudaGetDeviceCount(), the unique id passed through the same file store
// as Gloo's rendezvous. NCCL's calls can wait for ever on a peer that is gone (init for a root that
// never answers, a kernel for data that never comes), so the communicator is non-blocking
// (ncclConfig_t.blocking = 0) and every wait here polls under the rendezvous timeout, then aborts:
// a lost peer becomes a CommError, never a hang, as with Gloo.
//
// The re-form after a failure: NCCL 2.28's nccl.h has
//   ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags);     // stop in-flight work
//   ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
//                               ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);
// (NCCL_SHRINK_ABORT aborts the parent's operations first), the GPU path to a re-form without a
// fresh bootstrap. They are not used yet: Shrink only removes ranks (the hot spare must be added,
// so a new communicator is needed anyway), and the host drives Gloo and NCCL through one interface
// (a new rendezvous per generation, host/comm/rank_group.cpp). So a re-form here aborts the broken
// communicator and initialises a new one with a fresh unique id under the new prefix; a
// revoke/shrink-based re-form (survivors shrink, then grow with the spare) is a follow-up.
#include "host/comm/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>

namespace mxtb::host::comm {

namespace {

using Clock = std::chrono::steady_clock;

// Between two polls: yield for the first millisecond (an all-reduce on one node takes tens of
// microseconds, and `mxtb rank` measures it), then sleep so a long wait does not spin a core.
void pause(Clock::time_point since) {
  if (Clock::now() - since < std::chrono::milliseconds(1))
    std::this_thread::yield();
  else
    std::this_thread::sleep_for(std::chrono::microseconds(200));
}

std::string nccl_what(const char* call, ncclResult_t res) {
  std::string s = fmt::format("{}: {}", call, ncclGetErrorString(res));
  // NCCL's last message says which peer or which system call; it is per thread, not per comm.
  if (const char* last = ncclGetLastError(nullptr); last && *last) s += fmt::format(" ({})", last);
  return s;
}

void check_cuda(const std::string& where, const char* call, cudaError_t e) {
  if (e != cudaSuccess) throw CommError(fmt::format("{}: {}: {}", where, call, cudaGetErrorString(e)));
}

// Waits for a non-blocking communicator's pending call (init, finalize) to end: ncclSuccess, the
// error it ended in, or ncclInProgress when the deadline came first.
ncclResult_t wait_comm(ncclComm_t comm, Clock::time_point deadline) {
  const auto t0 = Clock::now();
  for (;;) {
    ncclResult_t state = ncclSuccess;
    if (ncclResult_t res = ncclCommGetAsyncError(comm, &state); res != ncclSuccess) return res;
    if (state != ncclInProgress) return state;
    if (Clock::now() >= deadline) return ncclInProgress;
    pause(t0);
  }
}

// Rank 0 publishes the unique id whole: written aside, then renamed, so a reader sees all of it or
// no file. (Each generation has its own prefix, so no reader finds an earlier generation's id.)
void publish_id(const std::string& where, const std::string& path, const ncclUniqueId& id) {
  const std::string tmp = fmt::format("{}.tmp-{}", path, getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(id.internal, sizeof id.internal);
    if (!f.flush()) throw CommError(fmt::format("{}: cannot write {}", where, tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw CommError(fmt::format("{}: cannot rename {} to {}: {}", where, tmp, path, ec.message()));
}

ncclUniqueId wait_id(const std::string& where, const std::string& path, Clock::time_point deadline,
                     std::chrono::milliseconds timeout) {
  for (;;) {
    ncclUniqueId id{};
    if (std::ifstream f(path, std::ios::binary); f && f.read(id.internal, sizeof id.internal)) return id;
    if (Clock::now() >= deadline)
      throw CommError(
          fmt::format("{}: no NCCL unique id in {} after {} ms (rank 0 publishes it there)", where, path, timeout.count()));
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

class NcclCommunicator : public Communicator {
 public:
  explicit NcclCommunicator(const Rendezvous& r) : rank_(r.rank), size_(r.size), timeout_(r.timeout) {
    const auto deadline = Clock::now() + r.timeout;  // one timeout for the id and the init together
    int devices = 0;
    if (cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0)
      throw CommError(fmt::format("nccl: no CUDA device: cudaGetDeviceCount: {}",
                                  e != cudaSuccess ? cudaGetErrorString(e) : "0 devices"));
    device_ = r.rank % devices;
    const std::string where = fmt::format("nccl rendezvous {} as rank {} of {} on device {} in {}", r.prefix, r.rank,
                                          r.size, device_, r.store_dir);
    try {
      check_cuda(where, "cudaSetDevice", cudaSetDevice(device_));
      check_cuda(where, "cudaStreamCreate", cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
      std::error_code ec;
      std::filesystem::create_directories(r.store_dir, ec);
      const std::string path = (std::filesystem::path(r.store_dir) / (r.prefix + ".nccl-id")).string();
      ncclUniqueId id{};
      if (r.rank == 0) {
        if (ncclResult_t res = ncclGetUniqueId(&id); res != ncclSuccess)
          throw CommError(where + ": " + nccl_what("ncclGetUniqueId", res));
        publish_id(where, path, id);
      } else {
        id = wait_id(where, path, deadline, r.timeout);
      }
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;  // init returns at once (ncclInProgress); the bootstrap goes on in NCCL's threads
      ncclResult_t res = ncclCommInitRankConfig(&comm_, r.size, id, r.rank, &config);
      if (res == ncclInProgress || (res == ncclSuccess && comm_)) res = wait_comm(comm_, deadline);
      if (res != ncclSuccess) {
        const std::string why = res == ncclInProgress
                                    ? fmt::format("ncclCommInitRankConfig not done after {} ms: {}", r.timeout.count(),
                                                  ncclGetErrorString(res))
                                    : nccl_what("ncclCommInitRankConfig", res);
        throw CommError(where + ": " + why);
      }
    } catch (const std::exception& e) {
      release();  // the destructor does not run for a constructor that throws
      if (dynamic_cast<const CommError*>(&e)) throw;
      throw CommError(where + ": " + e.what());
    }
  }
  ~NcclCommunicator() override { release(); }

  std::string library() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  // The waiting thread aborts (it owns the communicator's calls): aborting here would race it.
  void revoke() override { revoked_ = true; }

  void all_reduce(std::vector<float>& data) override {
    const std::string what = fmt::format("nccl all-reduce of {} floats on rank {} of {}", data.size(), rank_, size_);
    if (!comm_) throw CommError(what + ": the communicator was aborted after an earlier failure");
    if (revoked_) fail(what, "revoked");
    if (data.empty()) return;
    const size_t bytes = data.size() * sizeof(float);
    check_cuda(what, "cudaSetDevice", cudaSetDevice(device_));  // the device is per host thread
    if (bytes > capacity_) {  // the buffer is kept: the job's all-reduces are all of one size
      cudaFree(buf_);
      buf_ = nullptr;
      capacity_ = 0;
      check_cuda(what, "cudaMalloc", cudaMalloc(&buf_, bytes));
      capacity_ = bytes;
    }
    // The stream is idle here (the last all-reduce was waited for), so a copy from pageable memory
    // waits for nothing but itself.
    check_cuda(what, "cudaMemcpyAsync to the device",
               cudaMemcpyAsync(buf_, data.data(), bytes, cudaMemcpyHostToDevice, stream_));
    const auto deadline = Clock::now() + timeout_;
    ncclResult_t res = ncclAllReduce(buf_, buf_, data.size(), ncclFloat, ncclSum, comm_, stream_);
    // Non-blocking: ncclInProgress means NCCL is still enqueuing; the communicator's state says when it has.
    if (res == ncclInProgress) res = wait_comm(comm_, deadline);
    if (res != ncclSuccess)
      fail(what, res == ncclInProgress ? timed_out("ncclAllReduce") : nccl_what("ncclAllReduce", res));
    wait_stream(what, deadline);
    // Nothing is left on the stream, so this synchronous copy back cannot hang.
    check_cuda(what, "cudaMemcpy to the host", cudaMemcpy(data.data(), buf_, bytes, cudaMemcpyDeviceToHost));
  }

 private:
  std::string timed_out(const char* call) const {
    return fmt::format("{} not done after {} ms: {}", call, timeout_.count(), ncclGetErrorString(ncclInProgress));
  }

  // The all-reduce is done when its stream is. A peer gone shows as the communicator's async error
  // (or as nothing at all: the kernel waits for its data), so both are polled under the deadline.
  void wait_stream(const std::string& what, Clock::time_point deadline) {
    const auto t0 = Clock::now();
    for (;;) {
      const cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady) fail(what, fmt::format("cudaStreamQuery: {}", cudaGetErrorString(e)));
      ncclResult_t state = ncclSuccess;
      if (ncclResult_t res = ncclCommGetAsyncError(comm_, &state); res != ncclSuccess)
        fail(what, nccl_what("ncclCommGetAsyncError", res));
      if (state != ncclSuccess && state != ncclInProgress) fail(what, nccl_what("ncclAllReduce", state));
      if (Clock::now() >= deadline) fail(what, timed_out("ncclAllReduce"));
      if (revoked_) fail(what, "revoked");
      pause(t0);
    }
  }

  // Aborting stops the kernels still waiting on the stream; the communicator cannot be used again
  // (the next form replaces it).
  [[noreturn]] void fail(const std::string& what, const std::string& why) {
    ncclCommAbort(comm_);
    comm_ = nullptr;
    throw CommError(fmt::format("{}: {} (communicator aborted)", what, why));
  }

  // A healthy communicator is finalized (its work flushed), under the timeout, then destroyed; one
  // in error, or whose finalize does not end in time, is aborted, which does not wait for peers.
  void release() {
    cudaSetDevice(device_);
    if (comm_) {
      ncclResult_t state = ncclSuccess;
      bool healthy = ncclCommGetAsyncError(comm_, &state) == ncclSuccess && state == ncclSuccess;
      if (healthy) {
        ncclResult_t res = ncclCommFinalize(comm_);
        if (res == ncclInProgress) res = wait_comm(comm_, Clock::now() + timeout_);
        healthy = res == ncclSuccess;
      }
      if (healthy)
        ncclCommDestroy(comm_);
      else
        ncclCommAbort(comm_);
      comm_ = nullptr;
    }
    if (buf_) cudaFree(buf_);
    buf_ = nullptr;
    capacity_ = 0;
    if (stream_) cudaStreamDestroy(stream_);
    stream_ = nullptr;
  }

  std::atomic<bool> revoked_{false};
  int rank_, size_;
  std::chrono::milliseconds timeout_;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* buf_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace

std::unique_ptr<Communicator> connect_nccl(const Rendezvous& r) { return std::make_unique<NcclCommunicator>(r); }

}  // namespace mxtb::host::comm
