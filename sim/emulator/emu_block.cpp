// EmuBlock (emu_block.h): the emulator control block's registers, read and written one arm per
// register in the map's order; faults armed and fired; RUN_UNTIL; JOB_CTRL and RESTORE_CTRL on the
// tenant's job; the event queue's sources collected.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "sim/emulator/emu_block.h"

#include "protocol/job_ring.h"

#include "sim/emulator/emu_answer.h"

#include <mxtb/ocs_regs.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace mxtb::sim {

namespace {

using sc_core::sc_time;
using sc_core::SC_NS;
namespace er = mxtb::emu::reg;

uint64_t now_ns_u64() { return static_cast<uint64_t>(std::llround(sim_now_ns())); }

}  // namespace

EmuBlock::EmuBlock(const EmulatorConfig& cfg, ServerSim& sim, ServerClock& clock, const firmware::OcsFirmware& fw,
                   JobSet* jobs, SimThread& thread, EmuLog& log, IpbusStats ipbus_stats)
    : cfg_(cfg),
      sim_(sim),
      clock_(clock),
      fw_(fw),
      jobs_(jobs),
      thread_(thread),
      log_(log),
      ipbus_stats_(std::move(ipbus_stats)),
      job_records_seen_(jobs ? static_cast<size_t>(jobs->size()) : 0, 0) {}

std::optional<std::pair<bool, uint32_t>> EmuBlock::answer_within_clock(const EmuAccess& a) {
  if (!a.write) {
    if (!emu_read_within_clock(a.offset)) return std::nullopt;
    return std::pair<bool, uint32_t>{true, read(a.offset)};
  }
  if (!emu_write_within_clock(a.offset)) return std::nullopt;
  return std::pair<bool, uint32_t>{write(a.offset, a.data), 0};
}

// One arm per register, in the map's order: a flat list reads best against emu_regs.json.
uint32_t EmuBlock::read(uint32_t off) {
  uint64_t t = now_ns_u64();
  if (off == er::id::kOffset) return er::id::kReset;
  if (off == er::version::kOffset) return er::version::kReset;
  if (off == er::time_mode::kOffset) return static_cast<uint32_t>(cfg_.time_mode);
  if (off == er::rtf_ppm::kOffset) {
    if (cfg_.time_mode == emu::TimeMode::Paced) return static_cast<uint32_t>(std::llround(cfg_.rtf * 1e6));
    if (cfg_.time_mode == emu::TimeMode::Free) return static_cast<uint32_t>(std::llround(thread_.achieved_rtf() * 1e6));
    return 0;
  }
  if (off == er::clock_ps::kOffset) return static_cast<uint32_t>(std::llround(1e6 / cfg_.server.clock_mhz));
  if (off == er::time_ns_lo::kOffset) return static_cast<uint32_t>(t);
  if (off == er::time_ns_hi::kOffset) return static_cast<uint32_t>(t >> 32);
  if (off == er::cycle_lo::kOffset) return static_cast<uint32_t>(sim_.cycle());
  if (off == er::cycle_hi::kOffset) return static_cast<uint32_t>(sim_.cycle() >> 32);
  if (off == er::run_timeout_ns::kOffset) return run_timeout_ns_;
  if (off == er::run_result::kOffset) return run_result_;
  if (off == er::fault_at_lo::kOffset) return static_cast<uint32_t>(fault_at_ns_);
  if (off == er::fault_at_hi::kOffset) return static_cast<uint32_t>(fault_at_ns_ >> 32);
  if (off == er::fault_target::kOffset) return fault_target_;
  if (off == er::fault_value::kOffset) return fault_value_;
  if (off == er::faults_pending::kOffset) return faults_pending_;
  if (off == er::xpu_alive::kOffset) {
    uint32_t m = 0;
    for (int x = 0; x < cfg_.server.shape.xpus; ++x) m |= uint32_t{sim_.xpu_alive(x)} << x;
    return m;
  }
  if (off == er::event_count::kOffset) return static_cast<uint32_t>(events_.size());
  if (off >= er::event_head::kOffset && off < er::event_head::kOffset + 4 * er::event_head::kCount) {
    if (events_.empty()) return 0;
    const auto& e = events_.front();
    switch ((off - er::event_head::kOffset) / 4) {
      case 0: return static_cast<uint32_t>(e.time_ns);
      case 1: return static_cast<uint32_t>(e.time_ns >> 32);
      case 2: return e.info;
      default: return e.data;
    }
  }
  if (off == er::event_dropped::kOffset) return events_.dropped();
  if (off == er::event_filter::kOffset) return event_filter_;
  if (off == er::event_filtered::kOffset) return static_cast<uint32_t>(events_filtered_);
  if (off == er::wave_ctrl::kOffset) return sim_.waveform_on() ? er::wave_ctrl::kOnMask : 0;
  if (off == er::messages_lo::kOffset) return static_cast<uint32_t>(sim_.messages_delivered());
  if (off == er::messages_hi::kOffset) return static_cast<uint32_t>(sim_.messages_delivered() >> 32);
  if (off == er::scoreboard_errors::kOffset) return static_cast<uint32_t>(sim_.scoreboard_errors());
  if (off == er::scoreboard_words_lost::kOffset)
    return static_cast<uint32_t>(std::min<uint64_t>(sim_.scoreboard_words_lost(), UINT32_MAX));
  if (off >= er::ipbus_stats::kOffset && off < er::ipbus_stats::kOffset + 4 * er::ipbus_stats::kCount)
    return ipbus_stat((off - er::ipbus_stats::kOffset) / 4);
  if (off == er::job_ring::kOffset) return job_ring_;
  if (off == er::job_spec::kOffset) return job_spec_;
  if (off == er::job_bytes::kOffset) return job_bytes_;
  if (off == er::job_seed::kOffset) return job_seed_;
  if (off == er::job_status::kOffset) return job_status();
  if (off >= er::job_ranks::kOffset && off < er::job_ranks::kOffset + 4 * er::job_ranks::kCount)
    return job_ranks_[(off - er::job_ranks::kOffset) / 4];
  if (off == er::restore_src::kOffset) return restore_src_;
  if (off == er::restore_dst::kOffset) return restore_dst_;
  if (off == er::restore_bytes::kOffset) return restore_bytes_;
  if (off == er::job_verified::kOffset) return jobs_ ? static_cast<uint32_t>(job()->verified()) : 0;
  if (off == er::job_aborted::kOffset) return jobs_ ? static_cast<uint32_t>(job()->aborted()) : 0;
  if (off == er::job_wrong::kOffset) return jobs_ ? static_cast<uint32_t>(job()->wrong()) : 0;
  if (off == er::job_select::kOffset) return job_select_;
  if (off == er::ipbus_bus_errors::kOffset)
    return static_cast<uint32_t>(ipbus_stats_().faults[static_cast<size_t>(protocol::ipbus::Fault::BusError)]);
  return 0;
}

