#include "paging_cuda.h"

#include <cuda_fp16.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace mxtb::paging {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

struct StreamDeleter {
  void operator()(cudaStream_t s) const { cudaStreamDestroy(s); }
};
using StreamPtr = std::unique_ptr<CUstream_st, StreamDeleter>;
StreamPtr make_stream() {
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  return StreamPtr(s);
}
struct EventDeleter {
  void operator()(cudaEvent_t e) const { cudaEventDestroy(e); }
};
using EventPtr = std::unique_ptr<CUevent_st, EventDeleter>;
EventPtr make_event() {
  cudaEvent_t e = nullptr;
  check(cudaEventCreate(&e), "cudaEventCreate");
  return EventPtr(e);
}
struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};
struct HostFree {
  void operator()(void* p) const { cudaFreeHost(p); }
};
template <class T>
std::unique_ptr<T, DeviceFree> device_alloc(size_t n) {
  void* p = nullptr;
  check(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)), "cudaMalloc");
  return std::unique_ptr<T, DeviceFree>(static_cast<T*>(p));
}
template <class T>
std::unique_ptr<T, HostFree> pinned_alloc(size_t n) {
  void* p = nullptr;
  check(cudaHostAlloc(&p, std::max<size_t>(n, 1) * sizeof(T), cudaHostAllocPortable | cudaHostAllocMapped), "cudaHostAlloc");
  return std::unique_ptr<T, HostFree>(static_cast<T*>(p));
}

// Restores the current device when it goes out of scope.
class DeviceScope {
 public:
  explicit DeviceScope(int d) {
    check(cudaGetDevice(&old_), "cudaGetDevice");
    check(cudaSetDevice(d), "cudaSetDevice");
  }
  ~DeviceScope() { cudaSetDevice(old_); }

 private:
  int old_ = 0;
};

class DeviceMemory : public Memory {
 public:
  DeviceMemory(size_t bytes, int device) : size_(bytes), device_(device) {
    DeviceScope scope(device);
    data_ = device_alloc<std::byte>(bytes);
    check(cudaMemset(data_.get(), 0, std::max<size_t>(bytes, 1)), "cudaMemset");
  }
  std::byte* data() override { return data_.get(); }
  size_t size() const override { return size_; }
  MemoryKind kind() const override { return MemoryKind::Device; }
  int device() const override { return device_; }

 private:
  size_t size_;
  int device_;
  std::unique_ptr<std::byte, DeviceFree> data_;
};

class PinnedMemory : public Memory {
 public:
  explicit PinnedMemory(size_t bytes) : size_(bytes), data_(pinned_alloc<std::byte>(bytes)) {
    std::fill(data_.get(), data_.get() + bytes, std::byte{0});
  }
  std::byte* data() override { return data_.get(); }
  size_t size() const override { return size_; }
  MemoryKind kind() const override { return MemoryKind::Pinned; }

 private:
  size_t size_;
  std::unique_ptr<std::byte, HostFree> data_;
};

// Descriptors the kernel reads: a plan's descriptors cut into pieces of at most kTile bytes, so a
// few large blocks still spread over many thread blocks.
struct DevDesc {
  uint64_t src, dst, bytes;
};
constexpr uint64_t kTile = 64 * 1024;
constexpr int kThreads = 256;

__global__ void gather_scatter16(const DevDesc* __restrict__ descs, size_t n, const char* __restrict__ src,
                                 char* __restrict__ dst) {
  for (size_t i = blockIdx.x; i < n; i += gridDim.x) {
    const DevDesc d = descs[i];
    const uint4* s = reinterpret_cast<const uint4*>(src + d.src);
    uint4* t = reinterpret_cast<uint4*>(dst + d.dst);
    const size_t words = d.bytes / 16, step = blockDim.x;
    size_t j = threadIdx.x;
    // Four loads in flight before the stores: latency hiding without more threads.
    for (; j + 3 * step < words; j += 4 * step) {
      uint4 a = s[j], b = s[j + step], c = s[j + 2 * step], e = s[j + 3 * step];
      t[j] = a;
      t[j + step] = b;
      t[j + 2 * step] = c;
      t[j + 3 * step] = e;
    }
    for (; j < words; j += step) t[j] = s[j];
  }
}

