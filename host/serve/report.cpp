// A run's figures: percentiles, throughput, paging share, JSON.
#include <algorithm>
#include <cmath>

#include "host/serve/serve.h"

namespace mxtb::host::serve {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // Nearest rank: the smallest value with at least p % of the samples at or below it.
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size(), std::max<size_t>(rank, 1)) - 1];
}

double RunResult::throughput() const {
  double span = makespan_s - first_arrival_s;
  return span > 0 ? static_cast<double>(output_tokens) / span : 0;
}

double RunResult::paging_share() const {
  double span = makespan_s - first_arrival_s;
  return span > 0 ? paging_s / span : 0;
}

nlohmann::json RunResult::to_json() const {
  uint64_t completed = 0, rejected = 0;
  for (const auto& s : seqs) {
    completed += s.finish_s >= 0;
    rejected += s.rejected;
  }
  double longest_wait = 0;
  for (const auto& s : seqs) longest_wait = std::max(longest_wait, s.longest_wait_s);
  std::vector<double> delays_us;
  for (double d : reconfig_delays_s) delays_us.push_back(d * 1e6);
  return {{"policy", policy},
          {"requests", seqs.size()},
          {"completed", completed},
          {"rejected", rejected},
          {"ttft_p50_s", percentile(ttft_s, 50)},
          {"ttft_p99_s", percentile(ttft_s, 99)},
          {"burst_requests", burst_ttft_s.size()},
          {"burst_ttft_p50_s", percentile(burst_ttft_s, 50)},
          {"burst_ttft_p99_s", percentile(burst_ttft_s, 99)},
          {"tbt_p50_s", percentile(tbt_s, 50)},
          {"tbt_p99_s", percentile(tbt_s, 99)},
          {"throughput_tok_s", throughput()},
          {"paging_share", paging_share()},
          {"paging_s", paging_s},
          {"busy_s", busy_s},
          {"makespan_s", makespan_s - first_arrival_s},
          {"output_tokens", output_tokens},
          {"steps", steps},
          {"preemptions", preemptions},
          {"page_outs", page_outs},
          {"page_ins", page_ins},
          {"fetches", fetches},
          {"fallback_drops", fallback_drops},
          {"host_page_outs", host_page_outs},
          {"budget_deferrals", budget_deferrals},
          {"tier_deferrals", tier_deferrals},
          {"logical_bytes_paged", logical_bytes_paged},
          {"real_bytes_paged", real_bytes_paged},
          {"pool_blocks", pool_blocks},
          {"max_blocks_used", max_blocks_used},
          {"fabric_reconfigurations", reconfigurations},
          {"reconfig_delays_us", delays_us},
          {"reconfig_delay_us",
           {{"min", delays_us.empty() ? 0.0 : *std::min_element(delays_us.begin(), delays_us.end())},
            {"median", percentile(delays_us, 50)},
            {"max", delays_us.empty() ? 0.0 : *std::max_element(delays_us.begin(), delays_us.end())}}},
          {"extra_circuit_s", extra_circuit_s},
          {"longest_wait_s", longest_wait},
          {"starvation_slice_bound_s", starvation_bound_slice_s},
          {"invariants_ok", violations.empty()},
          {"violations", violations},
          {"wall_s", wall_s}};
}

}  // namespace mxtb::host::serve