// IPBUS_STATS[i]: the five counts, then one per fault reason.
uint32_t EmuBlock::ipbus_stat(uint32_t i) const {
  const auto s = ipbus_stats_();
  const uint64_t head[] = {s.datagrams, s.control, s.status, s.resends_served, s.transactions};
  if (i < 5) return static_cast<uint32_t>(head[i]);
  return static_cast<uint32_t>(s.faults[i - 5]);
}

uint32_t EmuBlock::job_status() const {
  if (!jobs_) return 0;
  const TenantJob& j = *job();
  const auto ranks = static_cast<uint32_t>(j.ring().size());
  return static_cast<uint32_t>(j.state()) | std::min<uint32_t>(ranks, 15) << er::job_status::kRanksShift |
         std::min<uint32_t>(j.rings_running(), 255) << er::job_status::kRingsShift |
         std::min<uint32_t>(ranks, 255) << er::job_status::kRanksWideShift;
}

// One arm per register, as read().
bool EmuBlock::write(uint32_t off, uint32_t v) {
  if (off == er::advance_ns::kOffset) return advance(v), true;
  if (off == er::run_timeout_ns::kOffset) return run_timeout_ns_ = v, true;
  if (off == er::run_until::kOffset) return run_until(v & 0x3F), true;
  if (off == er::fault_at_lo::kOffset) return fault_at_ns_ = (fault_at_ns_ & ~uint64_t{0xFFFFFFFF}) | v, true;
  if (off == er::fault_at_hi::kOffset) return fault_at_ns_ = (fault_at_ns_ & 0xFFFFFFFF) | uint64_t{v} << 32, true;
  if (off == er::fault_target::kOffset) return fault_target_ = v & 0xFFFF, true;
  if (off == er::fault_value::kOffset) return fault_value_ = v, true;
  if (off == er::fault_arm::kOffset) return arm_fault(v & 0xF);
  if (off == er::job_ring::kOffset) return job_ring_ = v, true;
  if (off == er::job_spec::kOffset) return job_spec_ = v & (er::job_spec::kOpMask | er::job_spec::kTypeMask), true;
  if (off == er::job_bytes::kOffset) return job_bytes_ = v, true;
  if (off == er::job_seed::kOffset) return job_seed_ = v, true;
  if (off == er::job_ctrl::kOffset) return job_ctrl(v);
  if (off == er::event_filter::kOffset) return event_filter_ = v & (er::event_filter::kUnmappedLanesMask | er::event_filter::kJobsMask), true;
  if (off == er::job_select::kOffset) {
    const int jobs = jobs_ ? jobs_->size() : 1;
    if ((v & ~er::job_select::kJobMask) || static_cast<int>(v) >= jobs)
      return refused("JOB_SELECT", v, fmt::format("the emulator runs job{} 0..{}", jobs == 1 ? "" : "s", jobs - 1));
    return job_select_ = v, true;
  }
  if (off >= er::job_ranks::kOffset && off < er::job_ranks::kOffset + 4 * er::job_ranks::kCount)
    return job_ranks_[(off - er::job_ranks::kOffset) / 4] = v, true;
  if (off == er::restore_src::kOffset) return restore_src_ = v, true;
  if (off == er::restore_dst::kOffset) return restore_dst_ = v & er::restore_dst::kXpuMask, true;
  if (off == er::restore_bytes::kOffset) return restore_bytes_ = v, true;
  if (off == er::restore_ctrl::kOffset) return restore_ctrl(v);
  if (off == er::event_pop::kOffset) return events_.pop(v), true;
  if (off == er::wave_ctrl::kOffset) {
    if (cfg_.fst_path.empty()) return false;  // started without --fst: nothing to dump into
    if (v & er::wave_ctrl::kOnMask) sim_.start_waveform(cfg_.fst_path);
    else sim_.stop_waveform();
    return true;
  }
  return false;
}

