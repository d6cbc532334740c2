#include "regress.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <spawn.h>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace mxtb::host::regress {

using nlohmann::json;

double percentile_nearest_rank(std::vector<double> values, double p) {
  if (values.empty()) throw std::invalid_argument("percentile of no values");
  if (!(p >= 0 && p <= 100)) throw std::invalid_argument(fmt::format("percentile {} is outside [0, 100]", p));
  std::sort(values.begin(), values.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100 * static_cast<double>(values.size())));
  return values[std::max<size_t>(rank, 1) - 1];
}

std::vector<PhaseStats> summarize(const std::vector<report::Timeline>& runs) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> d;
  auto add = [&](const std::string& name, double ns) {
    if (!d.count(name)) order.push_back(name);
    d[name].push_back(ns);
  };
  for (const auto& t : runs)
    for (const auto& p : t.phases) add(p.name, p.duration_ns());
  for (const auto& t : runs)
    for (const auto& p : t.beside) add(p.name + " (beside)", p.duration_ns());
  for (const auto& t : runs)
    if (!t.phases.empty()) {
      add("hardware", t.hardware_ns);
      add("total", t.total_ns);
      for (const auto& a : t.alternatives) add("total, " + a.name, a.total_ns);
      add("swap_relaunch", report::swap_relaunch_ns(t));  // against the prototype's 1.2 s
    }
  // "hardware", the totals and swap_relaunch last, whatever order the phases came in.
  std::stable_partition(order.begin(), order.end(), [](const std::string& n) {
    return n != "hardware" && n.rfind("total", 0) != 0 && n != "swap_relaunch";
  });
  std::vector<PhaseStats> out;
  for (const auto& n : order) {
    const auto& v = d[n];
    out.push_back({n, v.size(), percentile_nearest_rank(v, 50), percentile_nearest_rank(v, 99),
                   *std::max_element(v.begin(), v.end())});
  }
  return out;
}

size_t RegressResult::failed() const {
  return static_cast<size_t>(std::count_if(runs.begin(), runs.end(), [](const SeedResult& s) { return !s.passed(); }));
}

std::vector<std::string> child_argv(const std::vector<std::string>& tmpl, uint64_t seed, const std::string& json_path) {
  std::vector<std::string> out;
  for (std::string a : tmpl) {
    for (auto [key, value] : {std::pair<std::string, std::string>{"{seed}", std::to_string(seed)}, {"{json}", json_path}})
      for (size_t at = a.find(key); at != std::string::npos; at = a.find(key, at + value.size()))
        a.replace(at, key.size(), value);
    out.push_back(a);
  }
  return out;
}

std::string shell_quote(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@") ==
                                   std::string::npos;
    if (plain) {
      out += a;
    } else {
      out += '\'';
      for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
  }
  return out;
}

SeedResult evaluate_child(uint64_t seed, std::vector<std::string> argv, int exit_code, const std::string& json_path) {
  SeedResult r;
  r.seed = seed;
  r.argv = std::move(argv);
  r.exit_code = exit_code;
  r.json_path = json_path;
  std::ifstream in(json_path);
  if (!in) {
    r.failures.push_back(fmt::format("wrote no JSON ({}); exit code {}", json_path, exit_code));
    return r;
  }
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    r.failures.push_back(fmt::format("{}: not valid JSON: {}", json_path, e.what()));
    return r;
  }
  if (j.contains("failures") && j["failures"].is_array())
    for (const auto& f : j["failures"]) r.failures.push_back(f.is_string() ? f.get<std::string>() : f.dump());
  if (!j.contains("report")) {
    r.failures.push_back(fmt::format("{}: has no failover report (\"report\")", json_path));
  } else {
    try {
      r.timeline = report::timeline_from_json(j["report"], json_path);
      for (const auto& p : report::check_timeline(*r.timeline)) r.failures.push_back("timeline: " + p);
    } catch (const std::exception& e) {
      r.failures.push_back(e.what());
    }
  }
  if (exit_code != 0 && r.failures.empty())
    r.failures.push_back(exit_code < 0 ? fmt::format("killed by signal {}", -exit_code) : fmt::format("exit code {}", exit_code));
  return r;
}

