// `mxtb rack`: a rack of servers emulated as one system (docs/rack.md): every server a whole board,
// the fibres between their meshes, one global time; in this process, or over MPI processes.
#include "apps/mxtb/args.h"
#include "apps/mxtb/commands.h"
#include "apps/mxtb/engine_options.h"
#include "apps/mxtb/scenario.h"

#include "host/regress/regress.h"
#include "host/regress/slurm.h"
#include "sim/emulator/ipbus_server.h"
#include "sim/rack/mpi_exchange.h"
#include "sim/rack/rack_sim.h"
#include "sim/rack/spare_ready.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include <unistd.h>

namespace mxtb::app {

using nlohmann::json;

namespace {

std::string file_digest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a: enough to tell two rack files apart
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ull;
  return fmt::format("{:016x}", h);
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw InputError(fmt::format("cannot write {}", path));
  out << text;
}

// The spare-ready plan's figures (sim/rack/spare_ready.h), null without a spare-ready tenant.
json spare_ready_json(const sim::rack::RackConfig& cfg) {
  if (!cfg.spare_ready || cfg.tenant.xpu_of_position.empty()) return nullptr;
  const sim::rack::SpareReadyPlan plan = sim::rack::plan_spare_ready(cfg);
  return {{"substitutions", plan.substitutions},
          {"clean", plan.clean},
          {"clean_first_fibres", plan.clean_first_fibres},
          {"clean_not_spare_ready", plan.clean_not_spare_ready},
          {"clean_by_server", plan.clean_by_server}};
}

// The report a person reads: one line a server, then the verdict.
// `served`: the checks compare the lanes with the bring-up's placement, which a served rack's host
// may have changed (a failover moves circuits): they are notes, not a verdict.
void print_summary(const sim::rack::RackConfig& cfg, const sim::rack::RackOutcome& out, const json& perf, const json& ready, bool served) {
  const double period_ns = 1000.0 / cfg.server.clock_mhz;
  fmt::print("# rack {}: {} x {} servers, {} fibres ({} per neighbour), window {} cycles, tenant {}x{} ({} XPUs)\n", cfg.name,
             cfg.shape.servers_x, cfg.shape.servers_y, cfg.wiring.size(), cfg.shape.fibres_per_neighbour, out.window_cycles,
             cfg.tenant.dim_x, cfg.tenant.dim_y, cfg.tenant.xpu_of_position.size());
  if (!ready.is_null())
    fmt::print("# spare-ready bring-up: {} of {} substitutions of a tenant XPU by its server's spare route with no circuit moved ({} on "
               "the first free fibres, {} routed from phase 1's states)\n",
               ready.at("clean").get<int>(), ready.at("substitutions").get<int>(), ready.at("clean_first_fibres").get<int>(),
               ready.at("clean_not_spare_ready").get<int>());
  fmt::print("# {:>6} {:>8} {:>14} {:>12} {:>10} {:>16}\n", "server", "lanes", "via fibre", "messages", "sb_errors", "all Active (us)");
  for (const std::string& text : out.server_reports) {
    json r = json::parse(text);
    int lanes = 0, active = 0, fibre = 0;
    for (const json& l : r.at("lanes")) {
      ++lanes;
      active += l.at("state") == "Active";
      fibre += !l.at("fibre").is_null();
    }
    const json& all = r.at("all_active_cycle");
    fmt::print("  {:>6} {:>8} {:>14} {:>12} {:>10} {:>16}\n", r.at("server").get<int>(), fmt::format("{}/{}", active, lanes), fibre,
               r.at("messages_delivered").get<uint64_t>(), r.at("scoreboard_errors").get<uint64_t>(),
               all.is_null() ? std::string("-") : fmt::format("{:.1f}", all.get<double>() * period_ns / 1000.0));
  }
  fmt::print("# {:.1f} simulated us on {} process(es) in {:.2f} s wall: {:.0f} rack cycles/s\n",
             perf.at("rack_cycles").get<double>() * period_ns / 1000.0, perf.at("processes").get<int>(), perf.at("wall_s").get<double>(),
             perf.at("rack_cycles_per_s").get<double>());
  for (const std::string& f : out.failures) fmt::print("{} {}\n", served ? "note:" : "FAIL", f);
  if (served && !out.failures.empty())
    fmt::print("served: {} check(s) differ from the bring-up placement (the host may have changed it: not a verdict)\n",
               out.failures.size());
  else
    fmt::print("{}\n", out.failures.empty() ? "PASS" : fmt::format("FAIL: {} check(s)", out.failures.size()));
}

// The launcher's own flags: they do not go to the rack's processes.
const std::set<std::string> kLauncherFlags{"--launcher", "--partition", "--time-limit", "--sbatch-args", "--poll-s"};

struct SlurmLaunch {
  std::string partition, time_limit;
  std::vector<std::string> sbatch_args;
  double poll_s = 2;
};

// --launcher slurm: the same rack as one Slurm job of N tasks (host/regress/slurm.h submits and
// waits). Its batch script runs MPICH's mpiexec, which starts the N processes in the job's
// allocation (hydra's Slurm bootstrap: srun), and records mpiexec's exit status once it has ended;
// this process waits for the job to leave the queue, prints its output (rank 0's report) and
// exits with that status.
// SIGINT or SIGTERM to the launcher of a served rack on Slurm: passed on to the job's processes.
std::atomic<int> g_launcher_signal{0};
extern "C" void on_launcher_signal(int sig) { g_launcher_signal = sig; }

// The job's output so far, from `offset` on, up to its last complete line; `offset` moves past it.
std::string new_lines(const std::filesystem::path& log, std::streamoff& offset, bool to_end) {
  std::ifstream in(log);
  if (!in) return "";
  in.seekg(offset);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  if (!to_end) s = s.substr(0, s.rfind('\n') == std::string::npos ? 0 : s.rfind('\n') + 1);
  offset += static_cast<std::streamoff>(s.size());
  return s;
}

// `serving`: the rack is served (--serve): the job's output is printed as it comes, so that each
// server's `listening on` line reaches the user (or the host's tool reading it) while the job runs,
// and SIGINT or SIGTERM to this process stops the job's processes with SIGINT (they agree on a
// window to stop at, write the report and exit).
int launch_on_slurm(const ArgList& argv, int processes, const std::string& out_dir, const SlurmLaunch& sl, bool serving) {
  namespace fs = std::filesystem;
  using host::regress::shell_quote;
  // Every node reads the rack file and writes below OUT by these paths, from this folder: they
  // must be on a filesystem the nodes share (as for `mxtb regress --launcher slurm`).
  const fs::path out = fs::absolute(out_dir).lexically_normal();
  std::vector<std::string> child{fs::read_symlink("/proc/self/exe").string(), "rack"};
  bool has_out = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (kLauncherFlags.count(argv[i])) {
      ++i;  // and its value
      continue;
    }
    child.push_back(argv[i]);
    if (argv[i] == "--out" && i + 1 < argv.size()) {
      child.push_back(out.string());
      ++i;
      has_out = true;
    }
  }
  if (!has_out) child.insert(child.end(), {"--out", out.string()});
  fs::create_directories(out / "slurm");
  const fs::path exit_record = out / "slurm" / "rack.exit", script = out / "slurm" / "rack.sbatch";
  fs::remove(exit_record);
  fs::remove(out / "rack.json");  // an earlier run's report must not pass for this one's
  write_file(script.string(), fmt::format(R"SH(#!/bin/bash
# Written by `mxtb rack --launcher slurm`: the rack as one job of {n} tasks. MPICH's mpiexec starts
# its processes in the job's allocation; the exit record is written only once mpiexec has ended,
# so a job cancelled or out of time leaves none.
set -u
{mpiexec}
code=$?
echo "$code" >{record}.part && mv -f {record}.part {record}
exit "$code"
)SH",
                                          fmt::arg("n", processes), fmt::arg("mpiexec", shell_quote(sim::rack::mpiexec_command(processes, child))),
                                          fmt::arg("record", shell_quote({exit_record.string()}))));
  fs::permissions(script, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                              fs::perms::others_exec);
  std::vector<std::string> sbatch{"sbatch", "--parsable", "--job-name=mxtb-rack", fmt::format("--ntasks={}", processes),
                                  "--output=" + (out / "slurm" / "rack-%j.out").string(), "--chdir=" + fs::current_path().string()};
  if (!sl.partition.empty()) sbatch.push_back("--partition=" + sl.partition);
  if (!sl.time_limit.empty()) sbatch.push_back("--time=" + sl.time_limit);
  sbatch.insert(sbatch.end(), sl.sbatch_args.begin(), sl.sbatch_args.end());
  sbatch.push_back(script.string());
  std::string job;
  try {
    job = host::regress::sbatch(sbatch, fmt::format("the rack's job of {} tasks", processes));
  } catch (const std::runtime_error& e) {
    throw InputError(e.what());
  }
  fmt::print("# submitted slurm job {} ({} tasks): {}\n", job, processes, shell_quote(sbatch));
  std::fflush(stdout);
  const fs::path log = out / "slurm" / fmt::format("rack-{}.out", job);
  std::streamoff printed = 0;
  bool cancelled = false;
  if (serving) {
    std::signal(SIGINT, on_launcher_signal);
    std::signal(SIGTERM, on_launcher_signal);
  }
  host::regress::wait_job(job, sl.poll_s, [&](const std::string&) {
    if (!serving) return;
    fmt::print("{}", new_lines(log, printed, false));
    std::fflush(stdout);
    if (g_launcher_signal && !cancelled) {
      // The job's steps (mpiexec's processes, started through srun), not the batch script: the
      // rack's processes stop on their own and mpiexec records their exit.
      const auto r = host::regress::run_capture({"scancel", "--signal=INT", job});
      fmt::print("# signal {}: scancel --signal=INT {} (exit {})\n", g_launcher_signal.load(), job, r.exit_code);
      std::fflush(stdout);
      cancelled = true;
    }
  });
  fmt::print("{}", new_lines(log, printed, true));
  std::ifstream record(exit_record);
  int code = -1;
  if (!(record >> code))
    throw InputError(fmt::format("slurm job {} ended without its exit record {}: cancelled, out of time or never started (its "
                                 "output: {})",
                                 job, exit_record.string(), log.string()));
  fmt::print("# slurm job {}: mpiexec exit {}\n", job, code);
  return code;
}