// ADVANCE_NS: the simulation runs `ns` further.
void EmuBlock::advance(uint32_t ns) {
  if (ns) thread_.run_in_sim([&] { sc_core::wait(sc_time(static_cast<double>(ns), SC_NS)); });
}

// FAULT_ARM: checks the kind's target and value, then spawns the fault at FAULT_AT.
bool EmuBlock::arm_fault(uint32_t kind_raw) {
  auto kind = mxtb::emu::to_fault_kind(kind_raw);
  if (!kind || *kind == emu::FaultKind::None) return false;
  const int links = sim_.links();
  uint32_t target = fault_target_, value = fault_value_;
  float ber = 0;
  std::memcpy(&ber, &value, sizeof ber);
  switch (*kind) {
    case emu::FaultKind::KillXpu:
      if (target >= static_cast<uint32_t>(cfg_.server.shape.xpus)) return false;
      break;
    case emu::FaultKind::LaneBer:
      if (target >= static_cast<uint32_t>(links) || !std::isfinite(ber) || ber < 0 || ber > 0.01f) return false;
      break;
    case emu::FaultKind::LaneDark:
      if (target >= static_cast<uint32_t>(links) || value == 0) return false;
      break;
    case emu::FaultKind::SwapLanes:
      if (target >= static_cast<uint32_t>(links) || value >= static_cast<uint32_t>(links) || value == target) return false;
      break;
    case emu::FaultKind::None: return false;
  }
  ++faults_pending_;
  uint64_t at = fault_at_ns_;
  thread_.run_in_sim([&] {
    sc_core::sc_spawn([this, kind = *kind, target, value, ber, at] {
      double now = sim_now_ns();
      if (static_cast<double>(at) > now) sc_core::wait(sc_time(static_cast<double>(at) - now, SC_NS));
      switch (kind) {
        case emu::FaultKind::KillXpu: sim_.kill_xpu(static_cast<int>(target)); break;
        case emu::FaultKind::LaneBer: sim_.set_lane_ber(static_cast<int>(target), ber); break;
        case emu::FaultKind::LaneDark:
          sim_.dark_lane(static_cast<int>(target), static_cast<uint64_t>(std::ceil(value / sim_.period_ns())));
          break;
        case emu::FaultKind::SwapLanes: sim_.swap_lanes(static_cast<int>(target), static_cast<int>(value)); break;
        case emu::FaultKind::None: break;
      }
      --faults_pending_;
      ++faults_fired_;
      events_.push(sim_now_ns(), event_info(emu::EmuEvent::FaultFired, static_cast<uint32_t>(kind), target, 0), value);
      fault_event_.notify(sc_core::SC_ZERO_TIME);
    });
  });
  return true;
}

