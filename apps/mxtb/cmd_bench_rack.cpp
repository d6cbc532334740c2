// `mxtb bench rack`: what the rack's synchronization costs (docs/rack.md, "What synchronization
// costs"). Each case is a real `mxtb rack` run of a generated rack file, one after another on this
// machine, so that the ratios are side by side in one run: a server alone against the same server
// in a rack of 2 and 4 in one process, and the rack over 1, 2 and 4 processes. The cases run in
// rounds (every case once a round, --repeat rounds): a ratio is taken within each round and the
// median over rounds reported with its range, as a run of about a second swings by tens of per
// cent on a shared machine. From the measured cost of a window's exchange it projects 16 servers
// on 16 cores and processes on hosts over TCP.
#include "apps/mxtb/args.h"
#include "apps/mxtb/commands.h"

#include "sim/rack/rack_config.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace mxtb::app {

using nlohmann::json;

namespace {

struct RackCase {
  std::string name;
  int sx, sy, processes;
};

struct CaseFigures {
  RackCase c;
  json perf;
  double wall_s = 0, us_per_server_cycle = 0, exchange_us_per_window = 0, rack_cycles_per_s = 0;
  uint64_t windows = 0;
  bool passed = false;
};

int run_child(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> a;
  std::vector<std::string> copy = argv;
  for (std::string& s : copy) a.push_back(s.data());
  a.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, a.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw InputError(fmt::format("cannot start mxtb rack: {}", std::strerror(rc)));
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

CaseFigures run_case(const RackCase& c, const std::string& dir, double run_us, const std::string& settle, uint64_t seed, int round) {
  const std::string base = fmt::format("{}/{}/round-{}", dir, c.name, round);
  std::filesystem::create_directories(base);
  json rack = {{"name", c.name},
               {"seed", seed},
               {"settle", settle},
               {"rack", {{"servers_x", c.sx}, {"servers_y", c.sy}}},
               {"run_us", run_us}};
  std::ofstream(base + "/rack-file.json") << rack.dump(2) << "\n";
  fmt::print(stderr, "bench rack: round {}: {} ({} x {} servers, {} process(es)) ...\n", round + 1, c.name, c.sx, c.sy, c.processes);
  const int rc = run_child({"mxtb", "rack", "--scenario", base + "/rack-file.json", "--out", base, "--processes", std::to_string(c.processes)},
                           base + "/log.txt");
  if (rc != 0) throw InputError(fmt::format("bench rack: case {} failed (exit {}); see {}/log.txt", c.name, rc, base));
  CaseFigures f;
  f.c = c;
  std::ifstream in(base + "/rack-perf.json");
  f.perf = json::parse(in);
  f.passed = json::parse(std::ifstream(base + "/rack.json")).at("passed").get<bool>();
  f.wall_s = f.perf.at("wall_s").get<double>();
  const double cycles = f.perf.at("rack_cycles").get<double>();
  f.rack_cycles_per_s = f.perf.at("rack_cycles_per_s").get<double>();
  f.us_per_server_cycle = f.wall_s * 1e6 / (cycles * c.sx * c.sy);
  double exchange = 0;
  for (const json& p : f.perf.at("per_process")) {
    exchange = std::max(exchange, p.at("exchange_s").get<double>());
    f.windows = p.at("windows").get<uint64_t>();
  }
  f.exchange_us_per_window = f.windows ? exchange * 1e6 / static_cast<double>(f.windows) : 0;
  return f;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A ratio over rounds: its median and range.
struct Ratio {
  double median = 0, lo = 0, hi = 0;
  json to_json() const { return {{"median", median}, {"min", lo}, {"max", hi}}; }
  std::string text() const { return fmt::format("{:.2f}x ({:.2f}-{:.2f})", median, lo, hi); }
};
Ratio ratio_over_rounds(const std::vector<double>& per_round) {
  return {median(per_round), *std::min_element(per_round.begin(), per_round.end()),
          *std::max_element(per_round.begin(), per_round.end())};
}

// One line a case (its median round), as the table in docs/rack.md; the same as JSON.
json print_cases(const std::vector<CaseFigures>& figs, unsigned cores) {
  fmt::print("# {:>12} {:>8} {:>9} {:>8} {:>14} {:>16} {:>10} {:>12}\n", "case", "servers", "processes", "wall_s", "rack_cycles/s",
             "us/server-cycle", "windows", "exchange_us");
  json cases_json = json::array();
  for (const auto& f : figs) {
    fmt::print("  {:>12} {:>8} {:>9} {:>8.2f} {:>14.0f} {:>16.2f} {:>10} {:>12.2f}{}\n", f.c.name, f.c.sx * f.c.sy, f.c.processes, f.wall_s,
               f.rack_cycles_per_s, f.us_per_server_cycle, f.windows, f.exchange_us_per_window,
               static_cast<unsigned>(f.c.processes) > cores ? "  (more processes than cores)" : "");
    cases_json.push_back({{"case", f.c.name},
                          {"servers", f.c.sx * f.c.sy},
                          {"processes", f.c.processes},
                          {"passed", f.passed},
                          {"wall_s", f.wall_s},
                          {"rack_cycles_per_s", f.rack_cycles_per_s},
                          {"us_per_server_cycle", f.us_per_server_cycle},
                          {"windows", f.windows},
                          {"exchange_us_per_window", f.exchange_us_per_window},
                          {"perf", f.perf}});
  }
  return cases_json;
}

}  // namespace

int cmd_bench_rack(const ArgList& argv) {
  Args args(argv, {"--out", "--json", "--run-us", "--settle", "--seed", "--tcp-us", "--repeat"}, {});
  const std::string out = args.str("--out", "out/bench-rack");
  const std::string json_path = args.str("--json", out + "/bench-rack.json");
  const double run_us = args.real("--run-us", 150, 10, 1e5);
  const std::string settle = args.choice("--settle", "electro_optic", {"electro_optic", "thermo_optic", "mems"});
  const uint64_t seed = args.u64("--seed", 1);
  // A window's exchange between hosts over TCP: not measurable here (one host). The assumption:
  // kernel TCP one-way latency on a datacenter Ethernet link, tens of microseconds.
  const double tcp_us = args.real("--tcp-us", 30, 0.1, 1e6);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());

  const std::vector<RackCase> cases = {{"alone-1x1", 1, 1, 1}, {"rack-2x1", 2, 1, 1}, {"rack-2x2", 2, 2, 1},
                                       {"rack-2x1-p2", 2, 1, 2}, {"rack-2x2-p2", 2, 2, 2}, {"rack-2x2-p4", 2, 2, 4}};
  const int rounds = static_cast<int>(args.u64("--repeat", 5, 1, 100));
  std::vector<std::vector<CaseFigures>> by_round(static_cast<size_t>(rounds));
  for (int r = 0; r < rounds; ++r)
    for (const RackCase& c : cases) by_round[static_cast<size_t>(r)].push_back(run_case(c, out, run_us, settle, seed, r));
  auto in_round = [&](int r, const std::string& n) -> const CaseFigures& {
    for (const auto& f : by_round[static_cast<size_t>(r)])
      if (f.c.name == n) return f;
    throw std::logic_error(n);
  };
  // Each case's figures as printed: the round whose us/server-cycle is the median (the lower
  // middle one for an even count of rounds).
  std::vector<CaseFigures> figs;
  for (const RackCase& c : cases) {
    std::vector<CaseFigures> runs;
    for (int r = 0; r < rounds; ++r) runs.push_back(in_round(r, c.name));
    std::sort(runs.begin(), runs.end(), [](const CaseFigures& a, const CaseFigures& b) { return a.us_per_server_cycle < b.us_per_server_cycle; });
    figs.push_back(runs[(runs.size() - 1) / 2]);
  }
  auto find = [&](const std::string& n) -> const CaseFigures& {
    for (const auto& f : figs)
      if (f.c.name == n) return f;
    throw std::logic_error(n);
  };
  auto per_round = [&](const std::string& num, const std::string& den, bool cost) {
    std::vector<double> v;
    for (int r = 0; r < rounds; ++r) {
      const CaseFigures &a = in_round(r, num), &b = in_round(r, den);
      v.push_back(cost ? a.us_per_server_cycle / b.us_per_server_cycle : a.rack_cycles_per_s / b.rack_cycles_per_s);
    }
    return ratio_over_rounds(v);
  };

  fmt::print("# bench rack: {} us of {} racks (electro-optic bring-up, then traffic on every lane), {} cores, {} round(s); "
             "each case's median round\n",
             run_us, settle, cores, rounds);
  const json cases_json = print_cases(figs, cores);
  const CaseFigures& alone = find("alone-1x1");
  const Ratio in_rack_2 = per_round("rack-2x1", "alone-1x1", true), in_rack_4 = per_round("rack-2x2", "alone-1x1", true);
  const Ratio speedup_2x1 = per_round("rack-2x1-p2", "rack-2x1", false), speedup_2x2 = per_round("rack-2x2-p2", "rack-2x2", false);
  // The projection: one server a process and a core, each window its W cycles of one server plus
  // one exchange. The exchange's cost is the 2-process run's (neighbours on one host, MPICH's shared
  // memory); over TCP the assumed latency.
  const uint32_t W = find("rack-2x1").perf.at("window_cycles").get<uint32_t>();
  const double t_cycle_us = alone.us_per_server_cycle;
  const double x_us = find("rack-2x1-p2").exchange_us_per_window;
  const double eff_16 = W * t_cycle_us / (W * t_cycle_us + x_us);
  const double period_ns = 1000.0 / 156.25;
  const double w_tcp = std::ceil(tcp_us / (0.15 * t_cycle_us));  // cycles for the exchange to cost at most 15 %
  const double metres_tcp = w_tcp * period_ns / sim::rack::kFibreNsPerMetre;
  fmt::print("# a server in a rack against alone, one process, median of the rounds' ratios (range): {} (2 servers), {} (4 servers); "
             "goal <= 1.15\n",
             in_rack_2.text(), in_rack_4.text());
  fmt::print("# 2 processes against 1, rack cycles/s, median (range): {} (2 servers), {} (4 servers); goal >= 1.6 on 2 free cores\n",
             speedup_2x1.text(), speedup_2x2.text());
  fmt::print("# projected, 16 servers on 16 cores (a window of {} cycles = {:.1f} us of one server, exchange {:.1f} us): "
             "{:.0f} % of a server alone, {:.0f} rack cycles/s\n",
             W, W * t_cycle_us, x_us, 100 * eff_16, 1e6 * eff_16 / t_cycle_us);
  fmt::print("# projected, hosts over TCP ({:.0f} us an exchange, assumed): a window of {:.0f} cycles keeps it under 15 %, "
             "a fibre of {:.0f} m\n",
             tcp_us, w_tcp, metres_tcp);
  json result = {{"bench", "rack"},
                 {"run_us", run_us},
                 {"settle", settle},
                 {"cores", cores},
                 {"cases", cases_json},
                 {"rounds", rounds},
                 {"in_rack_cost_ratio", {{"servers_2", in_rack_2.to_json()}, {"servers_4", in_rack_4.to_json()}, {"goal_max", 1.15}}},
                 {"processes_2_speedup", {{"servers_2", speedup_2x1.to_json()}, {"servers_4", speedup_2x2.to_json()}, {"goal_min", 1.6}}},
                 {"projection_16_servers",
                  {{"window_cycles", W}, {"us_per_server_cycle", t_cycle_us}, {"exchange_us", x_us}, {"efficiency", eff_16},
                   {"rack_cycles_per_s", 1e6 * eff_16 / t_cycle_us}}},
                 {"projection_tcp", {{"exchange_us_assumed", tcp_us}, {"window_cycles", w_tcp}, {"fibre_metres", metres_tcp}}}};
  std::filesystem::create_directories(std::filesystem::path(json_path).parent_path());
  std::ofstream(json_path) << result.dump(2) << "\n";
  fmt::print("# wrote {}\n", json_path);
  for (const auto& round : by_round)
    for (const auto& f : round)
      if (!f.passed) {
        fmt::print("FAIL {}: the rack's checks failed (see {}/{}/round-N/rack.json)\n", f.c.name, out, f.c.name);
        return 1;
      }
  return 0;
}

}  // namespace mxtb::app
