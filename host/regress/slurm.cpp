#include "slurm.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <poll.h>
#include <regex>
#include <set>
#include <spawn.h>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace mxtb::host::regress {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

std::string first_word(const std::string& s) {
  std::string t = trim(s);
  return t.substr(0, t.find_first_of(" \t"));
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  if (!out || !(out << text)) throw std::runtime_error(fmt::format("cannot write {}", p.string()));
}

// One template argument as a bash word: literal text single-quoted, {seed} and {json} as the
// script's variables.
std::string bash_word(const std::string& arg) {
  std::string out;
  size_t i = 0;
  while (i < arg.size()) {
    size_t s = arg.find("{seed}", i), j = arg.find("{json}", i);
    size_t at = std::min(s, j);
    std::string lit = arg.substr(i, at == std::string::npos ? std::string::npos : at - i);
    if (!lit.empty()) out += shell_quote({lit});
    if (at == std::string::npos) break;
    out += at == s ? "\"${seed}\"" : "\"${json}\"";
    i = at + 6;
  }
  return out.empty() ? "''" : out;
}

// Task ids of a sacct/squeue array field after "JOB_": "3", "[4-7]", "[4-7%2]", "[1,3,5-6]".
std::vector<uint64_t> task_ids(std::string spec) {
  std::vector<uint64_t> ids;
  if (!spec.empty() && spec.front() == '[') spec = spec.substr(1, spec.find(']') - 1);
  spec = spec.substr(0, spec.find('%'));
  std::stringstream ss(spec);
  std::string part;
  while (std::getline(ss, part, ',')) {
    try {
      size_t dash = part.find('-');
      uint64_t a = std::stoull(part.substr(0, dash));
      uint64_t b = dash == std::string::npos ? a : std::stoull(part.substr(dash + 1));
      for (uint64_t t = a; t <= b && t - a < 1000000; ++t) ids.push_back(t);
    } catch (const std::exception&) {
      // Not a task id (a step line or a heterogeneous job's part): not ours to judge.
    }
  }
  return ids;
}

}  // namespace

std::string SlurmCampaign::json_path(uint64_t seed) const {
  return (fs::path(work_dir) / "runs" / fmt::format("seed-{}.json", seed)).string();
}
std::string SlurmCampaign::exit_path(uint64_t seed) const {
  return (fs::path(work_dir) / "runs" / fmt::format("seed-{}.exit", seed)).string();
}
std::string SlurmCampaign::log_path(uint64_t seed) const {
  return (fs::path(work_dir) / "logs" / fmt::format("seed-{}.log", seed)).string();
}

bool valid_time_limit(const std::string& t) {
  static const std::regex re(R"(^(UNLIMITED|INFINITE|\d+(:\d+){0,2}|\d+-\d+(:\d+){0,2})$)");
  return std::regex_match(t, re);
}

