// State restore: each tenant XPU's inference state kept on a peer (the paging engine's remote
// tier) from the bring-up on, and on a failover put back on the spare over every circuit from its
// torus neighbours, so nothing needs steering. The bytes really move on this host (scaled down,
// checked bit for bit); the restore's time is charged for the full size at the fabric's rate, with
// the payload efficiency the RTL links measured when they carried a scaled-down part (RESTORE_*).
// The sources, the rate and the phase are pure, and tested on their own
// (testbench/host/failover/test_restore.cpp). docs/failover.md.
#pragma once

#include "cuda/paging.h"
#include "host/fabric/board.h"
#include "host/failover/detect.h"
#include "host/report/report.h"
#include "protocol/fabric_map.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::host::failover {

// The copies: real bytes, a per-XPU pattern, up to `real_bytes_max` per XPU.
class StateCopies {
 public:
  // Allocates each of `tenant`'s XPUs its KV blocks in a pool sized for `xpus` XPUs (spares
  // included), fills them and pages them out to the remote tier.
  StateCopies(const std::vector<int>& tenant, size_t xpus, uint64_t state_bytes, uint64_t real_bytes_max);
  ~StateCopies();

  struct PagedBack {
    size_t bytes_moved = 0;
    bool exact = true;  // every byte as it was filled
  };
  // Pages `xpu`'s copy back in and checks it.
  PagedBack page_back(int xpu);

 private:
  std::unique_ptr<paging::PagingEngine> engine_;
  size_t blocks_ = 0;
};

// The XPUs with circuits to the spare (the spare's torus neighbours) and how many circuits.
struct RestoreSources {
  std::vector<int> xpus;
  int circuits = 0;
};
RestoreSources restore_sources(const protocol::FabricMap& m, const std::vector<int>& tenant, int spare, int lanes,
                               int links);

// What the link layer leaves of the lanes' rate: `bytes` of payload carried over `circuits`
// circuits in `cycles` board cycles, against one 64-bit word per circuit and cycle (the raw rate).
double restore_efficiency(uint32_t bytes, uint32_t circuits, uint32_t cycles);
// The full-size restore: `state_bytes` over `circuits` circuits of `lane_gbps` each at `efficiency`
// (0 without a circuit).
double restore_ns(uint64_t state_bytes, int circuits, double lane_gbps, double efficiency = 1);

// The scaled-down part over the RTL links, when it ran: its Restore event, or the XPU whose
// failure interrupted it (then no event), or neither (it did not end in time).
struct RtlRestore {
  std::optional<fabric::EmuEventRecord> event;
  std::optional<int> failed;
};
// Carries `bytes` from `sources` to `spare` over the RTL links (RESTORE_*) and waits for its
// Restore event, at most `timeout_ns`; an aborted restore is retried by the emulated XPUs. An XPU
// that fails meanwhile ends it and becomes s.pending.
RtlRestore restore_over_rtl(Watch& w, TenantState& s, const std::vector<int>& sources, int spare, uint32_t bytes,
                            uint64_t timeout_ns, uint64_t poll_ns);

struct RestoreInputs {
  int failed = -1, spare = -1;
  RestoreSources sources;
  StateCopies::PagedBack paged;
  uint64_t state_bytes = 0;
  double clock_mhz = 0;            // the board's: the RTL part's cycles, and the lanes' rate (protocol::lane_gbps)
  double projected_lane_gbps = 0;  // the report's projection to a faster SerDes lane (0: none)
  std::optional<RtlRestore> rtl;   // none: not run (no tenant job, a board, no circuit, a ring broken)
  uint32_t rtl_bytes = 0;
  uint64_t rtl_timeout_ns = 0;
};
// The state_restore phase at the emulated lanes' rate with its figures (restore_circuits,
// state_bytes, lane_gbps, restore_efficiency and whether it was measured), the projection to
// `projected_lane_gbps` (Timeline::projection), notes for an interrupted or aborted RTL part,
// and problems for a copy that came back different, no circuit, an RTL part that never ended or
// delivered wrong words.
void append_restore(report::Timeline& t, const RestoreInputs& in, std::vector<std::string>& problems);

}  // namespace mxtb::host::failover
