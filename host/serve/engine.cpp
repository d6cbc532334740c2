// The serving engine: a discrete-event simulation in simulated seconds. One iteration schedules
// (admits, preempts, resumes; paging is charged here), then runs one step: a prefill step when any
// admitted sequence still has prompt to process (vLLM v0 order), else one decode step of every
// running sequence. Invariants are checked after every step (docs/serve.md).
#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "host/serve/serve.h"

namespace mxtb::host::serve {

namespace {

enum class St { kFuture, kWaiting, kRunning, kPaged, kDropped, kDone, kRejected };

struct Seq {
  Request r;
  St st = St::kFuture;
  uint64_t generated = 0;
  uint64_t kv_tokens = 0;  // tokens whose KV exists (on the device, in a tier, or to be recomputed)
  uint64_t prefill_target = 0, prefill_done = 0;
  bool fresh = true;                // the pending prefill is the prompt's (it yields the first token)
  std::vector<BlockId> blocks;      // device blocks in token order, from token spilled * block_tokens
  uint64_t spilled = 0;             // leading blocks out of the device while the sequence outgrows the pool
  bool spill_mode = false;          // larger than the pool: runs alone, streams its spilled blocks
  uint64_t slice_used = 0;
  double wait_since = 0;
  bool promoted = false;
  uint64_t promo_order = 0, promoted_ahead = 0;
  double promoted_at = 0;
  double last_token_s = 0;
  uint64_t paged = 0;  // blocks in the tier after a preemption
  SeqRecord rec;
  bool prefilling() const { return prefill_done < prefill_target; }
};

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Thrown after recording a violation that leaves the engine's state unusable (an overcommitted
// pool): the run ends there and reports it.
struct Abort {};

class Engine {
 public:
  Engine(const std::vector<Request>& reqs, Policy policy, const ServeConfig& cfg, const PagerFactory& make_pager,
         FabricLinks* fabric)
      : policy_(policy),
        cfg_(cfg),
        cost_(model_by_name(cfg.model), device_by_name(cfg.device)),
        bt_(cfg.block_tokens),
        block_logical_(static_cast<double>(cfg.block_tokens) * static_cast<double>(cost_.model().kv_bytes_per_token())),
        pool_blocks_(static_cast<uint32_t>(std::floor(cfg.kv_pool_gib * 1073741824.0 / block_logical_))),
        pool_(pool_blocks_, cfg.block_tokens, cfg.real_bytes_per_token),
        tier_(policy == Policy::kAquaHost ? Tier::kHost : Tier::kPeer) {
    if (cfg.slice_steps == 0) throw InputError("slice_steps must be at least 1");
    if (cfg.max_batched_tokens < bt_) throw InputError("max_batched_tokens must hold at least one block");
    if (fabric) {
      fabric_ = fabric;
    } else {
      own_fabric_ = std::make_unique<StaticFabricLinks>(cfg.fabric);
      fabric_ = own_fabric_.get();
    }
    double tier_gib = tier_ == Tier::kHost ? cfg.host_tier_gib : cfg.peer_tier_gib;
    tier_cap_ = static_cast<uint64_t>(std::floor(tier_gib * 1073741824.0 / block_logical_));
    // Only the policy's own tier holds anything; the other gets no memory.
    TierBlocks caps;
    if (pages()) (tier_ == Tier::kHost ? caps.host : caps.peer) = tier_cap_;
    pager_ = make_pager ? make_pager(pool_, caps) : std::make_unique<PagingEngineKvPager>(pool_, caps);
    for (BlockId b = pool_blocks_; b > 0; --b) free_.push_back(b - 1);
    seqs_.resize(reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) {
      seqs_[i].r = reqs[i];
      seqs_[i].rec.id = reqs[i].id;
      seqs_[i].rec.arrival_s = reqs[i].arrival_s;
      seqs_[i].rec.expected = reqs[i].output_tokens;
      if (reqs[i].output_tokens == 0 || reqs[i].prompt_tokens == 0)
        throw InputError(fmt::format("request {} has no prompt or asks for no tokens", reqs[i].id));
      if (i > 0 && reqs[i].arrival_s < reqs[i - 1].arrival_s)
        throw InputError(fmt::format("request {} arrives before the one listed before it", reqs[i].id));
    }
    res_.policy = policy_name(policy);
    res_.pool_blocks = pool_blocks_;
  }

