// `mxtb cover`: the RTL's coverage (docs/coverage.md). Builds the coverage build (a CMake build
// directory of its own, configured with -DMXTB_COVERAGE=ON), runs the directed RTL testbenches and
// N regression seeds in it, each process writing its models' counters under OUT/dat, merges them
// with verilator_coverage, writes lcov data and an HTML report, and prints the summary.
#include "apps/mxtb/args.h"
#include "apps/mxtb/commands.h"
#include "apps/mxtb/coverage_report.h"

#include "host/regress/regress.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace mxtb::app {

namespace fs = std::filesystem;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("cannot read {}", path));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const std::string& path, const std::string& text) {
  auto dir = fs::path(path).parent_path();
  if (!dir.empty()) fs::create_directories(dir);
  std::ofstream out(path);
  if (!out || !(out << text)) throw std::runtime_error(fmt::format("cannot write {}", path));
}

// Runs argv through the shell with its output to `log` (appended); returns the exit status.
int run(const std::vector<std::string>& argv, const std::string& log) {
  std::string cmd = host::regress::shell_quote(argv) + " >>" + host::regress::shell_quote({log}) + " 2>&1";
  int rc = std::system(cmd.c_str());
  if (rc == -1) return 127;
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

bool have_program(const std::string& name) {
  return std::system(fmt::format("command -v {} >/dev/null 2>&1", name).c_str()) == 0;
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Configures the coverage build in `build` if it has none (refusing one without coverage), then
// builds the testbenches and, for regression seeds, mxtb.
void build_coverage(const std::string& root, const std::string& build, const std::vector<std::string>& tests, bool with_mxtb,
                    const std::string& jobs_text, const std::string& log) {
  if (!fs::exists(build + "/CMakeCache.txt")) {
    fmt::print("mxtb cover: configuring the coverage build in {}\n", build);
    std::fflush(stdout);
    if (run({"cmake", "-S", root, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DMXTB_COVERAGE=ON",
             "-DMXTB_REFERENCE_MODELS=OFF"},
            log) != 0)
      throw InputError(fmt::format("configuring {} failed: {}", build, log));
  }
  if (read_text(build + "/CMakeCache.txt").find("MXTB_COVERAGE:BOOL=ON") == std::string::npos)
    throw UsageError(fmt::format("--build {} is no coverage build (configure it with -DMXTB_COVERAGE=ON)", build));
  std::vector<std::string> cmd = {"cmake", "--build", build, "-j", jobs_text, "--target"};
  for (const auto& t : tests) cmd.push_back(fs::path(t).filename().string());
  if (with_mxtb) cmd.push_back("mxtb");
  fmt::print("mxtb cover: building {}\n", host::regress::shell_quote(cmd));
  std::fflush(stdout);
  if (run(cmd, log) != 0) throw InputError(fmt::format("building the coverage build failed: {}", log));
}

struct MergedCoverage {
  size_t files = 0;   // coverage files merged
  std::string merged;  // merged.dat's text
  std::string html;    // the HTML report's index, or empty
};

// Merges every counter file under dat_dir into out/merged.dat and writes the lcov data (line points
// only) and, with genhtml, the HTML report.
MergedCoverage merge_coverage(const std::string& out, const std::string& dat_dir, const std::string& build,
                              const std::string& log, bool with_html) {
  std::vector<std::string> merge = {"verilator_coverage", "--write", out + "/merged.dat"};
  for (const auto& e : fs::directory_iterator(dat_dir))
    if (e.path().extension() == ".dat") merge.push_back(e.path().string());
  MergedCoverage m;
  m.files = merge.size() - 3;
  const size_t files = m.files;
  if (files == 0)
    throw InputError(fmt::format("no coverage data under {}: is {} a coverage build (cmake -DMXTB_COVERAGE=ON)?", dat_dir, build));
  if (run(merge, log) != 0) throw InputError(fmt::format("verilator_coverage could not merge {} files: {}", files, log));
  m.merged = read_text(out + "/merged.dat");
  write_text(out + "/lines.dat", coverage::line_points_only(m.merged));
  if (run({"verilator_coverage", "--write-info", out + "/coverage.info", out + "/lines.dat"}, log) != 0)
    throw InputError(fmt::format("verilator_coverage --write-info failed: {}", log));
  if (with_html) {
    if (have_program("genhtml")) {
      if (run({"genhtml", "--quiet", "--output-directory", out + "/html", out + "/coverage.info"}, log) != 0)
        throw InputError(fmt::format("genhtml failed: {}", log));
      m.html = out + "/html/index.html";
    } else {
      fmt::print("  no HTML report: genhtml not found (Debian package lcov)\n");
    }
  }
  return m;
}

// The goals are reported, not enforced: coverage closure is reviewed, not a pass/fail gate.
nlohmann::json report_goals(const coverage::Summary& sum) {
  int open_covers = 0;
  for (const auto& u : sum.unhit_covers) open_covers += u.waived.empty();
  nlohmann::json goals;
  goals["every_cover_hit_or_waived"] = open_covers == 0;
  fmt::print("  goal: every COVER point hit or waived: {}\n",
             open_covers == 0 ? "met" : fmt::format("not met, {} open", open_covers));
  for (const char* dir : {"rtl/ocs", "rtl/link"}) {
    auto it = sum.dir_lines.find(dir);
    double pct = it == sum.dir_lines.end() ? 0 : it->second.pct();
    goals[fmt::format("line_95_{}", fs::path(dir).filename().string())] = pct >= 95.0;
    fmt::print("  goal: line coverage of {} >= 95%: {:.1f}% {}\n", dir, pct, pct >= 95.0 ? "met" : "not met");
  }
  return goals;
}

// Runs every testbench and, with seeds, the failover regression, each into its own log under out;
// returns how many failed, with each run in report["runs"].
int run_all(const std::string& build, const std::vector<std::string>& tests, uint64_t seeds, uint64_t first_seed, uint64_t jobs,
            const std::string& jobs_text, const std::string& out, nlohmann::json& report) {
  int failures = 0;
  for (const auto& t : tests) {
    std::string name = fs::path(t).filename().string();
    std::string test_log = out + "/" + name + ".log";
    write_text(test_log, "");
    auto t1 = std::chrono::steady_clock::now();
    int rc = run({(fs::path(build) / t).string()}, test_log);
    double s = since(t1);
    fmt::print("  {:<28} {} in {:.1f} s ({})\n", name, rc == 0 ? "passed" : fmt::format("FAILED (exit {})", rc), s, test_log);
    std::fflush(stdout);
    failures += rc != 0;
    report["runs"].push_back({{"name", name}, {"exit", rc}, {"seconds", s}, {"log", test_log}});
  }
  if (seeds > 0) {
    std::vector<std::string> cmd = {build + "/mxtb", "regress", "--seeds", std::to_string(seeds), "--first-seed",
                                    std::to_string(first_seed), "--out", out + "/regress", "--quiet"};
    if (jobs) cmd.insert(cmd.end(), {"--jobs", jobs_text});
    std::string regress_log = out + "/regress.log";
    write_text(regress_log, "");
    auto t1 = std::chrono::steady_clock::now();
    int rc = run(cmd, regress_log);
    double s = since(t1);
    fmt::print("  {:<28} {} in {:.1f} s ({})\n", fmt::format("regress, {} seeds", seeds),
               rc == 0 ? "passed" : fmt::format("FAILED (exit {})", rc), s, regress_log);
    failures += rc != 0;
    report["runs"].push_back({{"name", "regress"}, {"seeds", seeds}, {"first_seed", first_seed}, {"exit", rc},
                              {"seconds", s}, {"log", regress_log}});
  }
  return failures;
}

}  // namespace

int cmd_cover(const ArgList& argv) {
  Args args(argv, ArgSpec{{"--build", "--seeds", "--jobs", "--first-seed", "--waivers", "--out", "--json", "--min-line"},
                          {"--no-build", "--no-html", "--keep"},
                          {"--tests"},
                          false});
  std::string root = source_root();
  std::string build = fs::absolute(args.str("--build", root + "/build-cover")).lexically_normal().string();
  uint64_t seeds = args.u64("--seeds", 50, 0, 100000);
  uint64_t jobs = args.u64("--jobs", 0, 0, 256);
  uint64_t first_seed = args.u64("--first-seed", 1);
  double min_line = args.real("--min-line", 0, 0, 100);
  std::string out = fs::absolute(args.str("--out", "out/cover")).lexically_normal().string();
  std::string json_path = args.str("--json", out + "/cover.json");
  bool default_waivers = !args.has("--waivers");
  std::string waiver_path = args.str("--waivers", root + "/rtl/coverage_waivers.txt");
  std::vector<std::string> tests = args.list("--tests");
  if (tests.empty()) tests = {"testbench/rtl/rtl_tests", "testbench/rtl/rtl_ocs_tests"};
  if (!default_waivers && !fs::exists(waiver_path)) throw UsageError(fmt::format("--waivers {}: no such file", waiver_path));
  // Read first: a bad waiver file should not cost a whole run.
  std::vector<coverage::Waiver> waivers;
  if (fs::exists(waiver_path)) waivers = coverage::parse_waivers(read_text(waiver_path), waiver_path);
  for (const char* tool : {"verilator_coverage"})
    if (!have_program(tool)) throw InputError(fmt::format("{} not found (Debian package verilator)", tool));

  if (args.has("--no-build"))
    for (const auto& t : tests)
      if (!fs::exists(fs::path(build) / t)) throw UsageError(fmt::format("--tests: {} is not built in {}", t, build));

  fs::create_directories(out);
  std::string log = out + "/cover.log";
  write_text(log, "");
  auto t0 = std::chrono::steady_clock::now();
  std::string jobs_text = std::to_string(jobs ? jobs : 2);

  if (!args.has("--no-build")) build_coverage(root, build, tests, seeds > 0, jobs_text, log);
  for (const auto& t : tests)
    if (!fs::exists(fs::path(build) / t)) throw UsageError(fmt::format("--tests: {} is not built in {}", t, build));
  if (seeds > 0 && !fs::exists(build + "/mxtb")) throw UsageError(fmt::format("--seeds: {}/mxtb is not built", build));

  std::string dat_dir = out + "/dat";
  // --keep: the files of earlier runs stay, so runs accumulate (more seeds with --first-seed, or
  // the testbenches again after new tests).
  if (!args.has("--keep")) fs::remove_all(dat_dir);
  fs::create_directories(dat_dir);
  setenv("MXTB_COVERAGE_DIR", dat_dir.c_str(), 1);

  nlohmann::json report;
  report["build"] = build;
  const int failures = run_all(build, tests, seeds, first_seed, jobs, jobs_text, out, report);
  unsetenv("MXTB_COVERAGE_DIR");

  const MergedCoverage m = merge_coverage(out, dat_dir, build, log, !args.has("--no-html"));
  const size_t files = m.files;
  const std::string& merged = m.merged;
  const std::string& html = m.html;

  coverage::Summary sum = coverage::summarize(coverage::parse_dat(merged, out + "/merged.dat"), waivers, root);

  fmt::print("mxtb cover: {} coverage files merged into {}\n{}", files, out + "/merged.dat", coverage::format_summary(sum));
  nlohmann::json goals = report_goals(sum);
  coverage::Tally all;
  for (const auto& [dir, t] : sum.dir_lines) {
    all.hit += t.hit;
    all.total += t.total;
  }
  report["summary"] = coverage::to_json(sum);
  report["goals"] = goals;
  report["files_merged"] = files;
  report["kept_earlier_runs"] = args.has("--keep");
  report["merged"] = out + "/merged.dat";
  report["lcov"] = out + "/coverage.info";
  report["html"] = html.empty() ? nlohmann::json(nullptr) : nlohmann::json(html);
  report["waivers"] = fs::exists(waiver_path) ? nlohmann::json(waiver_path) : nlohmann::json(nullptr);
  report["line_pct"] = all.pct();
  report["seconds"] = since(t0);
  write_text(json_path, report.dump(2) + "\n");
  fmt::print("  wrote {}, {}{}\n", json_path, out + "/coverage.info", html.empty() ? "" : " and " + html);

  if (failures) {
    fmt::print("FAIL: {} run(s) failed; the coverage above counts them up to where they stopped\n", failures);
    return 1;
  }
  if (all.pct() < min_line) {
    fmt::print("FAIL: line coverage {:.1f}% is below --min-line {}\n", all.pct(), min_line);
    return 1;
  }
  fmt::print("PASS\n");
  return 0;
}

}  // namespace mxtb::app
