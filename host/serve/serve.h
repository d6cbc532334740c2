// Preemptive LLM serving over the fabric (docs/serve.md): a roofline cost model of one
// accelerator serving one model, a discrete-event serving engine with its scheduling policies,
// and the two seams the engine pages through (KvPager: the bytes; FabricLinks: the bandwidth).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/paging.h"

namespace mxtb::host::serve {

// Bad input (trace file, CSV row, policy, model, device name): the message names the input.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------------------------
// Cost model
// ---------------------------------------------------------------------------------------------

struct ModelSpec {
  std::string name;
  int layers = 0;
  int hidden = 0;          // model width
  int kv_heads = 0;
  int head_dim = 0;
  int bytes_per_elem = 2;  // fp16
  double params = 0;          // all weights (bytes = params × bytes_per_elem)
  double compute_params = 0;  // weights a token multiplies through (all but the input embedding)
  uint64_t kv_bytes_per_token() const {
    return 2ull * static_cast<uint64_t>(layers) * kv_heads * head_dim * bytes_per_elem;
  }
  double weight_bytes() const { return params * bytes_per_elem; }
};

struct DeviceSpec {
  std::string name;
  double peak_flops = 0;     // dense fp16/bf16 tensor FLOP/s
  double hbm_bytes_s = 0;    // HBM bandwidth, bytes/s
  double hbm_bytes = 0;      // capacity
  double compute_eff = 0;    // achieved fraction of peak_flops in large matrix multiplies
  double memory_eff = 0;     // achieved fraction of hbm_bytes_s when streaming weights and KV
};

ModelSpec model_by_name(const std::string& name);    // "llama3-8b"; InputError otherwise
DeviceSpec device_by_name(const std::string& name);  // "h100", "h200"; InputError otherwise

// Step times in seconds: max(compute, memory) per step (roofline), weights read once per step.
class CostModel {
 public:
  CostModel(ModelSpec m, DeviceSpec d) : m_(std::move(m)), d_(std::move(d)) {}
  const ModelSpec& model() const { return m_; }
  const DeviceSpec& device() const { return d_; }
  struct PrefillChunk {
    uint64_t past = 0;  // tokens already in the KV cache that the chunk attends to
    uint64_t n = 0;     // new tokens
  };
  double prefill_s(const std::vector<PrefillChunk>& chunks) const;
  // One decode step of a batch whose sequences hold `context_tokens` tokens in all.
  double decode_s(uint64_t batch, uint64_t context_tokens) const;
  double compute_s(double flops) const { return flops / (d_.peak_flops * d_.compute_eff); }
  double memory_s(double bytes) const { return bytes / (d_.hbm_bytes_s * d_.memory_eff); }
  double attention_flops(uint64_t new_tokens, uint64_t past_plus_half) const;