  RunResult run() {
    auto wall0 = std::chrono::steady_clock::now();
    size_t next = 0, finished = 0;
    double now = seqs_.empty() ? 0 : seqs_[0].r.arrival_s;
    res_.first_arrival_s = now;
    try {
      loop(now, next, finished);
    } catch (const Abort&) {
      // The violation is recorded; what follows reports the run as far as it got.
    }
    finish_run(now, wall0);
    return std::move(res_);
  }

 private:
  void loop(double& now, size_t& next, size_t& finished) {
    while (finished < seqs_.size()) {
      for (; next < seqs_.size() && seqs_[next].r.arrival_s <= now; ++next) arrive(seqs_[next]);
      if (live_.empty()) {
        if (next < seqs_.size()) now = seqs_[next].r.arrival_s;
        finished = done_;
        continue;
      }
      now = schedule(now);
      if (running_count() == 0) {
        if (next < seqs_.size()) {
          now = std::max(now, seqs_[next].r.arrival_s);
          continue;
        }
        violation(fmt::format("t={:.6f}: {} sequences runnable but none can be scheduled", now, live_.size()));
        break;
      }
      now = step(now);
      check(now);
      finished = done_;
      if (res_.violations.size() > 20) break;  // broken already; keep the report short
    }
  }

  void finish_run(double now, std::chrono::steady_clock::time_point wall0) {
    release_extra(now);
    res_.makespan_s = now;
    for (auto& s : seqs_) {
      if (s.st != St::kDone && s.st != St::kRejected)
        violation(fmt::format("request {} never completed ({} of {} tokens)", s.r.id, s.generated, s.r.output_tokens));
      if (s.st == St::kDone && s.generated != s.r.output_tokens)
        violation(fmt::format("request {} completed with {} tokens, wanted {}", s.r.id, s.generated, s.r.output_tokens));
      s.rec.generated = s.generated;
      res_.seqs.push_back(s.rec);
    }
    res_.starvation_bound_slice_s = slice_bound_s();
    res_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  }
  bool preemptive() const { return policy_ != Policy::kFcfs; }
  bool pages() const { return policy_ == Policy::kAquaHost || policy_ == Policy::kAquaFabric; }

  void violation(std::string what) { res_.violations.push_back(std::move(what)); }

  size_t running_count() const {
    size_t n = 0;
    for (auto* s : live_) n += s->st == St::kRunning;
    return n;
  }

  double bandwidth(double now) const {
    if (tier_ == Tier::kHost) return cfg_.pcie_bytes_s * cfg_.pcie_efficiency;
    return fabric_->live_circuits(cfg_.pager_xpu, cfg_.peer_xpu, now) * fabric_->lane_gbps() * 1e9 / 8.0 *
           cfg_.fabric.link_efficiency;
  }
  double transfer_s(uint64_t blocks, double now) const {
    return static_cast<double>(blocks) * block_logical_ / bandwidth(now);
  }

  // Blocks a sequence must hold to take its next step (its KV plus the slot the step writes).
  uint64_t need(const Seq& s) const {
    if (s.st == St::kWaiting) return ceil_div(s.r.prompt_tokens + 1, bt_);
    if (s.st == St::kRunning && (s.prefilling() || s.spill_mode)) return s.blocks.size();
    return ceil_div(s.kv_tokens + 1, bt_);
  }
  // FCFS reserves everything the request will ever hold: no preemption can be needed.
  uint64_t need_full(const Seq& s) const { return ceil_div(s.r.prompt_tokens + s.r.output_tokens, bt_); }