RegressResult run_regress(const RegressConfig& cfg) {
  if (cfg.child_template.empty()) throw std::invalid_argument("regress: no child command");
  namespace fs = std::filesystem;
  fs::create_directories(fs::path(cfg.work_dir) / "runs");
  fs::create_directories(fs::path(cfg.work_dir) / "logs");
  RegressResult res;
  res.jobs = cfg.jobs ? cfg.jobs : std::max(1u, std::thread::hardware_concurrency());
  const auto t0 = std::chrono::steady_clock::now();
  auto since = [](std::chrono::steady_clock::time_point a) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
  };
  struct Running {
    size_t index;
    std::chrono::steady_clock::time_point start;
  };
  std::map<pid_t, Running> running;
  res.runs.resize(cfg.seeds);
  std::vector<std::vector<std::string>> argvs(cfg.seeds);
  size_t next = 0, done = 0, failed = 0;
  const bool tty = isatty(STDERR_FILENO);
  auto progress = [&] {
    if (!cfg.progress) return;
    std::fprintf(stderr, "%sregress: %zu/%zu done, %zu running, %zu failed, %.0f s%s", tty ? "\r" : "", done,
                 static_cast<size_t>(cfg.seeds), running.size(), failed, since(t0), tty ? "  " : "\n");
    std::fflush(stderr);
  };
  while (done < cfg.seeds) {
    while (running.size() < res.jobs && next < cfg.seeds) {
      uint64_t seed = cfg.first_seed + next;
      std::string json_path = (fs::path(cfg.work_dir) / "runs" / fmt::format("seed-{}.json", seed)).string();
      std::string log_path = (fs::path(cfg.work_dir) / "logs" / fmt::format("seed-{}.log", seed)).string();
      fs::remove(json_path);  // a stale file from an earlier run must not pass for this one's
      argvs[next] = child_argv(cfg.child_template, seed, json_path);
      std::vector<char*> cargv;
      for (auto& a : argvs[next]) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      posix_spawn_file_actions_t fa;
      posix_spawn_file_actions_init(&fa);
      posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
      pid_t pid = 0;
      int err = posix_spawnp(&pid, cargv[0], &fa, nullptr, cargv.data(), environ);
      posix_spawn_file_actions_destroy(&fa);
      res.runs[next].log_path = log_path;
      if (err != 0) {
        // Not started: record it as a failed seed and go on with the others.
        res.runs[next] = evaluate_child(seed, argvs[next], 127, json_path);
        res.runs[next].log_path = log_path;
        res.runs[next].failures.insert(res.runs[next].failures.begin(),
                                       fmt::format("could not start {}: {}", argvs[next][0], std::strerror(err)));
        ++done;
        ++failed;
      } else {
        running[pid] = {next, std::chrono::steady_clock::now()};
      }
      ++next;
      progress();
    }
    if (running.empty()) continue;
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(fmt::format("regress: waitpid: {}", std::strerror(errno)));
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;  // not one of ours
    size_t i = it->second.index;
    double wall = since(it->second.start);
    running.erase(it);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? -WTERMSIG(status) : -1;
    std::string log_path = res.runs[i].log_path;
    uint64_t seed = cfg.first_seed + i;
    res.runs[i] = evaluate_child(seed, argvs[i], code,
                                 (fs::path(cfg.work_dir) / "runs" / fmt::format("seed-{}.json", seed)).string());
    res.runs[i].log_path = log_path;
    res.runs[i].wall_s = wall;
    ++done;
    if (!res.runs[i].passed()) ++failed;
    progress();
  }
  if (cfg.progress && tty) std::fputc('\n', stderr);
  finish_stats(res);
  res.wall_s = since(t0);
  return res;
}

void finish_stats(RegressResult& r) {
  std::vector<report::Timeline> timelines;
  for (const auto& s : r.runs)
    if (s.timeline) timelines.push_back(*s.timeline);
  r.stats = summarize(timelines);
}

namespace {
// Seeds that did not run to a verdict of their own (cancelled, timed out, ...), by state.
std::map<std::string, size_t> unfinished_states(const RegressResult& r) {
  std::map<std::string, size_t> n;
  for (const auto& s : r.runs)
    if (s.state() != "passed" && s.state() != "failed") ++n[s.state()];
  return n;
}
}  // namespace

