// The allocation experiments: the paper's three cases, workload runs and the benchmark (docs/alloc.md).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/alloc/alloc.h"

namespace mxtb::host::alloc {

struct SizeStats {
  long submitted = 0, accepted = 0;
  double bw_sum = 0, step_sum = 0, ar_sum = 0;
  long bw_n = 0;
  long circuits = 0, hops = 0;          // circuits between servers of placed fabric slices, their hops
  long lanes = 0, lanes_wanted = 0;     // lanes granted on those circuits against the lanes wanted
};

// What one allocator (a policy and its mode) did in one run.
struct PolicyRun {
  AllocOptions alloc;
  std::map<int, SizeStats> by_size;           // slice size -> stats
  std::vector<double> rack_frag;              // fragmentation index samples (racks with free chips)
  double blast_sum = 0;
  long blast_n = 0;
  std::map<std::string, long> decided_by;     // who placed each slice
  IlpStats ilp;
  std::string invariant_error;                // empty when every check passed
  long invariant_checks = 0;
  nlohmann::json to_json() const;
};

struct CommonOptions {
  uint64_t seed = 1;
  Solver solver = Solver::Heuristic;
  int ilp_time_limit_ms = 100;
  int fibres = 4;
  bool check = true;  // run the invariant checker after every change (slow for big runs)
  // Modes compared (docs/alloc.md): the baseline's placements and Morphlux's.
  std::vector<BaselineMode> baselines = {BaselineMode::Aligned, BaselineMode::TorusFirstFit};
  std::vector<FabricMode> fabrics = {FabricMode::Server, FabricMode::Neighbour};
  // The folder of the named workloads (tpu_job_size.csv, tpu_arrival_time.csv, philly_trace.csv):
  // the program passes its traces/workloads/; the library does not look for the repository.
  std::string workload_dir;
};

// Case 1: fill racks from the TPU v4 mix, free a fraction of the chips at random; one state per
// baseline mode (built by that baseline's placement), every allocator measured on it.
nlohmann::json experiment_frag_tpuv4(int racks, double free_frac, int trials, const CommonOptions& o);

// Case 2: how a fragmented state is built. `fill` is the baseline mode whose (randomized)
// placement fills the racks: aligned is the paper's protocol (server-aligned slices), torus-first-fit
// mxtb's earlier variant; `mix` the slice sizes drawn uniformly (4; 4/8; 4/8/16/32).
struct FillSpec {
  BaselineMode fill = BaselineMode::Aligned;
  std::vector<int> mix = {4};
  std::string name() const;  // "aligned 4/8"
};
std::vector<int> parse_fill_mix(const std::string& s);  // "4/8/16/32"; std::invalid_argument
// Fill, age the cluster with `churn_rounds` departure+refill rounds (-1: four per live slice),
// free random slices down to a utilization, then each allocator gets a copy of the state and the
// same `probes` sequential 32-chip requests. One block of results per fill spec; goals judged on
// the paper's protocol (aligned fill of 4-chip slices).
nlohmann::json experiment_fragmented32(int racks, double util_after_free, int probes, int trials, int churn_rounds,
                                       const std::vector<FillSpec>& fills, const CommonOptions& o);
// Case 3: spare sizing for `chips` chips at a risk target, per-chip probability ranges.
nlohmann::json experiment_spares(int chips, double target, int trials, uint64_t seed);
// Online run: arrivals and departures of a workload on `racks` racks.
struct WorkloadSpec {
  std::string name;      // tpuv4, philly or a file path
  size_t requests = 5000;
  double load = 0.9;     // offered load for synthetic (mix) workloads
};
nlohmann::json run_workload(int racks, const WorkloadSpec& w, const std::vector<AllocOptions>& allocators,
                            const CommonOptions& o);
// The allocators a policy choice stands for: each baseline mode of o, each Morphlux mode of o.
std::vector<AllocOptions> allocators_for(const std::vector<Policy>& policies, const CommonOptions& o);
// Benchmark: heuristic throughput on a long trace and the integer program's solve times.
nlohmann::json run_bench(size_t requests, int racks, int ilp_instances, const CommonOptions& o);

// Prints the table of a result to stdout.
void print_frag_tpuv4(const nlohmann::json& j);
void print_fragmented32(const nlohmann::json& j);
void print_spares(const nlohmann::json& j);
void print_workload(const nlohmann::json& j);
void print_bench(const nlohmann::json& j);

// Plots with gnuplot (SVG). Returns the files written; prints a message when gnuplot is missing.
std::vector<std::string> plot_results(const nlohmann::json& j, const std::string& prefix);

}  // namespace mxtb::host::alloc
