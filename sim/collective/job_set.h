// Several tenants' jobs on one set of lanes (a rack's tenants, docs/rack.md "Several tenants"):
// job k is a TenantJob (sim/collective/tenant_job.h) that may run on any XPU of the set; each lane
// belongs to the job whose ring (or restore) holds its XPU, or whose words still cross it (an
// end-of-message word owed, a circuit of its collective in flight), and otherwise to no job: a free
// XPU's lanes carry nothing and what reaches them is dropped and counted. Two jobs never hold one
// XPU: a form or restore that would is refused by name. With one job it is that job, lane for lane.
#pragma once

#include "sim/collective/tenant_job.h"

#include <memory>
#include <string>
#include <vector>

namespace mxtb::sim {

class JobSet : public LaneProgram {
 public:
  // `jobs` jobs, each with `cfg` (its xpus: the lanes the set owns, every job's to use).
  JobSet(int jobs, const TenantJobConfig& cfg, const protocol::ServerShape& shape);

  int size() const { return static_cast<int>(jobs_.size()); }
  TenantJob& job(int k) { return *jobs_.at(static_cast<size_t>(k)); }
  const TenantJob& job(int k) const { return *jobs_.at(static_cast<size_t>(k)); }
  // Why job k cannot be formed on `ring` / restore onto `dest` from `sources`, "" when it can: the
  // job's own check, then no XPU that another job holds.
  std::string check(int k, const std::vector<int>& ring, const TenantJobSpec& spec) const;
  std::string check_restore(int k, const std::vector<int>& sources, int dest, uint64_t bytes) const;
  uint64_t records_total() const;  // every job's records ever made
  uint64_t stray_words() const { return stray_words_; }  // delivered to a lane no job holds

  bool owns(int link) const override;
  Drive drive(int link) override;
  void fire(int link) override;
  void deliver(int link, uint64_t data, bool last, uint64_t cycle) override;
  bool wants_attention() const override;
  void attach(ServerSim& sim) override;
  void after_step(ServerSim& sim) override;
  void advance(const LinkView& links);  // every job's TenantJob::advance
  uint64_t wake_cycle() const override;
  uint64_t messages_delivered() const override;

 private:
  TenantJob* user(int link) const;  // the job this lane belongs to now, or null
  std::string held_elsewhere(int k, const std::vector<int>& xpus) const;

  std::vector<std::unique_ptr<TenantJob>> jobs_;
  int lanes_per_xpu_;
  uint64_t stray_words_ = 0;
};

}  // namespace mxtb::sim