  std::vector<BlockId> alloc(uint64_t n, double now) {
    std::vector<BlockId> out;
    if (n > free_.size()) {
      violation(fmt::format("t={:.6f}: KV overcommitted: {} blocks wanted, {} free", now, n, free_.size()));
      throw Abort{};
    }
    for (uint64_t i = 0; i < n; ++i) {
      out.push_back(free_.back());
      free_.pop_back();
    }
    res_.max_blocks_used = std::max<uint64_t>(res_.max_blocks_used, pool_blocks_ - free_.size());
    return out;
  }
  void free_blocks(std::vector<BlockId>& blocks) {
    // Poison freed blocks so that stale bytes can never pass a resumed sequence's check.
    for (BlockId b : blocks) {
      std::fill(pool_.block(b), pool_.block(b) + pool_.block_bytes(), uint8_t{0xA5});
      free_.push_back(b);
    }
    blocks.clear();
  }

  void arrive(Seq& s) {
    s.st = St::kWaiting;
    s.wait_since = s.r.arrival_s;
    if (policy_ == Policy::kFcfs && need_full(s) > pool_blocks_) {
      s.st = St::kRejected;
      s.rec.rejected = true;
      s.rec.reject_reason = fmt::format("needs {} KV blocks, the pool has {}", need_full(s), pool_blocks_);
      ++done_;
      return;
    }
    live_.push_back(&s);
  }

  void start_running(Seq& s, double now) {
    double wait = now - s.wait_since;
    s.rec.longest_wait_s = std::max(s.rec.longest_wait_s, wait);
    if (preemptive() && s.promoted) {
      s.rec.max_promoted_ahead = std::max(s.rec.max_promoted_ahead, s.promoted_ahead);
      double bound = static_cast<double>(s.promoted_ahead + 1) * slice_bound_s();
      if (now - s.promoted_at > bound + 1e-9)
        violation(fmt::format("request {} waited {:.3f} s after promotion, bound {:.3f} s ({} promoted ahead)", s.r.id,
                              now - s.promoted_at, bound, s.promoted_ahead));
    }
    s.promoted = false;
    s.slice_used = 0;
    s.st = St::kRunning;
  }

  // One slice of the pool, measured so far: K decode steps, the prefill steps to refill the
  // pool, and the paging of every iteration in between.
  double slice_bound_s() const {
    double prefill_steps = static_cast<double>(ceil_div(uint64_t{pool_blocks_} * bt_, cfg_.max_batched_tokens) + 1);
    return static_cast<double>(cfg_.slice_steps) * max_decode_s_ + prefill_steps * max_prefill_s_ +
           static_cast<double>(cfg_.slice_steps + 1 + static_cast<uint64_t>(prefill_steps)) * max_iter_paging_s_;
  }

  // ----- scheduling -------------------------------------------------------------------------

  double schedule(double now) {
    double paging = 0;
    if (policy_ == Policy::kFcfs) {
      uint64_t held = pool_blocks_ - free_.size();
      size_t running = running_count();
      for (auto* s : live_) {  // live_ is in arrival order
        if (s->st != St::kWaiting) continue;
        if (held + need_full(*s) > pool_blocks_ || running >= cfg_.max_seqs) break;  // admission control
        s->blocks = alloc(need_full(*s), now);
        held += need_full(*s);
        ++running;
        s->prefill_target = s->r.prompt_tokens;
        s->prefill_done = 0;
        start_running(*s, now);
      }
      return now;
    }
    paging = schedule_preemptive(now);
    max_iter_paging_s_ = std::max(max_iter_paging_s_, paging);
    res_.paging_s += paging;
    res_.busy_s += paging;
    return now + paging;
  }