// --serve and its flags (docs/cli.md): nullopt without --serve, where its flags are refused.
std::optional<sim::rack::RackServe> serve_options(const Args& args, const sim::rack::RackConfig& cfg) {
  for (const char* flag : {"--time-mode", "--rtf", "--listen", "--ipbus-target", "--stop-after-s", "--stall-report-ms", "--job"})
    if (args.has(flag) && !args.has("--serve")) throw UsageError(fmt::format("{} applies to a served rack: add --serve", flag));
  if (!args.has("--serve")) return std::nullopt;
  sim::rack::RackServe sv;
  sv.time_mode = *sim::time_mode_from_string(args.choice("--time-mode", "lockstep", {"lockstep", "paced", "free"}));
  sv.rtf = args.real("--rtf", 1.0);
  if (!(sv.rtf > 0)) throw UsageError(fmt::format("--rtf must be above 0, got {}", sv.rtf));
  if (args.has("--rtf") && sv.time_mode != emu::TimeMode::Paced) throw UsageError("--rtf only applies to --time-mode paced");
  const std::string listen = args.str("--listen", "127.0.0.1:0");
  try {
    auto [host, port] = sim::parse_listen_address(listen);
    if (port != 0 && port + cfg.shape.servers() - 1 > 65535)
      throw std::invalid_argument(fmt::format("--listen {}: servers 0-{} would listen on ports {}-{}, past 65535", listen,
                                              cfg.shape.servers() - 1, port, port + cfg.shape.servers() - 1));
    sv.host = host;
    sv.first_port = port;
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  sv.ipbus_target = *sim::ipbus_target_from_string(resolve_ipbus_target(args, std::nullopt));
  sv.fst_dir = args.str("--fst-dir", "");
  sv.job = args.has("--job");
  if (sv.job && cfg.tenant.xpu_of_position.empty()) throw UsageError("--job needs a rack with a tenant: this rack file places none");
  sv.stop_after_wall_s = args.real("--stop-after-s", 0, 0, 1e9);
  sv.stall_report_ms = static_cast<uint32_t>(args.u64("--stall-report-ms", sv.stall_report_ms, 0, 3'600'000));
  if (sv.stall_report_ms > 0 && sv.stall_report_ms < 4)
    throw UsageError(fmt::format("--stall-report-ms must be 0 (off) or at least 4, got {}", sv.stall_report_ms));
  return sv;
}

// --launcher slurm's flags (as `mxtb regress --launcher slurm`'s).
SlurmLaunch slurm_options(const Args& args) {
  SlurmLaunch sl;
  sl.partition = args.str("--partition", "");
  if (args.has("--partition") && sl.partition.empty()) throw UsageError("--partition is empty");
  sl.time_limit = args.str("--time-limit", "");
  if (args.has("--time-limit") && !host::regress::valid_time_limit(sl.time_limit))
    throw UsageError(fmt::format("--time-limit '{}' is not sbatch's --time syntax (M, M:S, H:M:S, D-H, D-H:M, D-H:M:S)", sl.time_limit));
  std::istringstream words(args.str("--sbatch-args", ""));
  for (std::string w; words >> w;) sl.sbatch_args.push_back(w);
  sl.poll_s = args.real("--poll-s", 2.0, 0.1, 3600);
  return sl;
}

// Rank 0's part: OUT/rack.json, OUT/rack-perf.json and the summary.
void report_rack(const sim::rack::RackConfig& cfg, const sim::rack::RackOutcome& out, int processes, const std::string& out_dir,
                 bool served) {
  json servers = json::array();
  for (const std::string& r : out.server_reports) servers.push_back(json::parse(r));
  const json ready = spare_ready_json(cfg);
  json report = {{"rack", to_json(cfg)},       {"spare_ready", ready},          {"servers", servers},
                 {"failures", out.failures}, {"passed", out.failures.empty()}, {"served", served}};
  write_file(out_dir + "/rack.json", report.dump(2) + "\n");
  json per_process = json::array();
  double wall = 0;
  for (const std::string& p : out.perf) {
    per_process.push_back(json::parse(p));
    wall = std::max(wall, per_process.back().at("wall_s").get<double>());
  }
  const uint64_t cycles = per_process.empty() ? 0 : per_process[0].at("cycles").get<uint64_t>();
  json perf = {{"processes", processes},
               {"wall_s", wall},
               {"rack_cycles", cycles},
               {"rack_cycles_per_s", wall > 0 ? static_cast<double>(cycles) / wall : 0.0},
               {"server_cycles_per_s", wall > 0 ? static_cast<double>(cycles) * cfg.shape.servers() / wall : 0.0},
               {"window_cycles", out.window_cycles},
               {"per_process", per_process}};
  write_file(out_dir + "/rack-perf.json", perf.dump(2) + "\n");
  print_summary(cfg, out, perf, ready, served);
  fmt::print("# wrote {}/rack.json, {}/rack-perf.json, {}/events/serverN.events.jsonl\n", out_dir, out_dir, out_dir);
}

}  // namespace

