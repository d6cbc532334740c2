#include "sim/collective/job_set.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace mxtb::sim {

JobSet::JobSet(int jobs, const TenantJobConfig& cfg, const protocol::ServerShape& shape) : lanes_per_xpu_(shape.lanes_per_xpu) {
  if (jobs < 1) throw std::invalid_argument(fmt::format("a job set of {} jobs: at least 1", jobs));
  for (int k = 0; k < jobs; ++k) jobs_.push_back(std::make_unique<TenantJob>(cfg, shape));
}

std::string JobSet::held_elsewhere(int k, const std::vector<int>& xpus) const {
  for (size_t j = 0; j < jobs_.size(); ++j)
    if (static_cast<int>(j) != k)
      for (int x : xpus)
        if (jobs_[j]->holds(x)) return fmt::format("XPU {} is job {}'s", x, j);
  return "";
}

std::string JobSet::check(int k, const std::vector<int>& ring, const TenantJobSpec& spec) const {
  if (k < 0 || k >= size()) return fmt::format("job {} does not exist (0..{})", k, size() - 1);
  if (std::string why = jobs_[static_cast<size_t>(k)]->check(ring, spec); !why.empty()) return why;
  return held_elsewhere(k, ring);
}

std::string JobSet::check_restore(int k, const std::vector<int>& sources, int dest, uint64_t bytes) const {
  if (k < 0 || k >= size()) return fmt::format("job {} does not exist (0..{})", k, size() - 1);
  if (std::string why = jobs_[static_cast<size_t>(k)]->check_restore(sources, dest, bytes); !why.empty()) return why;
  std::vector<int> xpus = sources;
  xpus.push_back(dest);
  return held_elsewhere(k, xpus);
}

uint64_t JobSet::records_total() const {
  uint64_t n = 0;
  for (const auto& j : jobs_) n += j->records_total();
  return n;
}

TenantJob* JobSet::user(int link) const {
  if (jobs_.size() == 1) return jobs_[0].get();
  for (const auto& j : jobs_)
    if (j->holds(link / lanes_per_xpu_)) return j.get();
  for (const auto& j : jobs_)  // a job formed away from the XPU, its last words still crossing
    if (j->busy_on(link)) return j.get();
  return nullptr;
}

bool JobSet::owns(int link) const { return jobs_[0]->owns(link); }

LaneProgram::Drive JobSet::drive(int link) {
  if (TenantJob* j = user(link)) return j->drive(link);
  return {false, 0, false};
}

void JobSet::fire(int link) {
  if (TenantJob* j = user(link)) j->fire(link);
}

void JobSet::deliver(int link, uint64_t data, bool last, uint64_t cycle) {
  if (TenantJob* j = user(link)) return j->deliver(link, data, last, cycle);
  ++stray_words_;
}

bool JobSet::wants_attention() const {
  return std::any_of(jobs_.begin(), jobs_.end(), [](const auto& j) { return j->wants_attention(); });
}

void JobSet::attach(ServerSim& sim) {
  for (auto& j : jobs_) j->attach(sim);
}

void JobSet::after_step(ServerSim& sim) {
  for (auto& j : jobs_) j->after_step(sim);
}

void JobSet::advance(const LinkView& links) {
  for (auto& j : jobs_) j->advance(links);
}

uint64_t JobSet::wake_cycle() const {
  uint64_t w = UINT64_MAX;
  for (const auto& j : jobs_) w = std::min(w, j->wake_cycle());
  return w;
}

uint64_t JobSet::messages_delivered() const {
  uint64_t n = 0;
  for (const auto& j : jobs_) n += j->messages_delivered();
  return n;
}

}  // namespace mxtb::sim