  double schedule_preemptive(double now) {
    double paging = 0;
    std::vector<Seq*> pinned, cands;
    size_t promoted_waiting = 0;
    for (auto* s : live_)
      if (s->st != St::kRunning && s->promoted) ++promoted_waiting;
    for (auto* s : live_) {
      if (s->st != St::kRunning && !s->promoted && now - s->wait_since >= cfg_.max_wait_s) {
        s->promoted = true;
        s->promo_order = ++promo_counter_;
        s->promoted_at = now;
        s->promoted_ahead = promoted_waiting++;
      }
      bool pin = s->st == St::kRunning && (s->slice_used < cfg_.slice_steps || s->prefilling() || s->spill_mode);
      (pin ? pinned : cands).push_back(s);
    }
    auto before = [](const Seq* a, const Seq* b) {
      // Promoted (aged) sequences first in promotion order, then least served, then oldest.
      if (a->promoted != b->promoted) return a->promoted;
      if (a->promoted) return a->promo_order < b->promo_order;
      if (a->generated != b->generated) return a->generated < b->generated;
      return a->r.id < b->r.id;
    };
    std::sort(pinned.begin(), pinned.end(), before);
    std::sort(cands.begin(), cands.end(), before);

    uint64_t used = 0;
    for (auto* s : pinned) used += s->spill_mode ? s->blocks.size() : need(*s);
    // Pinned sequences grew past the pool: the least important of them leave now.
    while (used > pool_blocks_ && !pinned.empty()) {
      Seq* s = pinned.back();
      pinned.pop_back();
      used -= need(*s);
      paging += preempt(*s, now + paging);
    }
    std::vector<Seq*> target;
    for (auto* s : cands) {
      uint64_t n = need(*s);
      if (n > pool_blocks_) {
        // Too long for the pool: it runs alone, once everything else is out.
        if (used == 0 && target.empty()) {
          s->spill_mode = true;
          target.push_back(s);
          used = pool_blocks_;
        }
        break;
      }
      if (used + n > pool_blocks_ || pinned.size() + target.size() >= cfg_.max_seqs) break;  // strict priority
      target.push_back(s);
      used += n;
    }
    // Running sequences left out keep their place only while the chosen ones still fit.
    uint64_t demand = used;
    std::vector<Seq*> stay;
    for (auto* s : cands)
      if (s->st == St::kRunning && std::find(target.begin(), target.end(), s) == target.end()) stay.push_back(s);
    for (auto* s : stay) demand += need(*s);
    while (demand > pool_blocks_ && !stay.empty()) {
      Seq* s = stay.back();  // least important first
      stay.pop_back();
      demand -= need(*s);
      paging += preempt(*s, now + paging);
    }
    for (auto* s : target) {
      if (s->st == St::kRunning) continue;
      paging += resume(*s, now + paging);
    }
    // Growth: every running decoder holds the block its next token goes to.
    for (auto* s : live_) {
      if (s->st != St::kRunning || s->prefilling() || s->spill_mode) continue;
      uint64_t want = need(*s);
      if (s->blocks.size() < want) {
        auto more = alloc(want - s->blocks.size(), now);
        s->blocks.insert(s->blocks.end(), more.begin(), more.end());
      }
    }
    steer_fabric(now);
    return paging;
  }

  // aqua-fabric takes extra circuits while a burst queues (or a long sequence streams) and gives
  // them back once the queue has drained to half the threshold.
  void steer_fabric(double now) {
    if (policy_ != Policy::kAquaFabric) return;
    size_t queued = 0;
    bool streaming = false;
    for (auto* s : live_) {
      queued += s->st != St::kRunning;
      streaming |= s->st == St::kRunning && s->spill_mode;
    }
    bool burst = queued >= static_cast<size_t>(cfg_.burst_queue_threshold) || streaming;
    if (burst && !extra_held_) {
      double live = fabric_->request_extra_circuits(cfg_.pager_xpu, cfg_.peer_xpu, cfg_.fabric.max_extra_circuits, now);
      note_reconfig(now, live);
      extra_held_ = true;
      extra_since_ = now;
    } else if (!burst && extra_held_ && queued * 2 < static_cast<size_t>(cfg_.burst_queue_threshold)) {
      release_extra(now);
    }
  }
  void release_extra(double now) {
    if (!extra_held_) return;
    note_reconfig(now, fabric_->release(cfg_.pager_xpu, cfg_.peer_xpu, now));
    res_.extra_circuit_s += now - extra_since_;
    extra_held_ = false;
  }
  // A fabric call that moved circuits answers a time after now: that is one reconfiguration.
  void note_reconfig(double now, double done) {
    if (done <= now) return;
    ++res_.reconfigurations;
    res_.reconfig_delays_s.push_back(done - now);
  }