Captured run_capture(const std::vector<std::string>& argv) {
  Captured c;
  int out[2], err[2];
  if (pipe(out) != 0) return c;
  if (pipe(err) != 0) {
    close(out[0]);
    close(out[1]);
    return c;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  posix_spawn_file_actions_addclose(&fa, err[0]);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, cargv[0], &fa, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  close(err[1]);
  if (rc != 0) {
    close(out[0]);
    close(err[0]);
    c.err = std::strerror(rc);
    return c;
  }
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* dst[2] = {&c.out, &c.err};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        dst[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  c.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return c;
}

std::string batch_script(const SlurmCampaign& c) {
  std::string child;
  for (const auto& a : c.child_template) child += (child.empty() ? "" : " ") + bash_word(a);
  const uint64_t last = c.first_seed + c.seeds - 1;
  return fmt::format(R"SH(#!/bin/bash
# Written by `mxtb regress --launcher slurm`: array task T runs seeds {first} + T * {k} onwards,
# {k} per task, up to {last}, one child at a time. The exit record is written only after the child
# has ended, so a task killed by a cancel or its time limit leaves none for the seed it was running.
set -u
if [ -z "${{SLURM_ARRAY_TASK_ID:-}}" ]; then
  echo "regress.sbatch: not started as a Slurm array task (submit it with sbatch --array)" >&2
  exit 2
fi
dir={dir}
first=$(( {first} + SLURM_ARRAY_TASK_ID * {k} ))
last=$(( first + {k} - 1 ))
if [ "$last" -gt {last} ]; then last={last}; fi
for (( seed = first; seed <= last; seed++ )); do
  json="$dir/runs/seed-$seed.json"
  rm -f "$json" "$dir/runs/seed-$seed.exit"
  start=$(date +%s.%N)
  {child} >"$dir/logs/seed-$seed.log" 2>&1 </dev/null
  code=$?
  end=$(date +%s.%N)
  printf '{{"seed": %s, "exit_code": %s, "start": %s, "end": %s, "task": %s, "host": "%s"}}\n' \
    "$seed" "$code" "$start" "$end" "$SLURM_ARRAY_TASK_ID" "$(hostname)" >"$dir/runs/seed-$seed.exit.part" &&
    mv -f "$dir/runs/seed-$seed.exit.part" "$dir/runs/seed-$seed.exit"
done
)SH",
                     fmt::arg("first", c.first_seed), fmt::arg("k", c.seeds_per_task), fmt::arg("last", last),
                     fmt::arg("dir", shell_quote({c.work_dir})), fmt::arg("child", child));
}

namespace {

json campaign_json(const SlurmCampaign& c) {
  return json{{"launcher", "slurm"},         {"child", c.child_template}, {"first_seed", c.first_seed},
              {"seeds", c.seeds},            {"seeds_per_task", c.seeds_per_task},
              {"work_dir", c.work_dir},      {"job_id", c.job_id},
              {"submitted_at", c.submitted_at}, {"sbatch", c.sbatch_argv}};
}

}  // namespace

SlurmCampaign submit_slurm(const RegressConfig& cfg, const SlurmOptions& opt) {
  if (cfg.child_template.empty()) throw std::invalid_argument("regress: no child command");
  if (opt.seeds_per_task < 1) throw std::invalid_argument("regress: seeds per task must be at least 1");
  SlurmCampaign c;
  c.child_template = cfg.child_template;
  c.first_seed = cfg.first_seed;
  c.seeds = cfg.seeds;
  c.seeds_per_task = opt.seeds_per_task;
  c.work_dir = fs::absolute(cfg.work_dir).lexically_normal().string();
  if (c.work_dir.size() > 1 && c.work_dir.back() == '/') c.work_dir.pop_back();
  const fs::path dir(c.work_dir);
  fs::create_directories(dir / "runs");
  fs::create_directories(dir / "logs");
  fs::create_directories(dir / "slurm");
  // Results of an earlier campaign in this folder must not pass for this one's.
  for (uint64_t s = c.first_seed; s < c.first_seed + c.seeds; ++s) {
    fs::remove(c.json_path(s));
    fs::remove(c.exit_path(s));
    fs::remove(c.log_path(s));
  }
  const fs::path script = dir / "slurm" / "regress.sbatch";
  write_file(script, batch_script(c));
  fs::permissions(script, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                              fs::perms::others_exec);
  std::string array = fmt::format("--array=0-{}", c.tasks() - 1);
  if (opt.max_running) array += fmt::format("%{}", opt.max_running);
  c.sbatch_argv = {"sbatch", "--parsable", "--job-name=" + opt.job_name, array,
                   "--output=" + (dir / "slurm" / "task-%A_%a.out").string(), "--chdir=" + c.work_dir};
  if (!opt.partition.empty()) c.sbatch_argv.push_back("--partition=" + opt.partition);
  if (!opt.time_limit.empty()) c.sbatch_argv.push_back("--time=" + opt.time_limit);
  for (const auto& a : opt.sbatch_args) c.sbatch_argv.push_back(a);
  c.sbatch_argv.push_back(script.string());
  c.job_id = sbatch(c.sbatch_argv, "the job array");
  c.submitted_at = unix_now();
  write_file(dir / "campaign.json", campaign_json(c).dump(2) + "\n");
  return c;
}

std::string sbatch(const std::vector<std::string>& argv, const std::string& what) {
  Captured r = run_capture(argv);
  if (r.exit_code == -1)
    throw std::runtime_error(fmt::format("cannot run sbatch ({}): is Slurm's client installed and on PATH?", r.err));
  if (r.exit_code != 0) throw std::runtime_error(fmt::format("sbatch refused {} (exit {}): {}", what, r.exit_code, trim(r.err + r.out)));
  std::string id = trim(r.out.substr(0, r.out.find(';')));
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
    throw std::runtime_error(fmt::format("sbatch --parsable printed '{}', not a job id", trim(r.out)));
  return id;
}

void wait_job(const std::string& job_id, double poll_s, const std::function<void(const std::string&)>& on_poll) {
  int errors = 0;
  for (;;) {
    Captured q = run_capture({"squeue", "-h", "-j", job_id, "-o", "%i %T"});
    if (q.exit_code == 0 && trim(q.out).empty()) return;
    if (q.exit_code != 0) {
      // A job the controller has already purged is "invalid": it is over.
      if ((q.err + q.out).find("Invalid job id") != std::string::npos) return;
      if (++errors >= 5)
        throw std::runtime_error(fmt::format("squeue failed {} times in a row (exit {}): {}", errors, q.exit_code, trim(q.err)));
    } else {
      errors = 0;
      if (on_poll) on_poll(q.out);
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_s));
  }
}

