// The serving engine: a discrete-event simulation in simulated seconds. One iteration schedules
// (admits, preempts, resumes; paging is charged here), then runs one step: a prefill step when any
// admitted sequence still has prompt to process (vLLM v0 order), else one decode step of every
// running sequence. Invariants are checked after every step (docs/serve.md).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>

#include <fmt/format.h>

#include "host/serve/serve.h"

namespace mxtb::host::serve {

namespace {

enum class St { Future, Waiting, Running, Paged, Dropped, Done, Rejected };

struct Seq {
  Request r;
  St st = St::Future;
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
  Tier paged_tier = Tier::Remote;  // where they are
  uint64_t run_order = 0;         // when it last started running (aqua's preemption order)
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
        chain_(tier_chain(policy)) {
    if (cfg.slice_steps == 0) throw InputError("slice_steps must be at least 1");
    if (cfg.max_batched_tokens < bt_) throw InputError("max_batched_tokens must hold at least one block");
    if (fabric) {
      fabric_ = fabric;
    } else {
      own_fabric_ = std::make_unique<StaticFabricLinks>(cfg.fabric);
      fabric_ = own_fabric_.get();
    }
    // Only the policy's own tiers hold anything; the others get no memory.
    TierBlocks caps;
    for (Tier t : chain_) {
      double gib = t == Tier::Host ? cfg.host_tier_gib : cfg.peer_tier_gib;
      cap(t) = static_cast<uint64_t>(std::floor(gib * 1073741824.0 / block_logical_));
      (t == Tier::Host ? caps.host : caps.peer) = cap(t);
    }
    if (cfg.watermark < 0 || cfg.watermark >= 1) throw InputError(fmt::format("watermark {} outside [0, 1)", cfg.watermark));
    watermark_blocks_ = static_cast<uint64_t>(cfg.watermark * pool_blocks_);
    credit_s_ = cfg.paging_credit_cap_s;
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
      if (s.st != St::Done && s.st != St::Rejected)
        violation(fmt::format("request {} never completed ({} of {} tokens)", s.r.id, s.generated, s.r.output_tokens));
      if (s.st == St::Done && s.generated != s.r.output_tokens)
        violation(fmt::format("request {} completed with {} tokens, wanted {}", s.r.id, s.generated, s.r.output_tokens));
      s.rec.generated = s.generated;
      res_.seqs.push_back(s.rec);
    }
    res_.starvation_bound_slice_s = slice_bound_s();
    res_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  }
  // Where a preempted sequence's KV goes, in order; recompute when every tier is full.
  static std::vector<Tier> tier_chain(Policy p) {
    if (p == Policy::AquaHost) return {Tier::Host};
    if (p == Policy::AquaFabric || p == Policy::Aqua) return {Tier::Remote, Tier::Host};
    return {};
  }
  bool preemptive() const { return policy_ != Policy::Fcfs; }
  bool pages() const { return !chain_.empty(); }
  bool vllm_admission() const { return policy_ == Policy::Vllm03 || policy_ == Policy::Aqua; }
  uint64_t& cap(Tier t) { return tier_cap_[t == Tier::Host ? 0 : 1]; }
  uint64_t& used(Tier t) { return tier_used_[t == Tier::Host ? 0 : 1]; }
  // The first tier of the chain with room for `blocks`, if any.
  const Tier* tier_for(uint64_t blocks) {
    for (const Tier& t : chain_)
      if (used(t) + blocks <= cap(t)) return &t;
    return nullptr;
  }
  // A long sequence streams its spilled blocks through the first tier of the chain.
  Tier spill_tier() const { return chain_.empty() ? Tier::Remote : chain_.front(); }

  void violation(std::string what) { res_.violations.push_back(std::move(what)); }

  size_t running_count() const {
    size_t n = 0;
    for (auto* s : live_) n += s->st == St::Running;
    return n;
  }

  double bandwidth(double now, Tier tier) const {
    if (tier == Tier::Host) return cfg_.pcie_bytes_s * cfg_.pcie_efficiency;
    return fabric_->live_circuits(cfg_.pager_xpu, cfg_.peer_xpu, now) * fabric_->lane_gbps() * 1e9 / 8.0 *
           cfg_.fabric.link_efficiency;
  }
  double transfer_s(uint64_t blocks, double now, Tier tier) const {
    return static_cast<double>(blocks) * block_logical_ / bandwidth(now, tier);
  }

