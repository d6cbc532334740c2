#include "host/regress/regress.h"
#include "host/regress/slurm.h"
#include "host/report/report.h"
#include "testbench/host/report/report_samples.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace mxtb::host::regress;
using namespace mxtb::host::report;
using nlohmann::json;
using report_samples::count;
using report_samples::sample;

TEST_CASE("regress: nearest-rank percentiles") {
  std::vector<double> v{15, 20, 35, 40, 50};
  CHECK(percentile_nearest_rank(v, 0) == 15);
  CHECK(percentile_nearest_rank(v, 30) == 20);   // ceil(1.5) = 2
  CHECK(percentile_nearest_rank(v, 40) == 20);   // ceil(2.0) = 2
  CHECK(percentile_nearest_rank(v, 50) == 35);
  CHECK(percentile_nearest_rank(v, 99) == 50);
  CHECK(percentile_nearest_rank(v, 100) == 50);
  std::vector<double> hundred;
  for (int i = 100; i >= 1; --i) hundred.push_back(i);
  CHECK(percentile_nearest_rank(hundred, 99) == 99);
  CHECK(percentile_nearest_rank(hundred, 50) == 50);
  CHECK(percentile_nearest_rank({7}, 99) == 7);
  CHECK_THROWS_AS(percentile_nearest_rank({}, 50), std::invalid_argument);
  CHECK_THROWS_AS(percentile_nearest_rank({1}, 101), std::invalid_argument);
}