SlurmCampaign read_campaign(const std::string& dir) {
  const std::string path = (fs::path(dir) / "campaign.json").string();
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("{}: no such file (is {} a campaign folder written by `mxtb regress --launcher slurm`?)", path, dir));
  SlurmCampaign c;
  try {
    json j = json::parse(in);
    if (j.value("launcher", "") != "slurm") throw std::runtime_error("\"launcher\" is not \"slurm\"");
    c.child_template = j.at("child").get<std::vector<std::string>>();
    c.first_seed = j.at("first_seed").get<uint64_t>();
    c.seeds = j.at("seeds").get<uint64_t>();
    c.seeds_per_task = j.at("seeds_per_task").get<uint64_t>();
    c.work_dir = j.at("work_dir").get<std::string>();
    c.job_id = j.at("job_id").get<std::string>();
    c.submitted_at = j.at("submitted_at").get<double>();
    c.sbatch_argv = j.value("sbatch", std::vector<std::string>{});
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}: {}", path, e.what()));
  }
  if (c.seeds < 1 || c.seeds_per_task < 1 || c.child_template.empty() || c.job_id.empty())
    throw std::runtime_error(fmt::format("{}: seeds, seeds_per_task, child and job_id must be set", path));
  return c;
}

void wait_slurm(const SlurmCampaign& c, double poll_s, bool progress) {
  const bool tty = isatty(STDERR_FILENO);
  wait_job(c.job_id, poll_s, [&](const std::string& squeue_lines) {
    if (!progress) return;
    size_t pending = 0, running = 0, done = 0;
    std::stringstream ss(squeue_lines);
    std::string line;
    while (std::getline(ss, line)) {
      std::string id = line.substr(0, line.find(' ')), state = trim(line.substr(line.find(' ') + 1));
      size_t n = id.find('_') == std::string::npos ? 1 : task_ids(id.substr(id.find('_') + 1)).size();
      (state == "PENDING" ? pending : running) += n;
    }
    for (uint64_t s = c.first_seed; s < c.first_seed + c.seeds; ++s) done += fs::exists(c.exit_path(s));
    std::fprintf(stderr, "%sregress: slurm job %s: %zu/%zu seeds done; tasks: %zu pending, %zu running, %.0f s%s",
                 tty ? "\r" : "", c.job_id.c_str(), done, static_cast<size_t>(c.seeds), pending, running,
                 unix_now() - c.submitted_at, tty ? "  " : "\n");
    std::fflush(stderr);
  });
  if (progress && tty) std::fputc('\n', stderr);
}

std::map<uint64_t, SlurmTaskState> parse_sacct(const std::string& text, const std::string& job_id) {
  std::map<uint64_t, SlurmTaskState> out;
  std::stringstream ss(text);
  std::string line;
  const std::string prefix = job_id + "_";
  while (std::getline(ss, line)) {
    std::vector<std::string> f;
    std::stringstream ls(line);
    std::string field;
    while (std::getline(ls, field, '|')) f.push_back(field);
    if (f.size() < 3 || f[0].rfind(prefix, 0) != 0) continue;
    std::string rest = f[0].substr(prefix.size());
    if (rest.find('.') != std::string::npos) continue;  // a step (12_3.batch), not the task
    for (uint64_t t : task_ids(rest)) out[t] = {first_word(f[1]), trim(f[2])};
  }
  return out;
}

std::map<uint64_t, SlurmTaskState> parse_scontrol(const std::string& text) {
  std::map<uint64_t, SlurmTaskState> out;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) {
    std::map<std::string, std::string> kv;
    std::stringstream ls(line);
    std::string tok;
    while (ls >> tok) {
      size_t eq = tok.find('=');
      if (eq != std::string::npos) kv.emplace(tok.substr(0, eq), tok.substr(eq + 1));
    }
    if (!kv.count("ArrayTaskId") || !kv.count("JobState")) continue;
    for (uint64_t t : task_ids(kv["ArrayTaskId"])) out[t] = {kv["JobState"], kv.count("ExitCode") ? kv["ExitCode"] : ""};
  }
  return out;
}

std::map<uint64_t, SlurmTaskState> slurm_task_states(const std::string& job_id, std::string* source) {
  Captured a = run_capture({"sacct", "-n", "-P", "-X", "-j", job_id, "--format=JobID,State,ExitCode"});
  if (a.exit_code == 0) {
    auto states = parse_sacct(a.out, job_id);
    if (!states.empty()) {
      if (source) *source = "sacct";
      return states;
    }
  }
  // Without accounting (sacct: "accounting storage is disabled") the controller still knows a
  // finished job for MinJobAge (300 s by default).
  Captured s = run_capture({"scontrol", "-o", "show", "job", job_id});
  if (s.exit_code == 0) {
    auto states = parse_scontrol(s.out);
    if (!states.empty()) {
      if (source) *source = "scontrol";
      return states;
    }
  }
  if (source) *source = "none";
  return {};
}