  // Blocks a sequence must hold to take its next step (its KV plus the slot the step writes).
  uint64_t need(const Seq& s) const {
    if (s.st == St::Waiting) return ceil_div(s.r.prompt_tokens + 1, bt_);
    if (s.st == St::Running && (s.prefilling() || s.spill_mode)) return s.blocks.size();
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

  void reject(Seq& s, std::string why) {
    s.st = St::Rejected;
    s.rec.rejected = true;
    s.rec.reject_reason = std::move(why);
    ++done_;
  }

  void arrive(Seq& s) {
    s.st = St::Waiting;
    s.wait_since = s.r.arrival_s;
    s.rec.in_burst = s.r.in_burst;
    if (policy_ == Policy::Fcfs && need_full(s) > pool_blocks_)
      return reject(s, fmt::format("needs {} KV blocks, the pool has {}", need_full(s), pool_blocks_));
    if (vllm_admission()) {
      // vLLM 0.3.2 ignores a prompt longer than its limit (min(max_model_len, max_num_batched_tokens))
      // and one whose blocks would never leave the watermark free.
      if (s.r.prompt_tokens > cfg_.max_batched_tokens)
        return reject(s, fmt::format("prompt of {} tokens exceeds the prompt limit of {} (vLLM 0.3.2 ignores it)",
                                     s.r.prompt_tokens, cfg_.max_batched_tokens));
      if (ceil_div(s.r.prompt_tokens, bt_) + watermark_blocks_ > pool_blocks_)
        return reject(s, fmt::format("needs {} KV blocks for its prompt, the pool has {} ({} kept free)",
                                     ceil_div(s.r.prompt_tokens, bt_), pool_blocks_, watermark_blocks_));
      waitq_.push_back(&s);
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
    s.st = St::Running;
    s.run_order = ++run_counter_;
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
    if (policy_ == Policy::Fcfs) {
      uint64_t held = pool_blocks_ - free_.size();
      size_t running = running_count();
      for (auto* s : live_) {  // live_ is in arrival order
        if (s->st != St::Waiting) continue;
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
    if (policy_ == Policy::Vllm03) paging = schedule_vllm(now);
    else if (policy_ == Policy::Aqua) paging = schedule_aqua(now);
    else paging = schedule_preemptive(now);
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
      if (s->st != St::Running && s->promoted) ++promoted_waiting;
    for (auto* s : live_) {
      if (s->st != St::Running && !s->promoted && now - s->wait_since >= cfg_.max_wait_s) {
        s->promoted = true;
        s->promo_order = ++promo_counter_;
        s->promoted_at = now;
        s->promoted_ahead = promoted_waiting++;
      }
      bool pin = s->st == St::Running && (s->slice_used < cfg_.slice_steps || s->prefilling() || s->spill_mode);
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
      if (s->st == St::Running && std::find(target.begin(), target.end(), s) == target.end()) stay.push_back(s);
    for (auto* s : stay) demand += need(*s);
    while (demand > pool_blocks_ && !stay.empty()) {
      Seq* s = stay.back();  // least important first
      stay.pop_back();
      demand -= need(*s);
      paging += preempt(*s, now + paging);
    }
    for (auto* s : target) {
      if (s->st == St::Running) continue;
      paging += resume(*s, now + paging);
    }
    // Growth: every running decoder holds the block its next token goes to.
    for (auto* s : live_) {
      if (s->st != St::Running || s->prefilling() || s->spill_mode) continue;
      uint64_t want = need(*s);
      if (s->blocks.size() < want) {
        auto more = alloc(want - s->blocks.size(), now);
        s->blocks.insert(s->blocks.end(), more.begin(), more.end());
      }
    }
    steer_fabric(now);
    return paging;
  }

  // ----- vLLM 0.3.2 and Aqua -------------------------------------------------------------------

  // vLLM 0.3.2's admission (Scheduler._schedule, with no swapped sequences): waiting sequences in
  // queue order while their prompt's blocks leave the watermark free, the batch's tokens (padded
  // to its longest prompt) fit max_num_batched_tokens, its padding max_paddings and the running
  // sequences max_num_seqs; stops at the first that does not fit. A sequence preempted by
  // recompute comes back with its generated tokens as prompt. Returns how many were admitted.
  size_t admit_vllm(double now) {
    size_t running = running_count(), n = 0;
    uint64_t free = free_.size(), longest = 0, sum = 0;
    while (!waitq_.empty()) {
      Seq* s = waitq_.front();
      const bool fresh = s->st == St::Waiting;
      const uint64_t len = fresh ? s->r.prompt_tokens : s->kv_tokens;
      const uint64_t blocks = ceil_div(len, bt_);
      if (free < blocks + watermark_blocks_) break;
      const uint64_t wide = std::max(longest, len);
      // A recomputed sequence longer than the batch limit goes alone (its prefill is chunked).
      if (n > 0 && ((n + 1) * wide > cfg_.max_batched_tokens || (n + 1) * wide - (sum + len) > cfg_.max_paddings))
        break;
      if (running + 1 > cfg_.max_seqs) break;
      waitq_.pop_front();
      s->blocks = alloc(blocks, now);
      s->prefill_target = len;
      s->prefill_done = 0;
      s->fresh = fresh;
      start_running(*s, now);
      free -= blocks;
      longest = wide;
      sum += len;
      ++n;
      ++running;
    }
    return n;
  }

  // Gives a running decoder the block its next token goes to.
  void grow(Seq& s, double now) {
    uint64_t want = need(s);
    if (s.blocks.size() < want) {
      auto more = alloc(want - s.blocks.size(), now);
      s.blocks.insert(s.blocks.end(), more.begin(), more.end());
    }
  }

  // Preempts by recompute or paging; a sequence that must be recomputed waits at the queue's front.
  double preempt_to_queue(Seq& s, double now) {
    double t = preempt(s, now);
    if (s.st == St::Dropped || s.st == St::Waiting) waitq_.push_front(&s);
    return t;
  }

  std::vector<Seq*> running_by(bool (*before)(const Seq*, const Seq*)) {
    std::vector<Seq*> run;
    for (auto* s : live_)
      if (s->st == St::Running) run.push_back(s);
    std::sort(run.begin(), run.end(), before);
    return run;
  }

  // vLLM 0.3.2: prefill whatever the admission takes; otherwise decode every running sequence in
  // arrival order, and when a sequence finds no free block (can_append_slot: one free block per
  // sequence) preempt the newest running sequence by recompute (itself if it is the newest).
  double schedule_vllm(double now) {
    if (admit_vllm(now) > 0) return 0;
    auto run = running_by([](const Seq* a, const Seq* b) { return a->r.id < b->r.id; });
    for (size_t i = 0; i < run.size(); ++i) {
      Seq* s = run[i];
      bool kept = true;
      while (free_.empty()) {
        if (run.size() > i + 1) {
          preempt_to_queue(*run.back(), now);
          run.pop_back();
        } else {
          preempt_to_queue(*s, now);
          run.pop_back();
          kept = false;
          break;
        }
      }
      if (!kept) break;
      grow(*s, now);
    }
    return 0;
  }

  // Optional paging (an arrival's preemptions, a re-pick) spends the budget's credit; a
  // preemption needed to make progress does not wait for it.
  double spend(double t) {
    credit_s_ -= t;
    return t;
  }

  // Aqua's CFS scheduler (the vLLM 0.3.2 fork of the Aqua authors): while a request waits, running
  // sequences leave for the tiers (first admitted first) until the head's prompt fits, and the
  // waiting prompts are prefilled first; otherwise decode, and every `repick_steps` iterations (or
  // when nothing runs) re-pick the least served sequences (fewest tokens generated) that fit,
  // paging the others out and the chosen ones in. mxtb's additions (docs/serve.md): the paging
  // budget (optional preemptions only while credit is left), no arrival preemption whose victim
  // would have to be recomputed, and a decoder that outgrows the pool pushes out the most served.
  double schedule_aqua(double now) {
    double paging = 0;
    if (!waitq_.empty()) {
      Seq* head = waitq_.front();
      const uint64_t want = ceil_div(head->st == St::Waiting ? head->r.prompt_tokens : head->kv_tokens, bt_);
      while (free_.size() < want + watermark_blocks_) {
        auto run = running_by([](const Seq* a, const Seq* b) { return a->run_order < b->run_order; });
        if (run.empty()) break;
        Seq* victim = run.front();
        // Into the first tier, or the next while it stays half free: past that, arrivals wait as
        // under vLLM (starting ever more work under overload fills the tiers, and then every
        // further preemption is a recompute).
        const uint64_t vb = ceil_div(victim->kv_tokens, bt_);
        const Tier* to = tier_for(vb);
        if (!to || victim->prefilling()) break;
        if (*to != chain_.front() && 2 * (used(*to) + vb) > cap(*to)) {
          ++res_.tier_deferrals;
          break;
        }
        // An arrival's preemptions may borrow up to one credit cap ahead (a re-pick needs credit
        // in hand), so that a re-pick never keeps a waiting request from its first token.
        if (credit_s_ <= -cfg_.paging_credit_cap_s) {
          ++res_.budget_deferrals;
          break;
        }
        paging += spend(preempt(*victim, now + paging));
      }
      if (admit_vllm(now + paging) > 0) return paging;
    }
    const bool any = running_count() > 0;
    if (any && repick_counter_ + 1 >= cfg_.repick_steps && credit_s_ > 0) {
      paging += repick(now + paging, true, true);
      repick_counter_ = 0;
    } else {
      if (any && repick_counter_ + 1 >= cfg_.repick_steps) ++res_.budget_deferrals;
      // Between re-picks (and while the budget defers one) free blocks still take paged sequences
      // in, least served first, displacing nobody: that is what keeps the batch full. Not while a
      // request waits: blocks that fall free are its (Aqua admits waiting requests first).
      if (waitq_.empty()) paging += repick(now + paging, false, false);
      ++repick_counter_;
    }
    // A decoder whose next token needs a block the pool does not have: the most served leave.
    for (;;) {
      auto run = running_by([](const Seq* a, const Seq* b) {
        return a->generated != b->generated ? a->generated < b->generated : a->r.id < b->r.id;
      });
      uint64_t short_by = 0;
      for (auto* s : run) short_by += need(*s) > s->blocks.size() ? need(*s) - s->blocks.size() : 0;
      if (short_by <= free_.size() || run.size() <= 1) break;
      paging += preempt_to_queue(*run.back(), now + paging);
    }
    for (auto* s : live_)
      if (s->st == St::Running && !s->prefilling()) grow(*s, now);
    steer_fabric(now);
    return paging;
  }

  // CFS order: least served first (fewest tokens generated), then oldest. mxtb's addition: a
  // sequence off the device for max_wait_s or longer comes first (least served alone starves a
  // long generation while shorter ones keep arriving).
  bool cfs_before(const Seq* a, const Seq* b, double now) const {
    const bool aa = a->st != St::Running && now - a->wait_since >= cfg_.max_wait_s;
    const bool ba = b->st != St::Running && now - b->wait_since >= cfg_.max_wait_s;
    if (aa != ba) return aa;
    if (aa) return a->wait_since < b->wait_since;
    return a->generated != b->generated ? a->generated < b->generated : a->r.id < b->r.id;
  }

  // Re-pick (Aqua: every repick_steps iterations): paged sequences that come before running ones
  // in CFS order take their place, the most served running ones leaving for the tiers to make
  // room (each brought in needs its blocks and one more). An optional re-pick moves at most what
  // the paging credit pays for (in and out, at the first tier's bandwidth). Without `displace` it
  // only fills free blocks (every iteration, and when nothing runs), paid but not limited.
  double repick(double now, bool optional, bool displace) {
    std::vector<Seq*> keep, waiting;
    for (auto* s : live_) {
      if (s->st == St::Running) keep.push_back(s);
      else if (s->st == St::Paged) waiting.push_back(s);
    }
    auto before = [&](const Seq* a, const Seq* b) { return cfs_before(a, b, now); };
    std::sort(keep.begin(), keep.end(), before);
    std::sort(waiting.begin(), waiting.end(), before);
    const double cap_blocks = optional ? std::max(0.0, credit_s_) * bandwidth(now, chain_.front()) / block_logical_
                                       : std::numeric_limits<double>::infinity();
    uint64_t room = free_.size(), moved = 0;
    // A re-pick only swaps: it never sends a sequence to be recomputed (the tiers' room, counting
    // what the sequences brought in give back).
    uint64_t tier_room = 0;
    for (Tier t : chain_) tier_room += cap(t) - used(t);
    size_t kept = keep.size();  // keep[0, kept) stay; keep[kept, ...) leave
    std::vector<Seq*> in;
    for (auto* p : waiting) {
      if (kept + in.size() >= cfg_.max_seqs) break;
      const uint64_t want = p->paged + 1;
      uint64_t r = room, out = 0;
      size_t k = kept;
      while (displace && r < want && k > 0 && before(p, keep[k - 1])) {
        --k;
        r += keep[k]->blocks.size();
        out += keep[k]->blocks.size();
      }
      if (r < want) break;  // it would displace sequences that come before it
      if (out > tier_room + p->paged) break;
      tier_room = tier_room + p->paged - out;
      if (static_cast<double>(moved + out + p->paged) > cap_blocks) break;
      moved += out + p->paged;
      room = r - want;
      kept = k;
      in.push_back(p);
    }
    double paging = 0;
    for (size_t i = kept; i < keep.size(); ++i) paging += preempt_to_queue(*keep[i], now + paging);
    for (auto* p : in) paging += resume(*p, now + paging);
    return optional ? spend(paging) : paging;
  }

  // aqua-fabric takes extra circuits while a burst queues (or a long sequence streams) and gives
  // them back once the queue has drained to half the threshold.
  void steer_fabric(double now) {
    if (policy_ != Policy::AquaFabric && policy_ != Policy::Aqua) return;
    size_t queued = 0;
    bool streaming = false;
    for (auto* s : live_) {
      queued += s->st != St::Running;
      streaming |= s->st == St::Running && s->spill_mode;
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
        s.st = St::Waiting;
        s.prefill_target = s.prefill_done = 0;
      } else {
        s.st = St::Dropped;
      }
      return 0;
    }
    uint64_t keep = ceil_div(s.kv_tokens, bt_);
    if (const Tier* tier = tier_for(keep)) {
      std::vector<BlockId> out(s.blocks.begin(), s.blocks.begin() + static_cast<std::ptrdiff_t>(keep));
      PageResult r = pager_->page_out(s.r.id, out, *tier);
      if (!r.ok) violation(fmt::format("page-out: {}", r.error));
      t = transfer_s(keep, now, *tier);
      used(*tier) += keep;
      s.paged = keep;
      s.paged_tier = *tier;
      ++res_.page_outs;
      res_.host_page_outs += *tier == Tier::Host && chain_.front() != Tier::Host;
      res_.logical_bytes_paged += static_cast<uint64_t>(static_cast<double>(keep) * block_logical_);
      res_.real_bytes_paged += r.real_bytes;
      s.st = St::Paged;
    } else {
      if (pages()) ++res_.fallback_drops;  // every tier is full: recompute instead
      s.st = St::Dropped;
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
    } else if (s.st == St::Waiting) {
      s.blocks = alloc(need(s), now);
      s.prefill_target = s.r.prompt_tokens;
      s.prefill_done = 0;
      s.fresh = true;
    } else if (s.st == St::Dropped) {
      s.blocks = alloc(need(s), now);
      s.prefill_target = s.kv_tokens;
      s.prefill_done = 0;
      s.fresh = false;
    } else if (s.st == St::Paged) {
      s.blocks = alloc(need(s), now);
      std::vector<BlockId> in(s.blocks.begin(), s.blocks.begin() + static_cast<std::ptrdiff_t>(s.paged));
      PageResult r = pager_->page_in(s.r.id, in, s.paged_tier);
      if (!r.ok) violation(fmt::format("page-in: {}", r.error));
      // The sequence's state is exactly its tokens' KV: check every token's bytes.
      for (uint64_t tok = 0; tok < s.kv_tokens; ++tok)
        if (!pool_.token_matches(s.blocks[tok / bt_], static_cast<uint32_t>(tok % bt_), s.r.id, tok)) {
          violation(fmt::format("request {} resumed with wrong KV bytes at token {}", s.r.id, tok));
          break;
        }
      t = transfer_s(s.paged, now, s.paged_tier);
      used(s.paged_tier) -= s.paged;
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
          PageResult r = pager_->page_out(s.r.id, {oldest}, spill_tier());
          if (!r.ok) violation(fmt::format("spill: {}", r.error));
          t += transfer_s(1, now + t, spill_tier());
          ++used(spill_tier());
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
    PageResult r = pager_->fetch(s.r.id, spill_tier());
    if (!r.ok) violation(fmt::format("fetch: {}", r.error));
    ++res_.fetches;
    res_.logical_bytes_paged += static_cast<uint64_t>(static_cast<double>(s.spilled) * block_logical_);
    res_.real_bytes_paged += r.real_bytes;
    double x = transfer_s(s.spilled, now, spill_tier());
    return std::max(compute_s, x) + x / cost_.model().layers - compute_s;
  }

  double step(double now) {
    std::vector<Seq*> run;
    for (auto* s : live_)
      if (s->st == St::Running) run.push_back(s);
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
          if (s->r.in_burst) res_.burst_ttft_s.push_back(now - s->r.arrival_s);
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
    credit_s_ = std::min(cfg_.paging_credit_cap_s, credit_s_ + cfg_.paging_budget * t);
    res_.busy_s += t + exposed;
    res_.paging_s += exposed - recompute_in_step_;
    recompute_in_step_ = 0;
    live_.erase(std::remove_if(live_.begin(), live_.end(), [](Seq* s) { return s->st == St::Done; }), live_.end());
    return now;
  }

  void finish(Seq& s, double now) {
    free_blocks(s.blocks);
    if (s.spilled && pages()) {
      pager_->discard(s.r.id, spill_tier());
      used(spill_tier()) -= s.spilled;
    }
    s.st = St::Done;
    s.rec.finish_s = now;
    ++done_;
  }

  // After every step: the pool's books balance and nothing holds more than the pool.
  void check(double now) {
    uint64_t held = 0;
    for (auto* s : live_) {
      if (s->st != St::Running && !s->blocks.empty())
        violation(fmt::format("t={:.6f}: request {} holds blocks while not running", now, s->r.id));
      held += s->blocks.size();
      if (s->st == St::Running && !s->prefilling() && !s->spill_mode && s->blocks.size() * bt_ < s->kv_tokens)
        violation(fmt::format("t={:.6f}: request {} has {} tokens of KV in {} blocks", now, s->r.id, s->kv_tokens,
                              s->blocks.size()));
    }
    if (held + free_.size() != pool_blocks_ || held > pool_blocks_)
      violation(fmt::format("t={:.6f}: KV books do not balance: {} held + {} free != {} blocks", now, held,
                            free_.size(), pool_blocks_));
    for (Tier t : chain_)
      if (used(t) > cap(t)) violation(fmt::format("t={:.6f}: {} tier over capacity", now, tier_name(t)));
  }

  Policy policy_;
  ServeConfig cfg_;
  CostModel cost_;
  uint64_t bt_;
  double block_logical_;
  uint32_t pool_blocks_;
  DeviceKvPool pool_;
  std::vector<Tier> chain_;
  std::unique_ptr<KvPager> pager_;
  std::unique_ptr<StaticFabricLinks> own_fabric_;
  FabricLinks* fabric_ = nullptr;
  uint64_t tier_cap_[2] = {0, 0}, tier_used_[2] = {0, 0};  // host, peer
  uint64_t watermark_blocks_ = 0;
  std::deque<Seq*> waitq_;  // vllm-0.3 and aqua: waiting sequences, preempted-for-recompute in front
  uint64_t run_counter_ = 0;
  uint64_t repick_counter_ = 0;
  double credit_s_ = 0;  // aqua: paging time it may still spend on optional preemptions
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