TEST_CASE("regress: summary per phase, then hardware and total") {
  Timeline a = sample(), b = sample();
  b.phases[3].end_ns += 10'000;  // settle 60 us instead of 50
  for (size_t i = 4; i < b.phases.size(); ++i) {
    b.phases[i].start_ns += 10'000;
    b.phases[i].end_ns += 10'000;
  }
  auto st = summarize({a, b});
  REQUIRE(st.size() == 10);
  CHECK(st[3].name == "settle");
  CHECK(st[3].runs == 2);
  CHECK(st[3].p50_ns == doctest::Approx(50'000));
  CHECK(st[3].max_ns == doctest::Approx(60'000));
  CHECK(st[7].name == "hardware");
  CHECK(st[8].name == "total");
  CHECK(st[9].name == "swap_relaunch");  // the path with no state to restore: the prototype's comparison
  CHECK(st[9].max_ns == doctest::Approx(swap_relaunch_ns(b)));
  CHECK(st[9].max_ns == doctest::Approx(b.total_ns - 171.8e6));
}

TEST_CASE("regress: the child command template, quoting, and what a child's JSON says") {
  auto argv = child_argv({"mxtb", "demo", "--scenario-seed", "{seed}", "--json", "{json}", "x{seed}y"}, 17, "out/s 17.json");
  CHECK(argv == std::vector<std::string>{"mxtb", "demo", "--scenario-seed", "17", "--json", "out/s 17.json", "x17y"});
  CHECK(shell_quote(argv) == "mxtb demo --scenario-seed 17 --json 'out/s 17.json' x17y");
  CHECK(shell_quote({"a'b"}) == "'a'\\''b'");

  auto dir = std::filesystem::temp_directory_path() / "mxtb-regress-unit";
  std::filesystem::create_directories(dir);
  std::string path = (dir / "child.json").string();
  std::remove(path.c_str());
  SeedResult none = evaluate_child(5, {"x"}, 1, path);
  REQUIRE(none.failures.size() == 1);
  CHECK(none.failures[0].find("wrote no JSON") == 0);

  json good{{"failures", json::array()}, {"report", to_json(sample())}};
  std::ofstream(path) << good.dump();
  SeedResult ok = evaluate_child(5, {"x"}, 0, path);
  CHECK(ok.passed());
  REQUIRE(ok.timeline);
  CHECK(ok.timeline->phases.size() == 7);

  SeedResult crashed = evaluate_child(5, {"x"}, -11, path);
  CHECK(crashed.failures == std::vector<std::string>{"killed by signal 11"});

  Timeline broken = sample();
  broken.phases[2].start_ns += 500;
  json bad{{"failures", {"3 scoreboard errors on living XPUs"}}, {"report", to_json(broken)}};
  std::ofstream(path) << bad.dump();
  SeedResult b = evaluate_child(5, {"x"}, 1, path);
  CHECK(b.failures == std::vector<std::string>{"3 scoreboard errors on living XPUs",
                                               "timeline: phase program: gap of 500 ns after phase firmware"});
  std::filesystem::remove_all(dir);
}

TEST_CASE("regress: JUnit XML has one testcase per seed, failures with their message and the rerun command") {
  RegressResult r;
  r.jobs = 2;
  SeedResult a;
  a.seed = 1;
  a.argv = {"mxtb", "demo", "--scenario-seed", "1"};
  SeedResult b = a;
  b.seed = 2;
  b.argv[3] = "2";
  b.exit_code = 1;
  b.failures = {"no traffic reached the spare <after> the failover"};
  r.runs = {a, b};
  std::string x = junit_xml(r);
  CHECK(x.find("<testsuite name=\"mxtb.regress\" tests=\"2\" failures=\"1\"") != std::string::npos);
  CHECK(count(x, "<testcase ") == 2);
  CHECK(count(x, "<failure ") == 1);
  CHECK(x.find("message=\"no traffic reached the spare &lt;after&gt; the failover\"") != std::string::npos);
  CHECK(x.find("rerun: mxtb demo --scenario-seed 2") != std::string::npos);
  std::string s = format_summary(r);
  CHECK(s.find("FAIL seed 2: no traffic reached the spare <after> the failover") != std::string::npos);
  CHECK(s.find("rerun: mxtb demo --scenario-seed 2") != std::string::npos);
  json j = to_json(r);
  CHECK(j["failed"] == 1);
  CHECK(j["runs"][1]["rerun"] == "mxtb demo --scenario-seed 2");
}

TEST_CASE("regress: run_regress spawns the children, J at a time, and collects their JSON") {
  // A child that is not the emulator: a shell that writes a report for even seeds and fails odd ones.
  Timeline t = sample();
  auto dir = std::filesystem::temp_directory_path() / "mxtb-regress-spawn";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string good = (dir / "good.json").string();
  std::ofstream(good) << json{{"failures", json::array()}, {"report", to_json(t)}}.dump();
  RegressConfig cfg;
  cfg.child_template = {"sh", "-c", "if [ $(({seed} % 2)) = 0 ]; then cp " + good + " {json}; else echo broken; exit 3; fi"};
  cfg.seeds = 4;
  cfg.jobs = 2;
  cfg.work_dir = (dir / "work").string();
  cfg.progress = false;
  RegressResult r = run_regress(cfg);
  REQUIRE(r.runs.size() == 4);
  CHECK(r.failed() == 2);
  CHECK_FALSE(r.runs[0].passed());  // seed 1
  CHECK(r.runs[0].failures.at(0).find("wrote no JSON") == 0);
  CHECK(r.runs[1].passed());
  CHECK(r.stats.back().name == "swap_relaunch");
  CHECK(r.stats.back().runs == 2);
  std::ifstream log(r.runs[0].log_path);
  std::string line;
  std::getline(log, line);
  CHECK(line == "broken");
  std::filesystem::remove_all(dir);
}

TEST_CASE("regress slurm: sacct and scontrol answers parsed into array task states") {
  // sacct -n -P -X -j 12 --format=JobID,State,ExitCode: finished tasks, a cancelled one, a pending
  // range, and lines of another job and of a step that are not ours.
  auto a = parse_sacct("12_0|COMPLETED|0:0\n12_1|CANCELLED by 0|0:15\n12_2|TIMEOUT|0:0\n12_[3-5%2]|PENDING|0:0\n"
                       "120_7|FAILED|1:0\n12_0.batch|COMPLETED|0:0\n",
                       "12");
  REQUIRE(a.size() == 6);
  CHECK(a[0].state == "COMPLETED");
  CHECK(a[1].state == "CANCELLED");
  CHECK(a[1].exit_code == "0:15");
  CHECK(a[2].state == "TIMEOUT");
  CHECK(a[4].state == "PENDING");
  CHECK(a.count(7) == 0);
  auto s = parse_scontrol(
      "JobId=13 ArrayJobId=12 ArrayTaskId=0 JobName=mxtb-regress JobState=COMPLETED Reason=None ExitCode=0:0\n"
      "JobId=14 ArrayJobId=12 ArrayTaskId=1 JobName=mxtb-regress JobState=CANCELLED Reason=None ExitCode=0:15\n"
      "JobId=12 ArrayJobId=12 ArrayTaskId=2-3 JobName=mxtb-regress JobState=PENDING Reason=Resources ExitCode=0:0\n");
  REQUIRE(s.size() == 4);
  CHECK(s[1].state == "CANCELLED");
  CHECK(s[3].state == "PENDING");
  CHECK(valid_time_limit("10"));
  CHECK(valid_time_limit("1:30:00"));
  CHECK(valid_time_limit("2-12:00"));
  CHECK_FALSE(valid_time_limit("ten minutes"));
  CHECK_FALSE(valid_time_limit("1:2:3:4"));
}

TEST_CASE("regress slurm: the batch script's tasks and their states judged; only a seed with its own result passes") {
  // The array tasks run here as Slurm would start them (SLURM_ARRAY_TASK_ID set), with a stand-in
  // child: even seeds write a passing report, odd ones fail. Seeds 1-7, 3 per task: tasks 0, 1, 2.
  namespace fs = std::filesystem;
  Timeline t = sample();
  auto dir = fs::temp_directory_path() / "mxtb-regress-slurm";
  fs::remove_all(dir);
  fs::create_directories(dir / "runs");
  fs::create_directories(dir / "logs");
  std::string good = (dir / "good.json").string();
  std::ofstream(good) << json{{"failures", json::array()}, {"report", to_json(t)}}.dump();
  SlurmCampaign c;
  c.child_template = {"sh", "-c", "if [ $(({seed} % 2)) = 0 ]; then cp " + good + " '{json}'; else echo broken; exit 3; fi"};
  c.first_seed = 1;
  c.seeds = 7;
  c.seeds_per_task = 3;
  c.work_dir = (dir / "work dir").string();  // a space: the script must quote it
  c.job_id = "12";
  c.submitted_at = 0;
  fs::create_directories(fs::path(c.work_dir) / "runs");
  fs::create_directories(fs::path(c.work_dir) / "logs");
  CHECK(c.tasks() == 3);
  CHECK(c.task_of(4) == 1);
  std::string script = (dir / "regress.sbatch").string();
  std::ofstream(script) << batch_script(c);
  for (const char* task : {"0", "2"}) {
    Captured r = run_capture({"env", std::string("SLURM_ARRAY_TASK_ID=") + task, "bash", script});
    CHECK(r.exit_code == 0);
  }
  Captured outside = run_capture({"env", "-u", "SLURM_ARRAY_TASK_ID", "bash", script});
  CHECK(outside.exit_code == 2);
  CHECK(outside.err.find("not started as a Slurm array task") != std::string::npos);
  // Task 1 (seeds 4-6) never ran: cancelled while pending.
  std::map<uint64_t, SlurmTaskState> states{{0, {"COMPLETED", "0:0"}}, {1, {"CANCELLED", "0:0"}}, {2, {"COMPLETED", "0:0"}}};
  RegressResult r = collect_slurm(c, states);
  REQUIRE(r.runs.size() == 7);
  CHECK(r.runs[1].passed());  // seed 2
  CHECK(r.runs[0].state() == "failed");  // seed 1: its child exited 3
  CHECK(r.runs[0].exit_code == 3);
  for (int i : {3, 4, 5}) {
    CHECK(r.runs[i].state() == "cancelled");
    CHECK(r.runs[i].failures.at(0) == "Slurm task 12_1 cancelled before the seed started: no result");
  }
  CHECK(r.runs[6].state() == "failed");  // seed 7, task 2
  CHECK(r.failed() == 6);
  CHECK(r.stats.back().runs == 1);
  std::string summary = format_summary(r);
  CHECK(summary.find("slurm job 12 (3 tasks, 3 seeds per task)") != std::string::npos);
  CHECK(summary.find("3 cancelled") != std::string::npos);
  CHECK(summary.find("FAIL seed 4 [cancelled]: Slurm task 12_1 cancelled") != std::string::npos);
  json j = to_json(r);
  CHECK(j["runs"][3]["status"] == "cancelled");
  CHECK(j["unfinished"]["cancelled"] == 3);
  CHECK(j["job_id"] == "12");
  std::string x = junit_xml(r);
  CHECK(x.find("failures=\"3\" errors=\"3\"") != std::string::npos);
  CHECK(x.find("<error message=\"Slurm task 12_1 cancelled before the seed started: no result\" type=\"cancelled\">") !=
        std::string::npos);

  // The same files with other states: task 1 timed out while seed 4 ran (its log exists), and with
  // no record at all a seed without a result still never passes.
  std::ofstream(c.log_path(4)) << "started\n";
  r = collect_slurm(c, {{0, {"COMPLETED", "0:0"}}, {1, {"TIMEOUT", "0:0"}}, {2, {"COMPLETED", "0:0"}}});
  CHECK(r.runs[3].state() == "timed_out");
  CHECK(r.runs[3].failures.at(0).find("hit its time limit (TIMEOUT) while the seed ran") != std::string::npos);
  CHECK(r.runs[4].state() == "timed_out");
  r = collect_slurm(c, {});
  CHECK(r.runs[1].passed());
  CHECK(r.runs[3].state() == "lost");
  CHECK(r.runs[4].state() == "not_started");
  CHECK(r.runs[4].failures.at(0).find("never started (no log), and Slurm has no record") != std::string::npos);
  r = collect_slurm(c, {{1, {"PENDING", ""}}});
  CHECK(r.runs[4].state() == "unfinished");

  // A child killed by a signal (bash: 128 + N) while its task was cancelled.
  std::ofstream(c.exit_path(5)) << R"({"seed": 5, "exit_code": 143, "start": 1.0, "end": 2.5, "task": 1})";
  r = collect_slurm(c, {{1, {"CANCELLED", "0:15"}}});
  CHECK(r.runs[4].exit_code == -15);
  CHECK(r.runs[4].state() == "cancelled");
  CHECK(r.runs[4].wall_s == doctest::Approx(1.5));
  fs::remove_all(dir);
}

TEST_CASE("regress slurm: a campaign folder is read back, and a bad one is named") {
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / "mxtb-regress-campaign";
  fs::remove_all(dir);
  fs::create_directories(dir);
  CHECK_THROWS_WITH(read_campaign(dir.string()), doctest::Contains("campaign.json: no such file"));
  std::ofstream(dir / "campaign.json") << R"({"launcher": "slurm", "seeds": 3})";
  CHECK_THROWS_WITH(read_campaign(dir.string()), doctest::Contains("campaign.json: "));
  std::ofstream(dir / "campaign.json") << json{{"launcher", "slurm"},    {"child", {"mxtb", "demo"}}, {"first_seed", 5},
                                               {"seeds", 3},             {"seeds_per_task", 2},       {"work_dir", dir.string()},
                                               {"job_id", "77"},         {"submitted_at", 1.5}}
                                              .dump();
  SlurmCampaign c = read_campaign(dir.string());
  CHECK(c.job_id == "77");
  CHECK(c.tasks() == 2);
  fs::remove_all(dir);
}

TEST_CASE("report: the regression's summary counts phases beside the path and alternative totals, the totals last") {
  Timeline a = sample();
  add_beside(a, "collective_abort", a.failure_ns, a.failure_ns + 20'000, "rtl", "");
  a.alternatives.push_back({"relaunch", "state_restore", 1e6, a.total_ns - 171.8e6 + 1e6, "measured", ""});
  const auto st = summarize({a, sample()});
  std::vector<std::string> names;
  for (const auto& s : st) names.push_back(s.name);
  REQUIRE(names.size() >= 5);
  CHECK(names[names.size() - 4] == "hardware");
  CHECK(names[names.size() - 3] == "total");
  CHECK(names[names.size() - 2] == "total, relaunch");
  CHECK(names.back() == "swap_relaunch");
  CHECK(std::find(names.begin(), names.end(), "collective_abort (beside)") != names.end());
  CHECK(st[st.size() - 2].runs == 1);
  CHECK(st[st.size() - 2].p50_ns == doctest::Approx(a.alternatives[0].total_ns));
}