namespace {

// What a task's Slurm state makes of a seed that left no exit record (or was killed).
struct Verdict {
  std::string status, why;
};

Verdict judge_state(const std::string& state, const std::string& exit_code, bool started) {
  static const std::set<std::string> live{"PENDING",   "RUNNING",     "CONFIGURING", "COMPLETING", "REQUEUED",
                                          "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING",  "SUSPENDED", "STOPPED",
                                          "SIGNALING", "STAGE_OUT",   "RESV_DEL_HOLD"};
  std::string when = started ? "while the seed ran" : "before the seed started";
  if (state == "CANCELLED") return {"cancelled", fmt::format("cancelled {}", when)};
  if (state == "TIMEOUT" || state == "DEADLINE") return {"timed_out", fmt::format("hit its time limit ({}) {}", state, when)};
  if (live.count(state)) return {"unfinished", fmt::format("is still {}", state)};
  std::string code = exit_code.empty() ? "" : fmt::format(", exit {}", exit_code);
  if (state == "COMPLETED")
    return {started ? "lost" : "not_started", fmt::format("completed{} but the seed left no exit record", code)};
  return {started ? "lost" : "not_started", fmt::format("ended {}{} {}", state, code, when)};
}

}  // namespace

RegressResult collect_slurm(const SlurmCampaign& c, const std::map<uint64_t, SlurmTaskState>& states) {
  RegressResult res;
  res.launcher = "slurm";
  res.job_id = c.job_id;
  res.tasks = c.tasks();
  res.seeds_per_task = c.seeds_per_task;
  res.jobs = static_cast<unsigned>(c.tasks());
  double last_end = 0;
  for (uint64_t seed = c.first_seed; seed < c.first_seed + c.seeds; ++seed) {
    const uint64_t task = c.task_of(seed);
    auto argv = child_argv(c.child_template, seed, c.json_path(seed));
    auto st = states.find(task);
    const std::string where = fmt::format("Slurm task {}_{}", c.job_id, task);
    SeedResult r;
    std::optional<json> exit_record;
    if (std::ifstream in(c.exit_path(seed)); in) {
      try {
        exit_record = json::parse(in);
      } catch (const json::exception&) {
        // A torn record (the task killed while writing it) counts as none.
      }
    }
    if (exit_record && exit_record->contains("exit_code")) {
      int code = exit_record->value("exit_code", 0);
      // bash reports a child killed by signal N as 128 + N; local runs say -N.
      if (code > 128 && code < 128 + 65) code = -(code - 128);
      r = evaluate_child(seed, argv, code, c.json_path(seed));
      r.wall_s = exit_record->value("end", 0.0) - exit_record->value("start", 0.0);
      last_end = std::max(last_end, exit_record->value("end", 0.0));
      if (!r.passed() && code < 0 && st != states.end()) {
        Verdict v = judge_state(st->second.state, st->second.exit_code, true);
        if (v.status == "cancelled" || v.status == "timed_out") {
          r.status = v.status;
          r.failures.insert(r.failures.begin(), fmt::format("{} {}", where, v.why));
        }
      }
    } else {
      r.seed = seed;
      r.argv = argv;
      r.json_path = c.json_path(seed);
      r.exit_code = -1;
      const bool started = fs::exists(c.log_path(seed));
      if (st != states.end()) {
        Verdict v = judge_state(st->second.state, st->second.exit_code, started);
        r.status = v.status;
        r.failures.push_back(fmt::format("{} {}: no result", where, v.why));
      } else {
        // scontrol keeps no record of an array task cancelled while pending (sacct does), nor of
        // one the controller has forgotten: either way the seed has no result of its own.
        r.status = started ? "lost" : "not_started";
        r.failures.push_back(fmt::format(
            "{} {}, and Slurm has no record of the task ({}; sacct with accounting says which)", where,
            started ? "started (its log exists) but left no exit record" : "never started (no log)",
            states.empty() ? "the job is unknown to sacct and scontrol" : "cancelled while pending, or forgotten"));
      }
    }
    r.log_path = c.log_path(seed);
    res.runs.push_back(std::move(r));
  }
  finish_stats(res);
  res.wall_s = last_end > c.submitted_at ? last_end - c.submitted_at : 0;
  return res;
}

}  // namespace mxtb::host::regress