 private:
  ModelSpec m_;
  DeviceSpec d_;
};

// ---------------------------------------------------------------------------------------------
// Requests and traces
// ---------------------------------------------------------------------------------------------

struct Request {
  uint64_t id = 0;
  double arrival_s = 0;
  uint64_t prompt_tokens = 0;
  uint64_t output_tokens = 0;  // tokens to generate (>= 1)
  bool in_burst = false;       // added by add_bursts (TTFT is also reported over these alone)
};

// The Azure LLM inference trace (TIMESTAMP,ContextTokens,GeneratedTokens). Arrivals are relative
// to the first row and divided by `scale` (scale 4: four times the request rate).
std::vector<Request> load_azure_trace(const std::string& path, double scale);
// A steady background with one burst on top (docs/serve.md: its parameters), seeded.
std::vector<Request> synthetic_burst(uint64_t seed, double scale);
// One long prompt (its length in docs/serve.md).
std::vector<Request> long_prompt();

// Chat requests (short prompts, long answers) with ShareGPT's length statistics as published with
// vLLM (Kwon et al., SOSP 2023, arXiv:2309.06180, Fig. 11: mean input 161.31 tokens, mean output
// 337.99 tokens): each length log-normal with sigma `kChatSigma` and the location that gives the
// published mean after the pruning vLLM's benchmarks apply (prompt 4..1024, output 4..1024).
struct ChatLengths {
  static constexpr double kMeanPrompt = 161.31, kMeanOutput = 337.99;
  static constexpr double kSigma = 1.0;  // spread: an assumption (the paper gives histograms, not parameters)
  static constexpr uint64_t kMin = 4, kMaxPrompt = 1024, kMaxOutput = 1024;
  double mu_prompt, mu_output;  // log-normal locations solved for the means above
  ChatLengths();
  // Mean of a log-normal(mu, sigma) truncated to [lo, hi].
  static double truncated_mean(double mu, double sigma, double lo, double hi);
};
// `rate_per_s` Poisson arrivals for `duration_s` seconds of chat requests, seeded.
std::vector<Request> chat_background(uint64_t seed, double rate_per_s, double duration_s);

// Bursts on top of a load: `count` bursts of `requests` arrivals each, uniform within `window_s`,
// at span x (i + 1) / (count + 1) of the load's span; lengths drawn by `lengths` (seeded). The
// result is sorted by arrival and renumbered.
struct BurstSpec {
  size_t requests = 0;
  int count = 1;
  double window_s = 1.0;
};
using LengthSampler = std::function<std::pair<uint64_t, uint64_t>()>;  // (prompt, output) tokens
LengthSampler chat_lengths(uint64_t seed);
LengthSampler lengths_from(const std::vector<Request>& rows, uint64_t seed);  // rows drawn at random
std::vector<Request> add_bursts(std::vector<Request> base, const BurstSpec& spec, const LengthSampler& lengths,
                                uint64_t seed);

// ---------------------------------------------------------------------------------------------
// Seams
// ---------------------------------------------------------------------------------------------

// Where a preempted sequence's KV goes: the paging engine's tiers (cuda/paging.h), one concept for
// both: Tier::Remote is a peer accelerator's memory (Aqua's offload tier), Tier::Host host DRAM.
using paging::Tier;
using paging::tier_name;

using SeqId = uint64_t;
using BlockId = uint32_t;

// The device's KV pool as real bytes: `blocks` blocks of `block_tokens` tokens of
// `real_bytes_per_token` bytes (scaled down from the model's KV bytes per token; docs/serve.md).
class DeviceKvPool {
 public:
  DeviceKvPool(uint32_t blocks, uint32_t block_tokens, uint32_t real_bytes_per_token);
  uint32_t blocks() const { return blocks_; }
  uint32_t block_tokens() const { return block_tokens_; }
  uint32_t real_bytes_per_token() const { return bytes_per_token_; }
  size_t block_bytes() const { return static_cast<size_t>(block_tokens_) * bytes_per_token_; }
  uint8_t* block(BlockId b);
  const uint8_t* block(BlockId b) const;
  // The bytes a sequence's token holds: a function of (sequence, token index) only, so a resumed
  // sequence can be checked against what it must hold.
  void write_token(BlockId b, uint32_t slot, SeqId seq, uint64_t token);
  bool token_matches(BlockId b, uint32_t slot, SeqId seq, uint64_t token) const;

 private:
  uint32_t blocks_, block_tokens_, bytes_per_token_;
  std::vector<uint8_t> bytes_;
};

struct PageResult {
  uint64_t blocks = 0;
  uint64_t real_bytes = 0;  // bytes this pager actually copied
  bool ok = true;
  std::string error;  // when !ok: what did not match
};

// Moves a sequence's KV blocks between the device pool and a tier: the engine charges the
// transfer time, the pager moves the (scaled-down) bytes.
class KvPager {
 public:
  virtual ~KvPager() = default;
  // Copies `blocks` (device pool, in the sequence's token order) to the tier, appended to what
  // the tier already holds for `seq`. The device blocks may be reused afterwards.
  virtual PageResult page_out(SeqId seq, const std::vector<BlockId>& blocks, Tier tier) = 0;
  // Copies the sequence's first blocks.size() paged blocks from the tier into `blocks`, checks
  // them against what page_out took, and frees them in the tier.
  virtual PageResult page_in(SeqId seq, const std::vector<BlockId>& blocks, Tier tier) = 0;
  // Reads all of the sequence's paged blocks into a staging area and checks them, keeping them in
  // the tier: a sequence too long for the device streams its paged part through every step.
  virtual PageResult fetch(SeqId seq, Tier tier) = 0;
  // Drops whatever the tier holds for `seq` (the sequence finished).
  virtual void discard(SeqId seq, Tier tier) = 0;
  virtual uint64_t paged_blocks(SeqId seq, Tier tier) const = 0;
};

// Blocks each tier can hold (scaled-down bytes: block_tokens x real bytes per token each).
struct TierBlocks {
  uint64_t peer = 0;
  uint64_t host = 0;
};

// The pager over the paging engine (cuda/paging.h, CPU backend): the peer tier is the engine's
// Remote pool, the host tier its Host pool. Each page-out is one engine sequence (a "run"): the
// device blocks are copied into the engine's device pool (its staging area: the serving engine
// owns the block allocator of the pool attention reads), then the engine pages the run out with
// its descriptors. A token's real bytes are its KV as 2 layers x {K, V} x 1 head x (B/8) fp16
// elements; B (real bytes per token) must be a multiple of 8. Page-in and fetch check every block
// against an FNV-1a digest taken at page-out. Errors (a tier full, a digest mismatch) come back as
// PageResult{ok = false, error naming the sequence, block and tier}; nothing moves on a full tier.
class PagingEngineKvPager : public KvPager {
 public:
  PagingEngineKvPager(DeviceKvPool& pool, TierBlocks capacity);
  ~PagingEngineKvPager() override;
  PageResult page_out(SeqId seq, const std::vector<BlockId>& blocks, Tier tier) override;
  PageResult page_in(SeqId seq, const std::vector<BlockId>& blocks, Tier tier) override;
  PageResult fetch(SeqId seq, Tier tier) override;
  void discard(SeqId seq, Tier tier) override;
  uint64_t paged_blocks(SeqId seq, Tier tier) const override;
  // The engine underneath (tests reach into its tier pools).
  paging::PagingEngine& engine();