// A control write the job refuses: a bus error for the host, the reason in the log. Returns false.
bool EmuBlock::refused(const char* reg, uint32_t v, const std::string& why) {
  log_.line(fmt::format("{} {:#x} refused: {}", reg, v, why));
  return false;
}

// JOB_CTRL: form the job on JOB_RING with JOB_SPEC, JOB_BYTES and JOB_SEED, or stop it. The job
// is touched only between kernel runs (as here) or by the clock thread inside one.
bool EmuBlock::job_ctrl(uint32_t v) {
  auto refuse = [&](const std::string& why) { return refused("JOB_CTRL", v, why); };
  if (!jobs_) return refuse("this emulator runs no job (start it with --job-xpus)");
  const int k = static_cast<int>(job_select_);
  const bool form = v & er::job_ctrl::kFormMask, stop = v & er::job_ctrl::kStopMask, form_ranks = v & er::job_ctrl::kFormRanksMask;
  if (int{form} + int{stop} + int{form_ranks} != 1)
    return refuse("write exactly one of form (bit 0), stop (bit 1) and form_ranks (bit 2)");
  if (stop) {
    job()->stop();
    return true;
  }
  const std::vector<int> ring = form ? protocol::unpack_job_ring(&job_ring_, 1, 4)
                                     : protocol::unpack_job_ring(job_ranks_.data(), job_ranks_.size(), 8);
  TenantJobSpec spec;
  spec.op = static_cast<CollectiveOp>((job_spec_ & er::job_spec::kOpMask) >> er::job_spec::kOpShift);
  spec.type = (job_spec_ & er::job_spec::kTypeMask) ? DataType::BF16 : DataType::F32;
  spec.bytes = job_bytes_;
  spec.seed = job_seed_;
  if (std::string why = jobs_->check(k, ring, spec); !why.empty()) return refuse(why);
  job()->form(ring, spec);
  return true;
}

// RESTORE_CTRL: restore RESTORE_BYTES of state onto RESTORE_DST from RESTORE_SRC's XPUs.
bool EmuBlock::restore_ctrl(uint32_t v) {
  auto refuse = [&](const std::string& why) { return refused("RESTORE_CTRL", v, why); };
  if (!jobs_) return refuse("this emulator runs no job (start it with --job-xpus)");
  if (!(v & er::restore_ctrl::kStartMask)) return refuse("write 1 (start)");
  std::vector<int> sources;
  for (int x = 0; x < 32; ++x)
    if (restore_src_ >> x & 1u) sources.push_back(x);
  const int dest = static_cast<int>(restore_dst_);
  if (std::string why = jobs_->check_restore(static_cast<int>(job_select_), sources, dest, restore_bytes_); !why.empty())
    return refuse(why);
  job()->restore(sources, dest, restore_bytes_, job_seed_);
  return true;
}

// RUN_UNTIL: runs until a masked condition holds or the timeout; RUN_RESULT says which.
void EmuBlock::run_until(uint32_t mask) {
  thread_.run_in_sim([&] {
    const size_t transitions0 = sim_.transitions().size(), failovers0 = fw_.failovers().size();
    const uint64_t faults0 = faults_fired_;
    const uint64_t jobs0 = jobs_ ? jobs_->records_total() : 0;
    // sc_time arithmetic (integer picoseconds): a double deadline can leave a remainder that
    // rounds to a zero-time wait, forever.
    const sc_time deadline = sc_core::sc_time_stamp() + sc_time(static_cast<double>(run_timeout_ns_), SC_NS);
    const sc_time poll(100, SC_NS);  // the firmware's failover has no event of its own: look this often
    auto fired = [&] {
      uint32_t f = 0;
      if (sim_.irq()) f |= er::run_until::kIrqMask;
      if (sim_.transitions().size() > transitions0) f |= er::run_until::kLinkMask;
      if (fw_.failovers().size() > failovers0) f |= er::run_until::kFailoverMask;
      if (faults_fired_ > faults0) f |= er::run_until::kFaultMask;
      if (jobs_ && jobs_->records_total() > jobs0) f |= er::run_until::kJobMask;
      sync_events();
      if (!events_.empty()) f |= er::run_until::kEventMask;
      return f & mask;
    };
    uint32_t f = fired();
    while (!f && sc_core::sc_time_stamp() < deadline) {
      sc_time left = deadline - sc_core::sc_time_stamp();
      sc_core::wait(left < poll ? left : poll, clock_.link_event() | clock_.irq_event() | fault_event_);
      f = fired();
    }
    run_result_ = f;
  });
}