std::string format_summary(const RegressResult& r) {
  std::string how = r.launcher == "slurm"
                        ? fmt::format("slurm job {} ({} tasks, {} seeds per task)", r.job_id, r.tasks, r.seeds_per_task)
                        : fmt::format("{} jobs", r.jobs);
  std::string out = fmt::format("regress: {} seeds, {}, {:.1f} s wall; {} passed, {} failed\n", r.runs.size(), how,
                                r.wall_s, r.runs.size() - r.failed(), r.failed());
  if (auto n = unfinished_states(r); !n.empty()) {
    std::string list;
    for (const auto& [state, count] : n) list += fmt::format("{}{} {}", list.empty() ? "" : ", ", count, state);
    out += fmt::format("  without a verdict of their own (counted as failed): {}\n", list);
  }
  out += fmt::format("  {:<28} {:>5} {:>10} {:>10} {:>10}   (simulated; nearest-rank percentiles)\n", "phase", "runs",
                     "p50", "p99", "max");
  for (const auto& s : r.stats)
    out += fmt::format("  {:<28} {:>5} {:>10} {:>10} {:>10}\n", s.name, s.runs, report::human_duration(s.p50_ns),
                       report::human_duration(s.p99_ns), report::human_duration(s.max_ns));
  size_t degraded = 0;
  for (const auto& s : r.runs)
    if (s.timeline && s.timeline->degraded) ++degraded;
  if (degraded) out += fmt::format("  {} run(s) degraded: no spare was left\n", degraded);
  for (const auto& s : r.runs) {
    if (s.passed()) continue;
    std::string state = s.state() == "failed" ? "" : " [" + s.state() + "]";
    out += fmt::format("FAIL seed {}{}: {}\n", s.seed, state, s.failures.front());
    for (size_t i = 1; i < s.failures.size(); ++i) out += fmt::format("    {}\n", s.failures[i]);
    out += fmt::format("  rerun: {}\n  log:   {}\n", shell_quote(s.argv), s.log_path);
  }
  return out;
}

json to_json(const RegressResult& r) {
  json runs = json::array();
  for (const auto& s : r.runs) {
    json j{{"seed", s.seed}, {"passed", s.passed()}, {"status", s.state()}, {"exit_code", s.exit_code}, {"wall_s", s.wall_s},
           {"failures", s.failures}, {"rerun", shell_quote(s.argv)}, {"json", s.json_path}, {"log", s.log_path}};
    if (s.timeline) j["report"] = report::to_json(*s.timeline);
    runs.push_back(j);
  }
  json stats = json::array();
  for (const auto& s : r.stats)
    stats.push_back({{"name", s.name}, {"runs", s.runs}, {"p50_ns", s.p50_ns}, {"p99_ns", s.p99_ns}, {"max_ns", s.max_ns}});
  json out{{"seeds", r.runs.size()}, {"launcher", r.launcher}, {"jobs", r.jobs}, {"wall_s", r.wall_s},
           {"passed", r.failed() == 0}, {"failed", r.failed()}, {"unfinished", unfinished_states(r)},
           {"percentile", "nearest-rank"}, {"stats", stats}, {"runs", runs}};
  if (r.launcher == "slurm") {
    out["job_id"] = r.job_id;
    out["tasks"] = r.tasks;
    out["seeds_per_task"] = r.seeds_per_task;
  }
  return out;
}

namespace {
std::string xml(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else if (c < 0x20 && c != '\n' && c != '\t') out += ' ';  // not allowed in XML 1.0
    else out += static_cast<char>(c);
  }
  return out;
}
}  // namespace

std::string junit_xml(const RegressResult& r) {
  // A seed that never reached its own verdict (cancelled, timed out, not started) is an <error>,
  // as JUnit readers count a test that could not run; one that ran and failed is a <failure>.
  size_t errors = 0;
  for (const auto& s : r.runs) errors += s.state() != "passed" && s.state() != "failed";
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites tests=\"{0}\" failures=\"{1}\" errors=\"{3}\" time=\"{2:.3f}\">\n"
                     "  <testsuite name=\"mxtb.regress\" tests=\"{0}\" failures=\"{1}\" errors=\"{3}\" time=\"{2:.3f}\">\n",
                     r.runs.size(), r.failed() - errors, r.wall_s, errors);
  for (const auto& s : r.runs) {
    out += fmt::format("    <testcase classname=\"mxtb.regress\" name=\"seed_{}\" time=\"{:.3f}\">\n", s.seed, s.wall_s);
    if (!s.passed()) {
      std::string body;
      for (const auto& f : s.failures) body += f + "\n";
      body += fmt::format("exit code {}\n", s.exit_code);
      bool error = s.state() != "failed";
      out += fmt::format("      <{0} message=\"{1}\" type=\"{2}\">{3}</{0}>\n", error ? "error" : "failure",
                         xml(s.failures.front()), error ? s.state() : "failover", xml(body));
    }
    out += fmt::format("      <system-out>rerun: {}\nlog: {}\n</system-out>\n", xml(shell_quote(s.argv)), xml(s.log_path));
    out += "    </testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace mxtb::host::regress
