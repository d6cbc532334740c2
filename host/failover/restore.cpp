#include "restore.h"

#include "host/failover/circuits.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace mxtb::host::failover {

namespace {

uint8_t pattern_byte(int xpu, size_t i) { return static_cast<uint8_t>((i * 2654435761u >> 7) ^ (static_cast<size_t>(xpu) * 97)); }

paging::ModelShape state_shape() {
  paging::ModelShape shape;
  shape.layers = 8;
  shape.kv_heads = 8;
  shape.head_size = 128;
  shape.tokens_per_block = 16;
  shape.dtype = paging::DType::F16;
  return shape;
}

}  // namespace

StateCopies::StateCopies(const std::vector<int>& tenant, size_t xpus, uint64_t state_bytes, uint64_t real_bytes_max) {
  const paging::ModelShape shape = state_shape();
  uint64_t real = std::min(state_bytes, real_bytes_max);
  blocks_ = std::max<size_t>(1, static_cast<size_t>(real / shape.block_bytes()));
  engine_ = std::make_unique<paging::PagingEngine>(
      shape, paging::PoolSizes{blocks_ * xpus, blocks_ * xpus, 0}, paging::make_cpu_backend());
  for (int x : tenant) {
    auto seq = static_cast<paging::SeqId>(x);
    engine_->allocate(seq, blocks_);
    size_t n = 0;
    for (size_t b = 0; b < blocks_; ++b)
      for (int l = 0; l < shape.layers; ++l)
        for (paging::Kv kv : {paging::Kv::K, paging::Kv::V}) {
          std::byte* p = engine_->chunk(seq, b, l, kv);
          for (size_t i = 0; i < shape.chunk_bytes(); ++i) p[i] = static_cast<std::byte>(pattern_byte(x, n++));
        }
    engine_->page_out(seq, paging::Tier::Remote);
  }
}

StateCopies::~StateCopies() = default;

StateCopies::PagedBack StateCopies::page_back(int xpu) {
  auto seq = static_cast<paging::SeqId>(xpu);
  PagedBack out;
  out.bytes_moved = engine_->page_in(seq).bytes_moved;
  size_t n = 0;
  const auto& shape = engine_->shape();
  for (size_t b = 0; b < blocks_ && out.exact; ++b)
    for (int l = 0; l < shape.layers && out.exact; ++l)
      for (paging::Kv kv : {paging::Kv::K, paging::Kv::V}) {
        const std::byte* p = engine_->chunk(seq, b, l, kv);
        for (size_t i = 0; i < shape.chunk_bytes(); ++i)
          if (p[i] != static_cast<std::byte>(pattern_byte(xpu, n++))) out.exact = false;
      }
  return out;
}

RestoreSources restore_sources(const protocol::FabricMap& m, const std::vector<int>& tenant, int spare, int lanes,
                               int links) {
  RestoreSources s;
  for (int x : tenant)
    if (x != spare && circuits_between(m, x, spare, lanes, links) > 0) {
      s.xpus.push_back(x);
      s.circuits += circuits_between(m, x, spare, lanes, links);
    }
  return s;
}

double restore_efficiency(uint32_t bytes, uint32_t circuits, uint32_t cycles) {
  return static_cast<double>(bytes) / (static_cast<double>(circuits) * static_cast<double>(cycles) * 8.0);
}

double restore_ns(uint64_t state_bytes, int circuits, double lane_gbps, double efficiency) {
  return circuits ? static_cast<double>(state_bytes) / (circuits * lane_gbps / 8 * efficiency) : 0;
}

RtlRestore restore_over_rtl(Watch& w, TenantState& s, const std::vector<int>& sources, int spare, uint32_t bytes,
                            uint64_t timeout_ns, uint64_t poll_ns) {
  const size_t seen = w.log().size();
  const double started = static_cast<double>(w.board().clock().now_ns());
  w.board().start_restore(sources, spare, bytes);
  const Watch::Awaited a = w.await_event(s, seen, emu::EmuEvent::Restore, started, timeout_ns, poll_ns,
                                         [](const fabric::EmuEventRecord& e) {
                                           return static_cast<emu::JobOutcome>(e.a) != emu::JobOutcome::Aborted;
                                         });
  return {a.event, a.failed};
}