  // Takes a running sequence off the device; returns the paging time.
  double preempt(Seq& s, double now) {
    ++res_.preemptions;
    ++s.rec.preemptions;
    s.wait_since = now;
    double t = 0;
    if (s.prefilling()) {
      // Half-done prefill: its partial KV is dropped and redone (cheaper than paging it).
      free_blocks(s.blocks);
      if (s.fresh) {
        s.st = St::kWaiting;
        s.prefill_target = s.prefill_done = 0;
      } else {
        s.st = St::kDropped;
      }
      return 0;
    }
    uint64_t keep = ceil_div(s.kv_tokens, bt_);
    if (pages() && tier_used_ + keep <= tier_cap_) {
      std::vector<BlockId> out(s.blocks.begin(), s.blocks.begin() + static_cast<std::ptrdiff_t>(keep));
      PageResult r = pager_->page_out(s.r.id, out, tier_);
      if (!r.ok) violation(fmt::format("page-out: {}", r.error));
      t = transfer_s(keep, now);
      tier_used_ += keep;
      s.paged = keep;
      ++res_.page_outs;
      res_.logical_bytes_paged += static_cast<uint64_t>(static_cast<double>(keep) * block_logical_);
      res_.real_bytes_paged += r.real_bytes;
      s.st = St::kPaged;
    } else {
      if (pages()) ++res_.fallback_drops;  // the tier is full: recompute instead
      s.st = St::kDropped;
    }
    free_blocks(s.blocks);
    return t;
  }

  double resume(Seq& s, double now) {
    double t = 0;
    if (s.spill_mode) {
      s.blocks = alloc(std::min<uint64_t>(pool_blocks_, ceil_div(s.r.prompt_tokens, bt_)), now);
      s.prefill_target = s.r.prompt_tokens;
      s.prefill_done = 0;
      s.fresh = true;
    } else if (s.st == St::kWaiting) {
      s.blocks = alloc(need(s), now);
      s.prefill_target = s.r.prompt_tokens;
      s.prefill_done = 0;
      s.fresh = true;
    } else if (s.st == St::kDropped) {
      s.blocks = alloc(need(s), now);
      s.prefill_target = s.kv_tokens;
      s.prefill_done = 0;
      s.fresh = false;
    } else if (s.st == St::kPaged) {
      s.blocks = alloc(need(s), now);
      std::vector<BlockId> in(s.blocks.begin(), s.blocks.begin() + static_cast<std::ptrdiff_t>(s.paged));
      PageResult r = pager_->page_in(s.r.id, in, tier_);
      if (!r.ok) violation(fmt::format("page-in: {}", r.error));
      // The sequence's state is exactly its tokens' KV: check every token's bytes.
      for (uint64_t tok = 0; tok < s.kv_tokens; ++tok)
        if (!pool_.token_matches(s.blocks[tok / bt_], static_cast<uint32_t>(tok % bt_), s.r.id, tok)) {
          violation(fmt::format("request {} resumed with wrong KV bytes at token {}", s.r.id, tok));
          break;
        }
      t = transfer_s(s.paged, now);
      tier_used_ -= s.paged;
      ++res_.page_ins;
      res_.logical_bytes_paged += static_cast<uint64_t>(static_cast<double>(s.paged) * block_logical_);
      res_.real_bytes_paged += r.real_bytes;
      s.paged = 0;
    }
    start_running(s, now);
    return t;
  }

