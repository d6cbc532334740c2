// `mxtb regress`: N seeded failover runs, each its own child process (SystemC elaborates once per
// process), J at a time; collects each child's JSON, summarizes every phase's duration (p50, p99,
// max) and names every failing seed with the exact command that reruns it. docs/report.md.
#pragma once

#include "host/report/report.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::host::regress {

// Nearest-rank percentile: the value at 1-based rank ceil(p / 100 * n) of the sorted values (rank 1
// for p = 0), so the result is always one of the values. Throws std::invalid_argument when
// `values` is empty or p is outside [0, 100].
double percentile_nearest_rank(std::vector<double> values, double p);

struct PhaseStats {
  std::string name;  // a phase's name, or "hardware" / "total"
  size_t runs = 0;   // how many timelines had it
  double p50_ns = 0, p99_ns = 0, max_ns = 0;
};

// One row per phase name in first-seen order, then "hardware" and "total" (degraded runs without
// phases count in neither).
std::vector<PhaseStats> summarize(const std::vector<report::Timeline>& runs);

struct RegressConfig {
  // The child's command; every "{seed}" and "{json}" in an argument is replaced by the seed and
  // the path the child must write its JSON to (a failover report under "report", and "failures").
  std::vector<std::string> child_template;
  uint64_t first_seed = 1;
  uint64_t seeds = 10;
  unsigned jobs = 0;                     // 0: one per hardware thread
  std::string work_dir = "out/regress";  // runs/seed-N.json and logs/seed-N.log (child stdout+stderr)
  bool progress = true;                  // a progress line on stderr
};

struct SeedResult {
  uint64_t seed = 0;
  std::vector<std::string> argv;      // exactly what ran
  int exit_code = 0;                  // negative: killed by that signal
  double wall_s = 0;
  std::string json_path, log_path;
  std::optional<report::Timeline> timeline;
  std::vector<std::string> failures;  // the child's own, its exit code, a missing JSON, timeline problems
  // How the seed ended: "passed", "failed" (its child ran and failed), or, under a batch
  // scheduler, "cancelled", "timed_out", "not_started", "lost" (started, no result) or
  // "unfinished" (still queued or running). Every state but "passed" carries a failure.
  std::string status;
  bool passed() const { return failures.empty(); }
  std::string state() const { return !status.empty() ? status : passed() ? "passed" : "failed"; }
};

struct RegressResult {
  std::vector<SeedResult> runs;  // in seed order
  std::vector<PhaseStats> stats;
  unsigned jobs = 0;
  double wall_s = 0;
  // "local", or "slurm" with the job array's id, its task count and seeds per task.
  std::string launcher = "local";
  std::string job_id;
  uint64_t tasks = 0, seeds_per_task = 0;
  size_t failed() const;
};

// The phase statistics of the runs that have a timeline (run_regress and the Slurm collection).
void finish_stats(RegressResult& r);

std::vector<std::string> child_argv(const std::vector<std::string>& tmpl, uint64_t seed, const std::string& json_path);
std::string shell_quote(const std::vector<std::string>& argv);  // one line to paste into a shell

// What one finished child says: reads its JSON (if any) and checks its timeline.
SeedResult evaluate_child(uint64_t seed, std::vector<std::string> argv, int exit_code, const std::string& json_path);

// Spawns the children (posix_spawnp, no shell; stdout and stderr to the seed's log), waits, evaluates.
RegressResult run_regress(const RegressConfig& cfg);

std::string format_summary(const RegressResult& r);  // the table and the failing seeds' rerun commands
nlohmann::json to_json(const RegressResult& r);
std::string junit_xml(const RegressResult& r);       // one testcase per seed

}  // namespace mxtb::host::regress