// For plans whose offsets or sizes are not multiples of 16 (odd shapes): the same walk, byte by byte.
__global__ void gather_scatter1(const DevDesc* __restrict__ descs, size_t n, const char* __restrict__ src,
                                char* __restrict__ dst) {
  for (size_t i = blockIdx.x; i < n; i += gridDim.x) {
    const DevDesc d = descs[i];
    for (size_t j = threadIdx.x; j < d.bytes; j += blockDim.x) dst[d.dst + j] = src[d.src + j];
  }
}

class StreamBackend : public GpuBackend {
 public:
  explicit StreamBackend(int device) : device_(device) {
    DeviceScope scope(device);
    stream_ = make_stream();
  }
  cudaStream_t stream() const override { return stream_.get(); }
  void wait() override { check(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize"); }

 protected:
  int device_;
  StreamPtr stream_;
};

class PerBlockBackend : public StreamBackend {
 public:
  using StreamBackend::StreamBackend;
  std::string name() const override { return "per-block"; }
  void copy(const CopyPlan& plan) override {
    for (const auto& d : plan.descs)
      check(cudaMemcpyAsync(plan.dst_base + d.dst, plan.src_base + d.src, d.bytes, cudaMemcpyDefault, stream_.get()),
            "cudaMemcpyAsync");
  }
};

class BatchedBackend : public StreamBackend {
 public:
  using StreamBackend::StreamBackend;
  std::string name() const override { return "batched"; }
  void copy(const CopyPlan& plan) override {
    if (plan.descs.empty()) return;
    // The driver reads these arrays during the call, so they can be reused at once.
    dsts_.clear();
    srcs_.clear();
    sizes_.clear();
    for (const auto& d : plan.descs) {
      dsts_.push_back(plan.dst_base + d.dst);
      srcs_.push_back(plan.src_base + d.src);
      sizes_.push_back(d.bytes);
    }
    cudaMemcpyAttributes attr{};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    size_t idx = 0;
    check(cudaMemcpyBatchAsync(dsts_.data(), srcs_.data(), sizes_.data(), dsts_.size(), &attr, &idx, 1, stream_.get()),
          "cudaMemcpyBatchAsync");
  }

 private:
  std::vector<void*> dsts_;
  std::vector<const void*> srcs_;
  std::vector<size_t> sizes_;
};

class GatherBackend : public StreamBackend {
 public:
  GatherBackend(int device, int max_blocks) : StreamBackend(device) {
    int sms = 0;
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
    max_blocks_ = max_blocks > 0 ? max_blocks : 8 * sms;
    grow(4096);
  }
  std::string name() const override { return "gather"; }
  void copy(const CopyPlan& plan) override {
    if (plan.descs.empty()) return;
    bool wide = reinterpret_cast<uintptr_t>(plan.src_base) % 16 == 0 && reinterpret_cast<uintptr_t>(plan.dst_base) % 16 == 0;
    size_t pieces = 0;
    for (const auto& d : plan.descs) {
      wide = wide && d.src % 16 == 0 && d.dst % 16 == 0 && d.bytes % 16 == 0;
      pieces += (d.bytes + kTile - 1) / kTile;
    }
    if (pieces == 0) return;
    // Tables are appended until wait(), so a table still being uploaded is never overwritten.
    if (used_ + pieces > cap_) {
      wait();
      if (pieces > cap_) grow(std::max(pieces, 2 * cap_));
    }
    DevDesc* h = staging_.get() + used_;
    size_t k = 0;
    for (const auto& d : plan.descs)
      for (uint64_t off = 0; off < d.bytes; off += kTile) h[k++] = {d.src + off, d.dst + off, std::min(kTile, d.bytes - off)};
    DevDesc* dev = table_.get() + used_;
    check(cudaMemcpyAsync(dev, h, pieces * sizeof(DevDesc), cudaMemcpyHostToDevice, stream_.get()), "descriptor upload");
    used_ += pieces;
    int grid = static_cast<int>(std::min<size_t>(pieces, static_cast<size_t>(max_blocks_)));
    const char* s = reinterpret_cast<const char*>(plan.src_base);
    char* t = reinterpret_cast<char*>(plan.dst_base);
    if (wide)
      gather_scatter16<<<grid, kThreads, 0, stream_.get()>>>(dev, pieces, s, t);
    else
      gather_scatter1<<<grid, kThreads, 0, stream_.get()>>>(dev, pieces, s, t);
    check(cudaGetLastError(), "gather/scatter launch");
  }
  void wait() override {
    StreamBackend::wait();
    used_ = 0;
  }

 private:
  void grow(size_t n) {
    DeviceScope scope(device_);
    staging_ = pinned_alloc<DevDesc>(n);
    table_ = device_alloc<DevDesc>(n);
    cap_ = n;
  }
  int max_blocks_ = 0;
  size_t cap_ = 0, used_ = 0;
  std::unique_ptr<DevDesc, HostFree> staging_;
  std::unique_ptr<DevDesc, DeviceFree> table_;
};

}  // namespace

std::unique_ptr<Memory> make_device_memory(size_t bytes, int device) { return std::make_unique<DeviceMemory>(bytes, device); }
std::unique_ptr<Memory> make_pinned_memory(size_t bytes) { return std::make_unique<PinnedMemory>(bytes); }

MemoryFactory gpu_memory_factory(std::string* where) {
  int n = 0;
  check(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
  int remote = 0;
  if (n >= 2) {
    int a = 0, b = 0;
    check(cudaDeviceCanAccessPeer(&a, 0, 1), "cudaDeviceCanAccessPeer");
    check(cudaDeviceCanAccessPeer(&b, 1, 0), "cudaDeviceCanAccessPeer");
    if (a && b) {
      for (auto [from, to] : {std::pair{0, 1}, std::pair{1, 0}}) {
        DeviceScope scope(from);
        cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
        else check(e, "cudaDeviceEnablePeerAccess");
      }
      remote = 1;
    }
  }
  if (where)
    *where = remote ? "remote tier on device 1 (peer access)"
                    : (n >= 2 ? "remote tier on device 0 (devices 0 and 1 lack peer access)"
                              : "remote tier: a second pool on device 0 (one GPU)");
  return [remote](Tier t, size_t bytes) -> std::unique_ptr<Memory> {
    switch (t) {
      case Tier::Device: return make_device_memory(bytes, 0);
      case Tier::Remote: return make_device_memory(bytes, remote);
      case Tier::Host: return make_pinned_memory(bytes);
    }
    return nullptr;
  };
}

void copy_to_memory(Memory& m, size_t offset, const void* src, size_t bytes) {
  if (offset + bytes > m.size()) throw std::out_of_range("copy_to_memory: past the end of the memory");
  check(cudaMemcpy(m.data() + offset, src, bytes, cudaMemcpyDefault), "copy_to_memory");
}
void copy_from_memory(Memory& m, size_t offset, void* dst, size_t bytes) {
  if (offset + bytes > m.size()) throw std::out_of_range("copy_from_memory: past the end of the memory");
  check(cudaMemcpy(dst, m.data() + offset, bytes, cudaMemcpyDefault), "copy_from_memory");
}

const char* gpu_backend_name(GpuBackendKind k) {
  switch (k) {
    case GpuBackendKind::PerBlock: return "per-block";
    case GpuBackendKind::Batched: return "batched";
    case GpuBackendKind::Gather: return "gather";
  }
  return "?";
}

void GpuBackend::record(cudaEvent_t event) const { check(cudaEventRecord(event, stream()), "cudaEventRecord"); }

std::unique_ptr<GpuBackend> make_gpu_backend(GpuBackendKind kind, int device, int max_blocks) {
  switch (kind) {
    case GpuBackendKind::PerBlock: return std::make_unique<PerBlockBackend>(device);
    case GpuBackendKind::Batched: return std::make_unique<BatchedBackend>(device);
    case GpuBackendKind::Gather: return std::make_unique<GatherBackend>(device, max_blocks);
  }
  return nullptr;
}

std::unique_ptr<AutoBackend> make_auto_gpu_backend(Memory& src, Memory& dst, int device) {
  std::vector<std::unique_ptr<CopyBackend>> owned;
  std::vector<CopyBackend*> raw;
  for (auto k : {GpuBackendKind::Gather, GpuBackendKind::Batched, GpuBackendKind::PerBlock}) {
    owned.push_back(make_gpu_backend(k, device));
    raw.push_back(owned.back().get());
  }
  Crossover x = measure_crossover(raw, src, dst, {4096, 16384, 65536, 262144, 1 << 20}, {16, 256, 4096});
  return std::make_unique<AutoBackend>(std::move(owned), std::move(x));
}

// ---- paged decode attention ----

namespace {

__device__ inline float load(const char* p, int dtype) {
  if (dtype == 0) return *reinterpret_cast<const float*>(p);
  unsigned short u = *reinterpret_cast<const unsigned short*>(p);
  if (dtype == 1) return __half2float(__ushort_as_half(u));
  return __uint_as_float(static_cast<unsigned>(u) << 16);
}

constexpr int kMaxHeadSize = 256;

// One warp per (sequence, query head): each lane owns head_size/32 dimensions, the dot product is a
// butterfly reduction, the softmax is online (running max and sum), so one pass over the context.
__global__ void paged_decode_attention(const char* __restrict__ pool, size_t pool_blocks, int layer, int kv_heads,
                                       int head_size, int tokens_per_block, int dtype, int elem, int q_heads,
                                       const int* __restrict__ tables, const int* __restrict__ table_start,
                                       const int* __restrict__ context_lens, const float* __restrict__ q,
                                       float* __restrict__ out) {
  const int seq = blockIdx.x / q_heads, qh = blockIdx.x % q_heads, lane = threadIdx.x;
  const int kvh = qh / (q_heads / kv_heads);
  const int per = (head_size + 31) / 32;
  const size_t chunk = static_cast<size_t>(tokens_per_block) * kv_heads * head_size * elem;
  const float scale = rsqrtf(static_cast<float>(head_size));
  float qv[kMaxHeadSize / 32], acc[kMaxHeadSize / 32];
  const float* qp = q + (static_cast<size_t>(seq) * q_heads + qh) * head_size;
  for (int i = 0; i < per; ++i) {
    int d = lane + 32 * i;
    qv[i] = d < head_size ? qp[d] : 0.0f;
    acc[i] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  const int n = context_lens[seq];
  for (int t = 0; t < n; ++t) {
    const int blk = tables[table_start[seq] + t / tokens_per_block];
    const size_t tok = static_cast<size_t>(t % tokens_per_block);
    const size_t row = (tok * kv_heads + kvh) * static_cast<size_t>(head_size) * elem;
    const char* k = pool + ((static_cast<size_t>(layer) * 2 + 0) * pool_blocks + blk) * chunk + row;
    const char* v = pool + ((static_cast<size_t>(layer) * 2 + 1) * pool_blocks + blk) * chunk + row;
    float dot = 0.0f;
    for (int i = 0; i < per; ++i) {
      int d = lane + 32 * i;
      if (d < head_size) dot += qv[i] * load(k + static_cast<size_t>(d) * elem, dtype);
    }
    for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
    const float s = dot * scale, m2 = fmaxf(m, s), corr = expf(m - m2), p = expf(s - m2);
    l = l * corr + p;
    for (int i = 0; i < per; ++i) {
      int d = lane + 32 * i;
      float vv = d < head_size ? load(v + static_cast<size_t>(d) * elem, dtype) : 0.0f;
      acc[i] = acc[i] * corr + p * vv;
    }
    m = m2;
  }
  float* op = out + (static_cast<size_t>(seq) * q_heads + qh) * head_size;
  for (int i = 0; i < per; ++i) {
    int d = lane + 32 * i;
    if (d < head_size) op[d] = acc[i] / l;
  }
}

}  // namespace

struct GpuAttention::Impl {
  ModelShape shape;
  int q_heads = 1;
  size_t seqs = 0, per_layer = 0;
  std::unique_ptr<int, DeviceFree> tables, start, lens;
  std::unique_ptr<float, DeviceFree> q, out;
};

GpuAttention::GpuAttention(const ModelShape& shape, const AttentionBatch& batch) : impl_(std::make_unique<Impl>()) {
  batch.validate(shape);
  if (shape.head_size > kMaxHeadSize)
    throw std::invalid_argument("GpuAttention: head_size " + std::to_string(shape.head_size) + " is above " +
                                std::to_string(kMaxHeadSize));
  Impl& m = *impl_;
  m.shape = shape;
  m.q_heads = batch.q_heads;
  m.seqs = batch.tables.size();
  m.per_layer = batch.q.size();
  std::vector<int> flat, start;
  for (const auto& t : batch.tables) {
    start.push_back(static_cast<int>(flat.size()));
    flat.insert(flat.end(), t.begin(), t.end());
  }
  m.tables = device_alloc<int>(flat.size());
  m.start = device_alloc<int>(start.size());
  m.lens = device_alloc<int>(m.seqs);
  m.q = device_alloc<float>(batch.q.size());
  m.out = device_alloc<float>(m.per_layer * static_cast<size_t>(shape.layers));
  check(cudaMemcpy(m.tables.get(), flat.data(), flat.size() * sizeof(int), cudaMemcpyHostToDevice), "upload tables");
  check(cudaMemcpy(m.start.get(), start.data(), start.size() * sizeof(int), cudaMemcpyHostToDevice), "upload tables");
  check(cudaMemcpy(m.lens.get(), batch.context_lens.data(), m.seqs * sizeof(int), cudaMemcpyHostToDevice), "upload lengths");
  check(cudaMemcpy(m.q.get(), batch.q.data(), batch.q.size() * sizeof(float), cudaMemcpyHostToDevice), "upload query");
  check(cudaMemset(m.out.get(), 0, m.per_layer * static_cast<size_t>(shape.layers) * sizeof(float)), "cudaMemset");
}

GpuAttention::~GpuAttention() = default;

void GpuAttention::enqueue(const std::byte* pool, size_t pool_blocks, int layer, cudaStream_t stream) {
  Impl& m = *impl_;
  if (layer < 0 || layer >= m.shape.layers) throw std::invalid_argument("GpuAttention: no layer " + std::to_string(layer));
  int dtype = m.shape.dtype == DType::F32 ? 0 : m.shape.dtype == DType::F16 ? 1 : 2;
  paged_decode_attention<<<static_cast<unsigned>(m.seqs * static_cast<size_t>(m.q_heads)), 32, 0, stream>>>(
      reinterpret_cast<const char*>(pool), pool_blocks, layer, m.shape.kv_heads, m.shape.head_size,
      m.shape.tokens_per_block, dtype, static_cast<int>(dtype_bytes(m.shape.dtype)), m.q_heads, m.tables.get(),
      m.start.get(), m.lens.get(), m.q.get(), m.out.get() + m.per_layer * static_cast<size_t>(layer));
  check(cudaGetLastError(), "attention launch");
}

std::vector<std::vector<float>> GpuAttention::results() {
  Impl& m = *impl_;
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::vector<float> all(m.per_layer * static_cast<size_t>(m.shape.layers));
  check(cudaMemcpy(all.data(), m.out.get(), all.size() * sizeof(float), cudaMemcpyDeviceToHost), "download output");
  std::vector<std::vector<float>> out;
  for (int l = 0; l < m.shape.layers; ++l)
    out.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(m.per_layer * l),
                     all.begin() + static_cast<std::ptrdiff_t>(m.per_layer * (l + 1)));
  return out;
}

// ---- benchmark ----

namespace {

// Best-of-reps GPU time (seconds) of `run` enqueued on `stream`, and the host time of the enqueue.
template <class F>
std::pair<double, double> time_on(cudaStream_t stream, int reps, F run) {
  EventPtr a = make_event(), b = make_event();
  run();  // warm-up
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  double best = std::numeric_limits<double>::infinity(), submit = best;
  for (int r = 0; r < reps; ++r) {
    check(cudaEventRecord(a.get(), stream), "cudaEventRecord");
    auto t0 = std::chrono::steady_clock::now();
    run();
    double host = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    check(cudaEventRecord(b.get(), stream), "cudaEventRecord");
    check(cudaEventSynchronize(b.get()), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a.get(), b.get()), "cudaEventElapsedTime");
    best = std::min(best, ms * 1e-3);
    submit = std::min(submit, host);
  }
  return {best, submit};
}

}  // namespace

GpuBenchResult run_gpu_bench(const std::vector<size_t>& sizes, const std::vector<size_t>& counts, size_t max_total,
                             int reps) {
  GpuBenchResult res;
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  res.device = prop.name;
  MemoryFactory mf = gpu_memory_factory(&res.remote_where);
  std::unique_ptr<Memory> dev = mf(Tier::Device, max_total), remote = mf(Tier::Remote, max_total),
                          host = mf(Tier::Host, max_total);
  StreamPtr stream = make_stream();
  auto ceiling = [&](Memory& src, Memory& dst, size_t total) {
    auto [t, s] = time_on(stream.get(), reps, [&] {
      check(cudaMemcpyAsync(dst.data(), src.data(), total, cudaMemcpyDefault, stream.get()), "ceiling copy");
    });
    (void)s;
    return static_cast<double>(total) / t * 1e-9;
  };
  res.d2d_ceiling_gbps = ceiling(*dev, *remote, max_total);
  res.pinned_out_ceiling_gbps = ceiling(*dev, *host, max_total);
  res.pinned_in_ceiling_gbps = ceiling(*host, *dev, max_total);
  std::vector<std::unique_ptr<GpuBackend>> backends;
  for (auto k : {GpuBackendKind::PerBlock, GpuBackendKind::Batched, GpuBackendKind::Gather})
    backends.push_back(make_gpu_backend(k, 0));
  struct Dir {
    const char* tier;
    Memory *src, *dst;
    bool scatter;  // page-in: packed source, scattered destination
  };
  for (Dir dir : {Dir{"remote", dev.get(), remote.get(), false}, Dir{"host-out", dev.get(), host.get(), false},
                  Dir{"host-in", host.get(), dev.get(), true}}) {
    for (size_t size : sizes) {
      for (size_t count : counts) {
        size_t total = size * count;
        if (total > max_total) continue;
        CopyPlan plan{dir.src->data(), dir.dst->data(), {}};
        size_t stride = count > 2 ? count / 2 + 1 : 1;
        while (std::gcd(stride, count) != 1) ++stride;
        for (size_t i = 0; i < count; ++i) {
          uint64_t scattered = (i * stride % count) * size, packed = i * size;
          plan.descs.push_back(dir.scatter ? CopyDesc{packed, scattered, size, 0} : CopyDesc{scattered, packed, size, 0});
        }
        double ceil_gbps = ceiling(*dir.src, *dir.dst, total);
        for (auto& b : backends) {
          auto [t, submit] = time_on(b->stream(), reps, [&] { b->copy(plan); });
          b->wait();
          res.cells.push_back({b->name(), dir.tier, size, count, static_cast<double>(total) / t * 1e-9, ceil_gbps,
                               submit / static_cast<double>(count) * 1e9});
        }
      }
    }
  }
  return res;
}

}  // namespace mxtb::paging