 private:
  struct Impl;
  DeviceKvPool& pool_;
  std::unique_ptr<Impl> impl_;
};

// Circuits between two XPUs and what they carry: the emulator's (EmulatorFabricLinks,
// host/serve/fabric_ipbus.h) or scenario constants (StaticFabricLinks, for fast tests).
class FabricLinks {
 public:
  virtual ~FabricLinks() = default;
  // Circuits carrying traffic between XPUs a and b at simulated time now_s.
  virtual int live_circuits(int xpu_a, int xpu_b, double now_s) const = 0;
  virtual double lane_gbps() const = 0;
  // Asks for n more circuits between a and b; returns the simulated time they carry traffic
  // (now + the mesh's reconfiguration delay), or now_s when none could be given.
  virtual double request_extra_circuits(int xpu_a, int xpu_b, int n, double now_s) = 0;
  // Gives the extra circuits between a and b back to the fabric; returns the simulated time the
  // fabric is back in its base placement (now_s when nothing was held).
  virtual double release(int xpu_a, int xpu_b, double now_s) = 0;
};

struct FabricConfig {
  int base_circuits = 4;      // circuits the pager pair holds in the tenant's torus
  int max_extra_circuits = 12;  // the rest of the XPU's 16 lanes, taken from idle torus links
  double lane_gbps = 200;
  double link_efficiency = 0.95;  // 64b/66b coding and link-layer framing
  double reconfig_s = 60e-6;      // StaticFabricLinks only: thermo-optic mesh, failure-to-Active less detection
};

class StaticFabricLinks : public FabricLinks {
 public:
  explicit StaticFabricLinks(FabricConfig c) : c_(c) {}
  int live_circuits(int xpu_a, int xpu_b, double now_s) const override;
  double lane_gbps() const override { return c_.lane_gbps; }
  double request_extra_circuits(int xpu_a, int xpu_b, int n, double now_s) override;
  double release(int xpu_a, int xpu_b, double now_s) override;

