// Which spare takes a failed XPU's place. Pure: no fabric, no clock, so the failover manager and
// its tests share one rule. A spare that shares a failure group (power domain, board, cooling loop)
// with the failed XPU is the last choice, since whatever killed the XPU may take the spare next.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mxtb::host::failover {

// XPUs that fail together, e.g. {"power_domain[1]", {2, 3, 4}}.
struct FailureGroup {
  std::string name;
  std::vector<int> xpus;
};

struct SpareChoice {
  std::optional<int> spare;  // none: no spare left, the tenant runs degraded
  std::string reason;        // one sentence for logs and the report
  bool degraded() const { return !spare; }
};

// Ranks the usable spares (in `free_spares`, neither failed nor in `already_failed`) by
//   1. how many failure groups they share with `failed` (fewer first),
//   2. how many groups they share with XPUs that already failed (fewer first: a group that has
//      lost an XPU is suspect),
//   3. the lowest XPU number (deterministic).
SpareChoice choose_spare(int failed, const std::vector<int>& free_spares, const std::vector<FailureGroup>& groups,
                         const std::vector<int>& already_failed = {});

}  // namespace mxtb::host::failover
