// `mxtb regress`: seeded random failover scenarios, one child process each (host/regress/regress.h).
// The child is `mxtb demo --scenario-seed {seed}`: the emulator on loopback and the failover
// manager over IPbus, as in the main job, for a scenario drawn from the seed.
#include "apps/mxtb/args.h"
#include "apps/mxtb/commands.h"
#include "apps/mxtb/rack_blast.h"

#include "host/fabric/emulator_process.h"
#include "host/regress/regress.h"
#include "host/regress/slurm.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace mxtb::app {

namespace {

void write_text(const std::string& path, const std::string& text) {
  auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir);
  std::ofstream out(path);
  if (!out || !(out << text)) throw std::runtime_error(fmt::format("cannot write {}", path));
}

void write_outputs(const host::regress::RegressResult& r, const std::string& json_path, const std::string& junit_path) {
  fmt::print("{}", host::regress::format_summary(r));
  write_text(json_path, host::regress::to_json(r).dump(2) + "\n");
  write_text(junit_path, host::regress::junit_xml(r));
  fmt::print("  wrote {} and {}\n", json_path, junit_path);
  // A rack campaign: its blast radius by case, beside the JSON.
  const nlohmann::json blast = rack_blast_summary(r);
  if (blast["seeds"].get<size_t>() > 0) {
    const auto dir = std::filesystem::path(json_path).parent_path();
    const std::string blast_json = (dir / "blast-radius.json").string(), svg = (dir / "blast-radius.svg").string();
    fmt::print("{}", format_rack_blast(blast));
    write_text(blast_json, blast.dump(2) + "\n");
    const bool drawn = plot_rack_blast(blast, svg);
    fmt::print("  wrote {}{}\n", blast_json, drawn ? " and " + svg : "");
  }
  fmt::print("{}\n", r.failed() == 0 ? "PASS" : fmt::format("FAIL: {} of {} seeds", r.failed(), r.runs.size()));
}

// Summary, JSON and JUnit of a submitted Slurm campaign from its folder and the tasks' states.
int collect(const host::regress::SlurmCampaign& c, const std::string& json_path, const std::string& junit_path) {
  std::string source;
  auto states = host::regress::slurm_task_states(c.job_id, &source);
  if (source == "none")
    fmt::print("  neither sacct nor scontrol knows job {}: seeds without a result are reported as lost or never started\n",
               c.job_id);
  else
    fmt::print("  task states of job {} from {}\n", c.job_id, source);
  host::regress::RegressResult r = host::regress::collect_slurm(c, states);
  write_outputs(r, json_path, junit_path);
  return r.failed() == 0 ? 0 : 1;
}

}  // namespace