 private:
  FabricConfig c_;
  int extra_ = 0;
  double extra_from_s_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Engine
// ---------------------------------------------------------------------------------------------

// kFcfs: reserve prompt + output up front (mxtb's admission control). kVllm03: vLLM 0.3.2's
// scheduler (prompt blocks + 1 % watermark at admission, blocks added as tokens grow, the newest
// running sequence preempted by recompute). kRecompute, kAquaHost, kAquaFabric: mxtb's
// time-sliced preemptive scheduler (pinned slices, least served first, aging). kAqua: Aqua's CFS
// scheduler (preempt running sequences as soon as a request waits, prefill first, re-pick the
// least served every few iterations) paging to the peer over the fabric, then host DRAM, then
// recompute, within a paging budget. docs/serve.md.
enum class Policy { Fcfs, Vllm03, Recompute, AquaHost, AquaFabric, Aqua };
Policy policy_by_name(const std::string& name);  // InputError names the policy and the choices
const char* policy_name(Policy p);

struct ServeConfig {
  std::string model = "llama3-8b";
  std::string device = "h100";
  double kv_pool_gib = 8;  // KV budget on the serving accelerator (logical bytes)
  uint32_t block_tokens = 16;
  uint32_t real_bytes_per_token = 64;  // bytes actually moved per token (scaled down)
  uint64_t max_batched_tokens = 8192;  // prefill tokens per step (and vLLM's prompt limit)
  uint64_t max_seqs = 256;
  uint64_t max_paddings = 256;  // vLLM 0.3.2: a prefill batch pads every prompt to its longest
  double watermark = 0.01;      // vLLM 0.3.2: blocks kept free at admission (share of the pool)
  uint64_t repick_steps = 5;    // aqua: decode iterations between re-picks of the least served
  double paging_budget = 0.05;  // aqua: optional paging time per second of step time
  double paging_credit_cap_s = 0.1;  // aqua: paging credit saved up at most
  uint64_t slice_steps = 16;  // decode steps a preempted-in sequence runs before it may be preempted
  double max_wait_s = 5;      // a runnable sequence waiting this long is promoted (aging)
  double pcie_bytes_s = 64e9;  // PCIe 5.0 x16, one direction
  double pcie_efficiency = 0.8;
  double host_tier_gib = 256;
  double peer_tier_gib = 40;
  int burst_queue_threshold = 8;  // aqua-fabric asks for circuits at this many waiting
  FabricConfig fabric;
  int pager_xpu = 0, peer_xpu = 1;
  bool check_every_step = true;
};

struct SeqRecord {
  uint64_t id = 0;
  bool in_burst = false;
  double arrival_s = 0, first_token_s = -1, finish_s = -1;
  uint64_t generated = 0, expected = 0;
  uint64_t preemptions = 0;
  double longest_wait_s = 0;      // longest time runnable but off the device
  uint64_t max_promoted_ahead = 0;  // most aged sequences queued ahead of it when it was aged
  bool rejected = false;
  std::string reject_reason;
};

struct RunResult {
  std::string policy;
  std::vector<SeqRecord> seqs;
  std::vector<double> ttft_s, tbt_s, burst_ttft_s;
  double makespan_s = 0, first_arrival_s = 0;
  double busy_s = 0, paging_s = 0;  // simulated seconds stepping / paging (paging is inside busy)
  uint64_t output_tokens = 0, steps = 0, preemptions = 0, page_outs = 0, page_ins = 0, fetches = 0;
  uint64_t logical_bytes_paged = 0, real_bytes_paged = 0;
  uint64_t max_blocks_used = 0, pool_blocks = 0;
  uint64_t reconfigurations = 0, fallback_drops = 0;
  uint64_t host_page_outs = 0;     // page-outs that went to host DRAM because the peer tier was full
  uint64_t budget_deferrals = 0;   // aqua: re-picks or arrival preemptions put off by the paging budget
  uint64_t tier_deferrals = 0;     // aqua: arrival preemptions refused because the tiers hold the backlog
  std::vector<double> reconfig_delays_s;  // each reconfiguration's delay as the fabric reported it
  double extra_circuit_s = 0;  // seconds extra circuits were held
  std::vector<std::string> violations;  // broken invariants (empty in a correct run)
  double starvation_bound_slice_s = 0;  // the per-promoted-ahead slice bound the check used
  double wall_s = 0;
  double throughput() const;       // output tokens per simulated second, first arrival to last finish
  double paging_share() const;     // paging_s / makespan
  nlohmann::json to_json() const;  // figures and percentiles
};

double percentile(std::vector<double> v, double p);  // nearest-rank; 0 for empty

// Builds the pager over the engine's device pool and the tier capacities the run allows.
using PagerFactory = std::function<std::unique_ptr<KvPager>(DeviceKvPool&, TierBlocks)>;

// Runs `reqs` through the engine under `policy`. Null make_pager: PagingEngineKvPager; null
// fabric: StaticFabricLinks from cfg.fabric.
RunResult simulate(const std::vector<Request>& reqs, Policy policy, const ServeConfig& cfg,
                   const PagerFactory& make_pager = nullptr, FabricLinks* fabric = nullptr);

}  // namespace mxtb::host::serve
