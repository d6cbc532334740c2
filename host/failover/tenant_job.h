// The tenant's job of collectives on its XPUs as the failover manager runs it (the emulator's
// JOB_* block stands for its ranks): formed on the tenant's ring once the tenant is up, and formed
// again on the new ring after each failover, whose first verified collective ends the failover
// path; at the end, checked to be running verified collectives on the ring as placed.
// docs/failover.md, docs/collectives.md.
#pragma once

#include "host/fabric/board.h"
#include "host/failover/detect.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::host::failover {

struct TenantJobLoop {
  fabric::TenantJobRequest spec;
  uint64_t first_timeout_ns = 2'000'000;  // board time a ring's first verified collective may take
  // The scaled-down part of the state restore carried over the RTL links (RESTORE_*), from every
  // tenant XPU with circuits to the spare: its payload efficiency sets the full-size restore's time.
  uint32_t restore_rtl_bytes = 256 << 10;
};

// The job formed and waited on: its first verified collective, the first to end otherwise (a
// circuit lost, a wrong result), or another XPU's failure (then s.pending, handled next).
struct TenantJobWait {
  double formed_ns = 0;
  std::optional<fabric::EmuEventRecord> verified, ended;
  std::optional<int> failed;
};
// Forms the job on the tenant's ring as placed now and waits (at most job.first_timeout_ns).
TenantJobWait form_tenant_job(Watch& w, TenantState& s, const TenantJobLoop& job, uint64_t poll_ns);

// Collectives that ended wrong; and, with the tenant whole, a verified collective since the job
// was last formed (at `formed_ns`), waited for up to job.first_timeout_ns. One line per problem.
std::vector<std::string> check_tenant_job(Watch& w, const TenantState& s, const TenantJobLoop& job, double formed_ns,
                                          uint64_t poll_ns);

}  // namespace mxtb::host::failover