  // ----- steps ------------------------------------------------------------------------------

  // Gives a spill-mode sequence the device block for token `tok`, moving its oldest resident
  // block out when the pool is full. Returns the exposed paging time.
  double spill_slot(Seq& s, uint64_t tok, double now) {
    double t = 0;
    while ((s.spilled + s.blocks.size()) * bt_ <= tok) {
      if (free_.empty()) {
        BlockId oldest = s.blocks.front();
        if (pages()) {
          PageResult r = pager_->page_out(s.r.id, {oldest}, tier_);
          if (!r.ok) violation(fmt::format("spill: {}", r.error));
          t += transfer_s(1, now + t);
          ++tier_used_;
          ++res_.page_outs;
          res_.logical_bytes_paged += static_cast<uint64_t>(block_logical_);
          res_.real_bytes_paged += r.real_bytes;
        }
        std::vector<BlockId> one{oldest};
        s.blocks.erase(s.blocks.begin());
        free_blocks(one);
        ++s.spilled;
      }
      auto b = alloc(1, now);
      s.blocks.insert(s.blocks.end(), b.begin(), b.end());
    }
    return t;
  }
  void write_token(Seq& s, uint64_t tok) {
    uint64_t rel = tok - s.spilled * bt_;
    pool_.write_token(s.blocks[rel / bt_], static_cast<uint32_t>(tok % bt_), s.r.id, tok);
  }

  // A spill-mode step: the spilled blocks stream in (overlapped with compute layer by layer, plus
  // one layer's worth to fill the pipeline), or are recomputed first. Returns the added time.
  double spill_cost(Seq& s, double compute_s, double now) {
    if (!s.spill_mode || s.spilled == 0) return 0;
    if (!pages()) {
      // Recomputing is compute, not paging: it lengthens the step but is not paging time.
      double t = cost_.prefill_s({{0, s.spilled * bt_}});
      recompute_in_step_ += t;
      return t;
    }
    PageResult r = pager_->fetch(s.r.id, tier_);
    if (!r.ok) violation(fmt::format("fetch: {}", r.error));
    ++res_.fetches;
    res_.logical_bytes_paged += static_cast<uint64_t>(static_cast<double>(s.spilled) * block_logical_);
    res_.real_bytes_paged += r.real_bytes;
    double x = transfer_s(s.spilled, now);
    return std::max(compute_s, x) + x / cost_.model().layers - compute_s;
  }

  double step(double now) {
    std::vector<Seq*> run;
    for (auto* s : live_)
      if (s->st == St::kRunning) run.push_back(s);
    std::vector<Seq*> pre;
    for (auto* s : run)
      if (s->prefilling()) pre.push_back(s);
    double exposed = 0, t = 0;
    if (!pre.empty()) {
      std::vector<CostModel::PrefillChunk> chunks;
      std::vector<std::pair<Seq*, uint64_t>> did;
      uint64_t budget = cfg_.max_batched_tokens;
      for (auto* s : pre) {
        uint64_t n = std::min(budget, s->prefill_target - s->prefill_done);
        if (n == 0) break;
        budget -= n;
        chunks.push_back({s->prefill_done, n});
        did.push_back({s, n});
      }
      for (auto& [s, n] : did)
        for (uint64_t tok = s->prefill_done; tok < s->prefill_done + n; ++tok) {
          if (s->spill_mode) exposed += spill_slot(*s, tok, now);
          write_token(*s, tok);
        }
      t = cost_.prefill_s(chunks);
      max_prefill_s_ = std::max(max_prefill_s_, t);
      for (auto& [s, n] : did) exposed += spill_cost(*s, t, now);
      now += t + exposed;
      for (auto& [s, n] : did) {
        s->prefill_done += n;
        if (s->prefilling()) continue;
        if (s->fresh) {
          s->kv_tokens = s->r.prompt_tokens;
          s->generated = 1;
          s->rec.first_token_s = now;
          res_.ttft_s.push_back(now - s->r.arrival_s);
          s->last_token_s = now;
          ++res_.output_tokens;
          if (s->generated == s->r.output_tokens) finish(*s, now);
        }
      }
    } else {
      uint64_t ctx = 0;
      for (auto* s : run) ctx += s->kv_tokens + 1;
      for (auto* s : run) {
        if (s->spill_mode) exposed += spill_slot(*s, s->kv_tokens, now);
        write_token(*s, s->kv_tokens);
      }
      t = cost_.decode_s(run.size(), ctx);
      max_decode_s_ = std::max(max_decode_s_, t);
      for (auto* s : run) exposed += spill_cost(*s, t, now);
      now += t + exposed;
      for (auto* s : run) {
        ++s->kv_tokens;
        ++s->generated;
        ++s->slice_used;
        ++res_.output_tokens;
        res_.tbt_s.push_back(now - s->last_token_s);
        s->last_token_s = now;
        if (s->generated == s->r.output_tokens) finish(*s, now);
      }
    }
    ++res_.steps;
    res_.busy_s += t + exposed;
    res_.paging_s += exposed - recompute_in_step_;
    recompute_in_step_ = 0;
    live_.erase(std::remove_if(live_.begin(), live_.end(), [](Seq* s) { return s->st == St::kDone; }), live_.end());
    return now;
  }

