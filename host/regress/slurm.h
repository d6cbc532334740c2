// `mxtb regress --launcher slurm`: the same child command as a local run, once per seed, in one
// Slurm job array (a chunk of seeds per array task), each writing its JSON into a shared output
// folder; then the same summary, JSON and JUnit XML as a local run. A seed is judged by the files
// its task left (its JSON and an exit record) and by the task's state from sacct (or, without
// accounting, scontrol while the controller remembers the job): a cancelled, timed-out or
// never-started task's seeds are reported as such and never pass. docs/report.md.
#pragma once

#include "regress.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::host::regress {

// What a campaign submitted to Slurm is; DIR/campaign.json, read back by `--collect DIR`.
struct SlurmCampaign {
  std::vector<std::string> child_template;  // as RegressConfig::child_template
  uint64_t first_seed = 1, seeds = 1, seeds_per_task = 1;
  std::string work_dir;  // absolute: every node must see it at the same path
  std::string job_id;    // the array's id (sbatch --parsable), empty until submitted
  double submitted_at = 0;  // Unix seconds
  std::vector<std::string> sbatch_argv;  // exactly what was run

  uint64_t tasks() const { return (seeds + seeds_per_task - 1) / seeds_per_task; }
  uint64_t task_of(uint64_t seed) const { return (seed - first_seed) / seeds_per_task; }
  std::string json_path(uint64_t seed) const;  // DIR/runs/seed-N.json
  std::string exit_path(uint64_t seed) const;  // DIR/runs/seed-N.exit: the task's record of the child's end
  std::string log_path(uint64_t seed) const;   // DIR/logs/seed-N.log
};

struct SlurmOptions {
  std::string partition;                 // empty: the cluster's default
  std::string time_limit;                // per array task, sbatch --time syntax; empty: the partition's
  std::vector<std::string> sbatch_args;  // passed to sbatch as they are, before the script
  uint64_t seeds_per_task = 1;
  unsigned max_running = 0;              // array throttle (--array=0-N%M); 0: no limit
  std::string job_name = "mxtb-regress";
};

// One array task's state as Slurm reports it: "COMPLETED", "CANCELLED", "TIMEOUT", "FAILED",
// "NODE_FAIL", "PENDING", "RUNNING", ...; exit_code as sacct writes it ("0:0", code:signal).
struct SlurmTaskState {
  std::string state;
  std::string exit_code;
};

// sbatch --time syntax: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S, or UNLIMITED/INFINITE.
bool valid_time_limit(const std::string& t);

// The bash script each array task runs: its chunk of seeds, one child at a time, each child's
// output to its log and an exit record written only once the child has ended.
std::string batch_script(const SlurmCampaign& c);

// Writes DIR/slurm/regress.sbatch and DIR/campaign.json, removes earlier results of these seeds,
// submits the array with sbatch and records its id. Throws std::runtime_error naming sbatch's own
// message when it refuses.
SlurmCampaign submit_slurm(const RegressConfig& cfg, const SlurmOptions& opt);

SlurmCampaign read_campaign(const std::string& dir);  // throws std::runtime_error naming the file and problem

// Polls squeue every poll_s seconds until the job has no task pending or running.
void wait_slurm(const SlurmCampaign& c, double poll_s, bool progress);

// Any batch job (a regress array, a rack's MPI job): runs `argv` (sbatch --parsable ...) and
// returns the job's id; throws std::runtime_error naming `what` and sbatch's own message when it
// refuses, or when sbatch cannot run.
std::string sbatch(const std::vector<std::string>& argv, const std::string& what);
// Polls squeue every poll_s seconds until job `job_id` has nothing pending or running; on_poll
// (may be empty) gets squeue's lines ("ID STATE") after every poll that found some.
void wait_job(const std::string& job_id, double poll_s, const std::function<void(const std::string&)>& on_poll);

// Array task id -> state. parse_sacct reads `sacct -n -P -X --format=JobID,State,ExitCode`
// ("12_3|CANCELLED by 0|0:15", pending ranges such as "12_[4-7%2]" expanded); parse_scontrol
// reads `scontrol -o show job ID` (one line per task: ArrayTaskId=, JobState=, ExitCode=).
std::map<uint64_t, SlurmTaskState> parse_sacct(const std::string& text, const std::string& job_id);
std::map<uint64_t, SlurmTaskState> parse_scontrol(const std::string& text);

// Asks sacct, then scontrol; empty when neither knows the job (no accounting and the controller
// forgot it). `source` says which answered ("sacct", "scontrol" or "none").
std::map<uint64_t, SlurmTaskState> slurm_task_states(const std::string& job_id, std::string* source = nullptr);

// The campaign's result from its files and the tasks' states; wall time from the submission to
// the last exit record.
RegressResult collect_slurm(const SlurmCampaign& c, const std::map<uint64_t, SlurmTaskState>& states);

// Runs argv (no shell), returns its exit code, stdout and stderr; -1 when it cannot start.
struct Captured {
  int exit_code = -1;
  std::string out, err;
};
Captured run_capture(const std::vector<std::string>& argv);

}  // namespace mxtb::host::regress
