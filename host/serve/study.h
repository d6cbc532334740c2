// The serving study around the engine (docs/serve.md): the loads (a trace or chat requests, an
// operating point the stronger baseline sustains, bursts on top, the sustained overload beside
// it), the side-by-side table and the goals against the stronger of the two baselines.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/serve/serve.h"

namespace mxtb::host::serve {

struct LoadSpec {
  std::string trace;  // "chat-burst", "synthetic-burst", "long-prompt", or "file" (then `path`)
  std::string path;   // the trace file
  uint64_t seed = 1;
  double chat_rate_per_s = 1.0;   // chat-burst: background arrivals per second at scale 1
  double chat_duration_s = 120;   // chat-burst: background duration
  BurstSpec burst;                // bursts on top (requests 0: none)
  size_t max_requests = 0;        // only the first N requests of the background (0: all)
  // A steady background whose rate the operating-point search scales (chat-burst, trace files).
  bool has_background() const { return trace == "chat-burst" || trace == "file"; }
};

// The load without bursts, arrivals compressed by `scale` (trace) or rate multiplied (chat).
std::vector<Request> background(const LoadSpec& spec, double scale);
// The background with the spec's bursts on top (chat lengths for chat-burst, the trace's own rows
// for a trace); synthetic-burst and long-prompt come as they are.
std::vector<Request> with_bursts(const LoadSpec& spec, std::vector<Request> bg);
double offered_tok_s(const std::vector<Request>& reqs);

// The largest scale of the ladder (1, 1.5, 2, 3, 4, 6, 8, ...) at which the stronger baseline (the
// higher throughput of fcfs and vllm-0.3) sustains the load (it keeps up and its TTFT p50 is at
// most 1 s, here and at every smaller scale), and the first at which it does not keep up: the
// sustained overload (0 when never). Keeping up: output tokens over the run, less the longest
// request's own service time alone (its decoding after the last arrival is no backlog), at least
// 95 % of the offered tokens/s.
struct OperatingPoint {
  double sustained = 0;
  double overload = 0;
  nlohmann::json sweep = nlohmann::json::array();
};
OperatingPoint find_operating_point(const LoadSpec& spec, const ServeConfig& cfg);

std::string secs(double s);
void print_table(const std::vector<RunResult>& runs);
// PASS/FAIL goal lines (printed) and their JSON. `kind`: "long-prompt", "burst" (goals against the
// stronger baseline, with the burst's prefill floor as the reason when TTFT misses) or "overload"
// (throughput only).
nlohmann::json serve_goals(const std::string& kind, const std::vector<RunResult>& runs, const ServeConfig& cfg,
                           const std::vector<Request>& reqs);

}  // namespace mxtb::host::serve