// EVENT_FILTER.unmapped_lanes: a lane the firmware's active map leaves without a circuit.
bool EmuBlock::filtered_lane(uint32_t link) const {
  if (!(event_filter_ & er::event_filter::kUnmappedLanesMask)) return false;
  const auto& m = fw_.active_map();
  return link >= m.size() || m[link] < 0;
}

void EmuBlock::sync_events() {
  const auto& tr = sim_.transitions();
  for (; transitions_seen_ < tr.size(); ++transitions_seen_) {
    const auto& t = tr[transitions_seen_];
    if (filtered_lane(static_cast<uint32_t>(t.link))) {
      ++events_filtered_;
      continue;
    }
    events_.push(static_cast<double>(t.cycle) * sim_.period_ns(),
                 event_info(emu::EmuEvent::LinkChange, static_cast<uint32_t>(t.link), static_cast<uint32_t>(t.from),
                            static_cast<uint32_t>(t.to)),
                 static_cast<uint32_t>(t.reason));
  }
  const auto& ce = fw_.events();
  for (; controller_events_seen_ < ce.size(); ++controller_events_seen_) {
    const auto& e = ce[controller_events_seen_];
    if ((e.info & 0xF) == static_cast<uint32_t>(ocs::Event::LinkChange) && filtered_lane((e.info >> 8) & 0xFF)) {
      ++events_filtered_;
      continue;
    }
    events_.push(static_cast<double>(e.cycle) * sim_.period_ns(),
                 event_info(emu::EmuEvent::Controller, e.info & 0xF, (e.info >> 4) & 0xF, (e.info >> 8) & 0xFF), e.info >> 16);
  }
  for (int k = 0; jobs_ && k < jobs_->size(); ++k) {
    // A job keeps its last records only: those already dropped cannot be queued any more.
    const TenantJob& job = jobs_->job(k);
    const auto& jr = job.records();
    const uint64_t first = job.records_total() - jr.size();
    uint64_t& seen = job_records_seen_[static_cast<size_t>(k)];
    // Several jobs name theirs in the log; a lone job's lines read as they always did.
    const std::string who = jobs_->size() > 1 ? fmt::format("job {}", k) : "job";
    for (seen = std::max(seen, first); seen < job.records_total(); ++seen) {
      const TenantJobRecord& r = jr[static_cast<size_t>(seen - first)];
      if (r.outcome != emu::JobOutcome::Verified)  // the why, which the event has no room for
        log_.line(fmt::format("{} {} #{} {} ({}) at {:.3f} us: {}", who, r.restore ? "restore" : "collective", r.seq,
                              emu::to_string(r.outcome), emu::to_string(r.reason),
                              static_cast<double>(r.end_cycle) * sim_.period_ns() / 1000, r.detail));
      if (event_filter_ & er::event_filter::kJobsMask) {
        ++events_filtered_;
        continue;
      }
      if (r.restore)
        events_.push(static_cast<double>(r.end_cycle) * sim_.period_ns(),
                     event_info(emu::EmuEvent::Restore, static_cast<uint32_t>(r.outcome), static_cast<uint32_t>(r.rings),
                                static_cast<uint32_t>(r.reason)),
                     r.outcome == emu::JobOutcome::Aborted ? 0 : static_cast<uint32_t>(r.end_cycle + 1 - r.start_cycle));
      else
        events_.push(static_cast<double>(r.end_cycle) * sim_.period_ns(),
                     event_info(emu::EmuEvent::Job, static_cast<uint32_t>(r.outcome), static_cast<uint32_t>(r.reason),
                                static_cast<uint32_t>(r.ranks)),
                     protocol::job_event_data(r.seq, k));
    }
  }
  const auto& fo = fw_.failovers();
  for (; failovers_seen_ < fo.size(); ++failovers_seen_) {
    const auto& f = fo[failovers_seen_];
    events_.push(static_cast<double>(f.commit_ns),
                 event_info(emu::EmuEvent::Failover, static_cast<uint32_t>(f.failed_xpu), static_cast<uint32_t>(f.spare),
                            static_cast<uint32_t>(f.status)),
                 f.generation);
  }
}

}  // namespace mxtb::sim
