#include "spare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <tuple>

namespace mxtb::host::failover {

namespace {

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// The names of the groups that hold both a and b.
std::vector<std::string> shared_groups(const std::vector<FailureGroup>& groups, int a, int b) {
  std::vector<std::string> out;
  for (const auto& g : groups)
    if (contains(g.xpus, a) && contains(g.xpus, b)) out.push_back(g.name);
  return out;
}

}  // namespace

SpareChoice choose_spare(int failed, const std::vector<int>& free_spares, const std::vector<FailureGroup>& groups,
                         const std::vector<int>& already_failed) {
  using Rank = std::tuple<size_t, size_t, int>;
  std::optional<Rank> best;
  for (int s : free_spares) {
    if (s == failed || contains(already_failed, s)) continue;
    size_t suspect = 0;
    for (int f : already_failed) suspect += shared_groups(groups, s, f).size();
    Rank r{shared_groups(groups, s, failed).size(), suspect, s};
    if (!best || r < *best) best = r;
  }
  SpareChoice c;
  if (!best) {
    c.reason = free_spares.empty()
                   ? fmt::format("no spare left for XPU {}: the tenant runs degraded", failed)
                   : fmt::format("no spare left for XPU {} (spares {} have failed): the tenant runs degraded", failed,
                                 free_spares);
    return c;
  }
  int s = std::get<2>(*best);
  c.spare = s;
  std::vector<std::string> shared = shared_groups(groups, s, failed);
  if (shared.empty())
    c.reason = fmt::format("spare XPU {} shares no failure group with XPU {}", s, failed);
  else
    c.reason = fmt::format("spare XPU {} shares {} with XPU {}: a last choice, every other usable spare shares as much", s,
                           fmt::join(shared, ", "), failed);
  if (std::get<1>(*best) > 0) c.reason += fmt::format(" (it shares a group with an XPU that failed before)");
  return c;
}

}  // namespace mxtb::host::failover