int cmd_regress(const ArgList& argv) {
  Args args(argv,
            {"--seeds", "--jobs", "--first-seed", "--json", "--junit", "--out", "--launcher", "--seeds-per-task",
             "--partition", "--time-limit", "--sbatch-args", "--poll-s", "--collect", "--restart"},
            {"--quiet", "--no-wait", "--rack"});
  const bool quiet = args.has("--quiet");
  if (args.has("--collect")) {
    for (const char* f : {"--seeds", "--jobs", "--first-seed", "--out", "--launcher", "--seeds-per-task", "--partition",
                          "--time-limit", "--sbatch-args", "--poll-s", "--no-wait", "--restart"})
      if (args.has(f)) throw UsageError(fmt::format("--collect DIR reads the campaign from DIR; {} does not go with it", f));
    std::string dir = args.str("--collect");
    host::regress::SlurmCampaign c;
    try {
      c = host::regress::read_campaign(dir);
    } catch (const std::runtime_error& e) {
      throw InputError(e.what());
    }
    fmt::print("mxtb regress: collecting slurm job {} (seeds {}..{}) from {}\n", c.job_id, c.first_seed,
               c.first_seed + c.seeds - 1, c.work_dir);
    return collect(c, args.str("--json", dir + "/regress.json"), args.str("--junit", dir + "/junit.xml"));
  }
  if (!args.has("--seeds")) throw UsageError("--seeds N is required (how many random failover scenarios)");
  host::regress::RegressConfig cfg;
  cfg.seeds = args.u64("--seeds", 0);
  if (cfg.seeds < 1 || cfg.seeds > 100000) throw UsageError(fmt::format("--seeds must be in [1, 100000], got {}", cfg.seeds));
  uint64_t jobs = args.u64("--jobs", 0);
  if (args.has("--jobs") && (jobs < 1 || jobs > 256)) throw UsageError(fmt::format("--jobs must be in [1, 256], got {}", jobs));
  cfg.jobs = static_cast<unsigned>(jobs);
  cfg.first_seed = args.u64("--first-seed", 1);
  cfg.work_dir = args.str("--out", "out/regress");
  cfg.progress = !quiet;
  const std::string launcher = args.choice("--launcher", "local", {"local", "slurm"});
  if (launcher == "local")
    for (const char* f : {"--seeds-per-task", "--partition", "--time-limit", "--sbatch-args", "--poll-s", "--no-wait"})
      if (args.has(f)) throw UsageError(fmt::format("{} is for --launcher slurm", f));
  host::regress::SlurmOptions slurm;
  if (launcher == "slurm") {
    // Every node runs the child by this path and writes below this folder: both must be on a
    // filesystem the nodes share (docs/failover.md).
    cfg.work_dir = std::filesystem::absolute(cfg.work_dir).lexically_normal().string();
    slurm.seeds_per_task = args.u64("--seeds-per-task", 1, 1, 100000);
    slurm.partition = args.str("--partition");
    slurm.time_limit = args.str("--time-limit");
    if (args.has("--time-limit") && !host::regress::valid_time_limit(slurm.time_limit))
      throw UsageError(fmt::format("--time-limit '{}' is not in sbatch's --time syntax (M, M:S, H:M:S, D-H, D-H:M, D-H:M:S)",
                                   slurm.time_limit));
    if (args.has("--partition") && slurm.partition.empty()) throw UsageError("--partition is empty");
    std::istringstream words(args.str("--sbatch-args"));
    for (std::string w; words >> w;) slurm.sbatch_args.push_back(w);
    // --jobs caps how many array tasks run at once (the array's %M throttle).
    slurm.max_running = cfg.jobs;
  }
  const double poll_s = args.real("--poll-s", 10, 0.1, 3600);
  if (args.has("--rack") && args.has("--restart")) throw UsageError("--restart is for the single server's demo; --rack runs no job");
  // --rack: random rack failovers (docs/rack.md, "The rack campaign"), each a served rack of its own.
  if (args.has("--rack"))
    cfg.child_template = {host::fabric::self_executable(), "rack-failover", "--scenario-seed", "{seed}", "--json", "{json}",
                          "--out", cfg.work_dir + "/seed-{seed}"};
  else
    cfg.child_template = {host::fabric::self_executable(), "demo", "--scenario-seed", "{seed}", "--json", "{json}",
                          "--out", cfg.work_dir + "/seed-{seed}", "--no-waves"};
  // Every seed measures what the demo measures: its default (the job's ranks as processes, the hot
  // spare on the path and the relaunch beside it) unless --restart names another strategy or none.
  if (args.has("--restart"))
    cfg.child_template.insert(cfg.child_template.end(),
                              {"--restart", args.choice("--restart", "both", {"hot-spare", "relaunch", "both", "none"})});
  std::string json_path = args.str("--json", cfg.work_dir + "/regress.json");
  std::string junit_path = args.str("--junit", cfg.work_dir + "/junit.xml");

  fmt::print("mxtb regress: seeds {}..{} ({} runs), child: {}\n", cfg.first_seed, cfg.first_seed + cfg.seeds - 1, cfg.seeds,
             host::regress::shell_quote(cfg.child_template));
  std::fflush(stdout);
  if (launcher == "slurm") {
    host::regress::SlurmCampaign c;
    try {
      c = host::regress::submit_slurm(cfg, slurm);
    } catch (const std::runtime_error& e) {
      throw InputError(e.what());
    }
    fmt::print("  submitted slurm job {} ({} array tasks, {} seeds per task): {}\n", c.job_id, c.tasks(), c.seeds_per_task,
               host::regress::shell_quote(c.sbatch_argv));
    if (args.has("--no-wait")) {
      fmt::print("  not waiting; when it has finished: mxtb regress --collect {}\n", host::regress::shell_quote({c.work_dir}));
      return 0;
    }
    std::fflush(stdout);
    host::regress::wait_slurm(c, poll_s, !quiet);
    return collect(c, json_path, junit_path);
  }
  host::regress::RegressResult r = host::regress::run_regress(cfg);
  write_outputs(r, json_path, junit_path);
  return r.failed() == 0 ? 0 : 1;
}

}  // namespace mxtb::app