  void finish(Seq& s, double now) {
    free_blocks(s.blocks);
    if (s.spilled && pages()) {
      pager_->discard(s.r.id, tier_);
      tier_used_ -= s.spilled;
    }
    s.st = St::kDone;
    s.rec.finish_s = now;
    ++done_;
  }

  // After every step: the pool's books balance and nothing holds more than the pool.
  void check(double now) {
    uint64_t held = 0;
    for (auto* s : live_) {
      if (s->st != St::kRunning && !s->blocks.empty())
        violation(fmt::format("t={:.6f}: request {} holds blocks while not running", now, s->r.id));
      held += s->blocks.size();
      if (s->st == St::kRunning && !s->prefilling() && !s->spill_mode && s->blocks.size() * bt_ < s->kv_tokens)
        violation(fmt::format("t={:.6f}: request {} has {} tokens of KV in {} blocks", now, s->r.id, s->kv_tokens,
                              s->blocks.size()));
    }
    if (held + free_.size() != pool_blocks_ || held > pool_blocks_)
      violation(fmt::format("t={:.6f}: KV books do not balance: {} held + {} free != {} blocks", now, held,
                            free_.size(), pool_blocks_));
    if (tier_used_ > tier_cap_) violation(fmt::format("t={:.6f}: {} tier over capacity", now, tier_name(tier_)));
  }

  Policy policy_;
  ServeConfig cfg_;
  CostModel cost_;
  uint64_t bt_;
  double block_logical_;
  uint32_t pool_blocks_;
  DeviceKvPool pool_;
  Tier tier_;
  std::unique_ptr<KvPager> pager_;
  std::unique_ptr<StaticFabricLinks> own_fabric_;
  FabricLinks* fabric_ = nullptr;
  uint64_t tier_cap_ = 0, tier_used_ = 0;
  std::vector<BlockId> free_;
  std::vector<Seq> seqs_;
  std::vector<Seq*> live_;  // arrived, not finished, in arrival order
  size_t done_ = 0;
  uint64_t promo_counter_ = 0;
  double max_decode_s_ = 0, max_prefill_s_ = 0, max_iter_paging_s_ = 0;
  double recompute_in_step_ = 0;
  bool extra_held_ = false;
  double extra_since_ = 0;
  RunResult res_;
};

}  // namespace

RunResult simulate(const std::vector<Request>& reqs, Policy policy, const ServeConfig& cfg,
                   const PagerFactory& make_pager, FabricLinks* fabric) {
  Engine e(reqs, policy, cfg, make_pager, fabric);
  return e.run();
}

}  // namespace mxtb::host::serve