namespace {

void add_projection(report::Timeline& t, const RestoreInputs& in, double efficiency) {
  if (!(in.projected_lane_gbps > 0) || !in.sources.circuits) return;
  t.projection = report::Projection{
      in.projected_lane_gbps, restore_ns(in.state_bytes, in.sources.circuits, in.projected_lane_gbps, efficiency),
      fmt::format("the same {} circuit(s) and {:.3f} payload efficiency at a faster SerDes's rate instead of the "
                  "emulated lanes' {} Gb/s; every other phase as emulated",
                  in.sources.circuits, efficiency, protocol::lane_gbps(in.clock_mhz))};
}

}  // namespace

void append_restore(report::Timeline& t, const RestoreInputs& in, std::vector<std::string>& problems) {
  const double lane_gbps = protocol::lane_gbps(in.clock_mhz);
  const int circuits = in.sources.circuits;
  const std::vector<int>& sources = in.sources.xpus;
  if (!in.paged.exact) problems.push_back(fmt::format("XPU {}'s state came back different on the spare", in.failed));
  if (!circuits) problems.push_back("no circuit between the spare and a peer holding the state copy");
  t.figures["restore_circuits"] = circuits;
  t.figures["state_bytes"] = static_cast<double>(in.state_bytes);
  t.figures["lane_gbps"] = lane_gbps;
  const std::string paged = fmt::format("the paging engine (CPU backend) moved {:.1f} MiB of it for real, bit-exact: {}",
                                        static_cast<double>(in.paged.bytes_moved) / (1 << 20), in.paged.exact ? "yes" : "NO");
  const double gib = static_cast<double>(in.state_bytes) / (1 << 30);
  std::optional<fabric::EmuEventRecord> rtl;
  if (in.rtl) {
    rtl = in.rtl->event;
    if (in.rtl->failed)
      t.notes.push_back(fmt::format("the state restore over the RTL links was interrupted: XPU {} failed{}; its duration "
                                    "is charged at the lanes' raw rate, nothing measured it",
                                    *in.rtl->failed,
                                    contains(sources, *in.rtl->failed)
                                        ? fmt::format(" (a source: its stripe of XPU {}'s state copy is gone with it)", in.failed)
                                        : std::string()));
    else if (!in.rtl->event)
      problems.push_back(fmt::format("the state restore over the RTL links (XPUs {} to spare {}) did not end within {} us",
                                     fmt::join(sources, ", "), in.spare, in.rtl_timeout_ns / 1000.0));
  }
  if (rtl && static_cast<emu::JobOutcome>(rtl->a) == emu::JobOutcome::Verified && rtl->data > 0) {
    const double efficiency = restore_efficiency(in.rtl_bytes, rtl->b, rtl->data);
    t.figures["restore_efficiency"] = efficiency;
    t.figures["restore_efficiency_measured"] = 1;
    report::append_phase(
        t, "state_restore", restore_ns(in.state_bytes, circuits, lane_gbps, efficiency), "modeled",
        fmt::format("{:.2f} GiB from XPUs {} over the spare's {} circuits x {} Gb/s (64-bit words at {} MHz) x {:.3f} "
                    "payload efficiency, measured on the RTL links: {} KiB over those circuits in {:.2f} us ({} cycles), "
                    "every word checked; {}",
                    gib, fmt::join(sources, ", "), circuits, lane_gbps, in.clock_mhz, efficiency, in.rtl_bytes / 1024,
                    static_cast<double>(rtl->data) * 1000.0 / in.clock_mhz / 1000.0, rtl->data, paged));
    add_projection(t, in, efficiency);
    return;
  }
  if (rtl && static_cast<emu::JobOutcome>(rtl->a) == emu::JobOutcome::Wrong)
    problems.push_back("the state restore over the RTL links delivered wrong words");
  else if (rtl)
    t.notes.push_back(fmt::format("the state restore over the RTL links was aborted ({})",
                                  emu::to_string(static_cast<emu::JobReason>(rtl->c))));
  t.figures["restore_efficiency"] = 1;  // the lanes' raw rate: nothing measured it
  t.figures["restore_efficiency_measured"] = 0;
  report::append_phase(t, "state_restore", restore_ns(in.state_bytes, circuits, lane_gbps), "modeled",
                       fmt::format("{:.2f} GiB from XPUs {} over the spare's {} circuit(s) x {} Gb/s (64-bit words at {} "
                                   "MHz); {}",
                                   gib, fmt::join(sources, ", "), circuits, lane_gbps, in.clock_mhz, paged));
  add_projection(t, in, 1);
}

}  // namespace mxtb::host::failover