int cmd_rack(const ArgList& argv) {
  Args args(argv, ArgSpec{{"--scenario", "--out", "--seed", "--calibration", "--processes", "--peer-timeout-s", "--window", "--time-mode",
                           "--rtf", "--listen", "--ipbus-target", "--fst-dir", "--stop-after-s", "--stall-report-ms", "--launcher",
                           "--partition", "--time-limit", "--sbatch-args", "--poll-s", kEngineFlags[0],
                           kEngineFlags[1]},
                          {"--progress", "--serve", "--job"},
                          {},
                          false});
  if (!args.has("--scenario")) throw UsageError("--scenario FILE is required (a rack file, docs/rack.md)");
  const std::string path = args.str("--scenario");
  const std::string calibration = args.str("--calibration", source_root() + "/traces/calibration/mesh32.json");
  bool failover_scenario = false;
  sim::rack::RackConfig cfg = load_rack_scenario(path, calibration, &failover_scenario);
  if (failover_scenario && !sim::rack::launched_by_mpiexec())
    fmt::print("# {}: a single server's failover scenario, run as a rack of one: its server as mxtb sim runs it, bare (the "
               "host places the tenant); its failures, spares, job and state restore are the host's (mxtb demo)\n",
               path);
  cfg.seed = args.u64("--seed", cfg.seed);
  cfg.window = static_cast<uint32_t>(args.u64("--window", 0, 1, 1'000'000));
  try {
    sim::rack::check_rack(cfg);
  } catch (const sim::rack::RackError& e) {
    throw UsageError(fmt::format("--window {}: {}", cfg.window, e.what()));
  }
  apply_engine_options(args, cfg.server);
  if (cfg.server.threads != 1)
    throw UsageError(fmt::format("--threads {}: a rack runs each server on one thread (it runs servers side by side instead)",
                                 cfg.server.threads));
  const int processes = static_cast<int>(args.u64("--processes", 1, 1, 1024));
  if (processes > cfg.shape.servers())
    throw UsageError(fmt::format("--processes {}: the rack has {} servers, and each process holds at least one", processes,
                                 cfg.shape.servers()));
  const double peer_timeout_s = args.real("--peer-timeout-s", 30.0, 0.5, 3600.0);
  const std::optional<sim::rack::RackServe> serve = serve_options(args, cfg);
  if (serve && serve->job && processes > 1)
    throw UsageError(fmt::format("--job with --processes {}: the tenant's job runs in one process (one job holds every rank)", processes));
  const std::string out_dir = args.str("--out", "out/rack");
  const bool child = sim::rack::launched_by_mpiexec();
  const std::string launcher = args.choice("--launcher", "local", {"local", "slurm"});
  if (launcher == "local")
    for (const char* f : {"--partition", "--time-limit", "--sbatch-args", "--poll-s"})
      if (args.has(f)) throw UsageError(fmt::format("{} is for --launcher slurm", f));
  if (launcher == "slurm" && !child) {
    return launch_on_slurm(argv, processes, out_dir, slurm_options(args), serve.has_value());
  }
  if (processes > 1 && !child) {
    // This process becomes the launcher: the same command as `processes` MPI processes.
    // This program's own path: "/proc/self/exe" would name the launcher in the launcher.
    std::vector<std::string> child_argv{std::filesystem::read_symlink("/proc/self/exe").string(), "rack"};
    child_argv.insert(child_argv.end(), argv.begin(), argv.end());
    std::vector<std::string> cmd = sim::rack::mpiexec_command(processes, child_argv);
    std::vector<char*> c_argv;
    for (std::string& a : cmd) c_argv.push_back(a.data());
    c_argv.push_back(nullptr);
    std::fflush(stdout);
    execv(c_argv[0], c_argv.data());
    throw InputError(fmt::format("cannot start {}: {}", cmd[0], std::strerror(errno)));
  }
  std::filesystem::create_directories(out_dir + "/events");
  const std::string fst_dir = args.str("--fst-dir", "");
  if (!fst_dir.empty()) std::filesystem::create_directories(fst_dir);

  std::unique_ptr<sim::rack::WindowExchange> ex =
      child ? sim::rack::make_mpi_exchange(peer_timeout_s) : sim::rack::local_exchange();
  if (ex->size() != processes)
    throw InputError(fmt::format("started as {} MPI processes, but --processes says {}", ex->size(), processes));
  sim::rack::RackRunOptions opt;
  opt.config_source = path;
  opt.config_digest = file_digest(path);
  opt.events_dir = out_dir + "/events";
  opt.progress = args.has("--progress");
  opt.serve = serve;
  if (!serve) opt.waves_dir = fst_dir;
  sim::rack::RackOutcome out = sim::rack::run_rack(cfg, *ex, opt);
  if (ex->rank() != 0) return 0;  // rank 0 reports for the rack (its exit code is the launcher's)

  report_rack(cfg, out, processes, out_dir, serve.has_value());
  // Served, the host may have failed XPUs and moved circuits: the checks say where the rack
  // stands, and the exit status is the serving's, as `mxtb sim`'s.
  if (serve) return 0;
  return out.failures.empty() ? 0 : 1;
}

}  // namespace mxtb::app
