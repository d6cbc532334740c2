#include "host/report/report.h"
#include "testbench/host/report/report_samples.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

using namespace mxtb::host::report;
using nlohmann::json;
using report_samples::count;
using report_samples::sample;

TEST_CASE("report: a consistent timeline has no problems, and report.json has the fields the issue asks for") {
  Timeline t = sample();
  CHECK(check_timeline(t).empty());
  CHECK(t.hardware_ns == doctest::Approx(61'400));
  CHECK(t.total_ns == doctest::Approx(61'400 + 671.8e6));
  json j = to_json(t);
  for (const char* k : {"time_mode", "scenario", "seed", "failover", "degraded", "notes"}) CHECK(j.contains(k));
  CHECK(j["time_mode"] == "lockstep");
  CHECK(j["failover"]["total_ns"].get<double>() == doctest::Approx(t.total_ns));
  CHECK(j["failover"]["hardware_ns"].get<double>() == doctest::Approx(61'400));
  REQUIRE(j["failover"]["phases"].size() == 7);
  for (const auto& p : j["failover"]["phases"])
    for (const char* k : {"name", "start_ns", "end_ns", "source"}) CHECK(p.contains(k));
  CHECK(j["failover"]["phases"][1]["source"] == "firmware");
  // It reads back.
  Timeline back = timeline_from_json(j, "mem");
  CHECK(back.phases.size() == 7);
  CHECK(back.phases[3].end_ns == doctest::Approx(t.phases[3].end_ns));
  CHECK(check_timeline(back).empty());
  CHECK_THROWS_WITH(timeline_from_json(json{{"scenario", "x"}}, "r.json"), "r.json: $.time_mode: missing");
}

TEST_CASE("report: a rack's phase names its board, in report.json, read back and in the table; one board's names none") {
  Timeline t = sample();
  CHECK(to_json(t)["failover"]["phases"][2].contains("board") == false);
  t.phases[2].board = 3;
  json j = to_json(t);
  CHECK(j["failover"]["phases"][2]["board"] == 3);
  CHECK(j["failover"]["phases"][1].contains("board") == false);
  Timeline back = timeline_from_json(j, "mem");
  CHECK(back.phases[2].board == 3);
  CHECK(back.phases[1].board == -1);
  const std::string table = format_table(t);
  CHECK(table.find(t.phases[2].source + ", server 3") != std::string::npos);
}

TEST_CASE("report: a rack failover's blast radius in report.json, read back as written; null where not measured") {
  Timeline t = sample();
  CHECK(to_json(t)["failover"]["blast_radius"].is_null());
  t.blast_radius = {{"boards_touched", {0}}, {"xpus_left_active", {"0.0", "0.1"}}, {"words_lost", 0}, {"collectives_aborted", 1}};
  const json j = to_json(t);
  CHECK(j["failover"]["blast_radius"]["boards_touched"] == json{0});
  const Timeline back = timeline_from_json(j, "mem");
  CHECK(back.blast_radius == t.blast_radius);
  CHECK(timeline_from_json(to_json(sample()), "mem").blast_radius.is_null());
}

TEST_CASE("report: check_timeline names gaps, overlaps, negative durations, disorder and wrong totals") {
  Timeline t = sample();
  t.phases[2].start_ns += 500;  // program starts 500 ns after firmware ended, and ends as before
  auto p = check_timeline(t);
  REQUIRE(p.size() == 1);
  CHECK(p[0] == "phase program: gap of 500 ns after phase firmware");

  t = sample();
  t.phases[3].start_ns -= 100;
  CHECK(check_timeline(t).at(0) == "phase settle: overlaps phase program by 100 ns");

  t = sample();
  t.phases[1].end_ns = t.phases[1].start_ns - 10;
  CHECK(check_timeline(t).at(0) == "phase firmware: negative duration (-10 ns)");

  t = sample();
  std::swap(t.phases[3], t.phases[4]);
  p = check_timeline(t);
  CHECK(std::find_if(p.begin(), p.end(), [](const std::string& x) { return x.find("phase settle: out of order") == 0; }) !=
        p.end());

  t = sample();
  t.total_ns += 1000;
  CHECK(check_timeline(t).at(0).find("total_ns") == 0);

  t = sample();
  t.phases[0].start_ns = t.failure_ns + 50;
  CHECK(check_timeline(t).at(0) == "phase detect: gap of 50 ns after the failure");

  t = sample();
  t.phases[0].source = "magic";
  CHECK(check_timeline(t).at(0) == "phase detect: unknown source 'magic'");

  Timeline empty;
  CHECK(check_timeline(empty).at(0) == "no phases: the failover left no timeline");
  empty.degraded = true;
  CHECK(check_timeline(empty).empty());
}

TEST_CASE("report: the table shows human units, sources and the path without state_restore against 1.2 s") {
  CHECK(human_duration(812) == "812 ns");
  CHECK(human_duration(3'200) == "3.20 us");
  CHECK(human_duration(45.12e6) == "45.1 ms");
  CHECK(human_duration(1.2e9) == "1.20 s");
  std::string s = format_table(sample());
  CHECK(s.find("detect") != std::string::npos);
  CHECK(s.find("1.20 us") != std::string::npos);     // detect's duration
  CHECK(s.find("500 ms") != std::string::npos);      // communicator_reinit
  CHECK(s.find("modeled") != std::string::npos);
  // The prototype's 1.2 s swapped circuits and relaunched, moving no state: compared without state_restore.
  CHECK(swap_relaunch_ns(sample()) == doctest::Approx(sample().total_ns - 171.8e6));
  CHECK(s.find("swap_relaunch") != std::string::npos);
  CHECK(s.find("within the prototype's 1.20 s") != std::string::npos);
  Timeline slow = sample();
  append_phase(slow, "slow_host", 1e9, "host", "");
  CHECK(format_table(slow).find("OVER the prototype's 1.20 s") != std::string::npos);
  CHECK_FALSE(to_json(slow)["failover"]["within_target"].get<bool>());
  Timeline big_state = sample();  // a restore longer than 1.2 s by itself is not the swap's
  big_state.phases.back().end_ns += 2e9;
  big_state.total_ns += 2e9;
  CHECK(check_timeline(big_state).empty());
  CHECK(format_table(big_state).find("within the prototype's 1.20 s") != std::string::npos);
  CHECK(to_json(big_state)["failover"]["within_target"].get<bool>());
  CHECK(to_json(big_state)["failover"]["swap_relaunch_ns"].get<double>() == doctest::Approx(swap_relaunch_ns(sample())));
  // A hot spare's re-form hidden by the restore counts in full from the restore's start.
  Timeline hot = sample();
  const TimelinePhase restore = hot.phases.back();
  add_beside(hot, "hot_spare_reform", hot.failure_ns + 2e6, restore.start_ns + 60e6, "measured", "");
  CHECK(swap_relaunch_ns(hot) == doctest::Approx(swap_relaunch_ns(sample()) + 60e6));
  // The path without state_restore: the prototype's comparison, the same whatever the state's size.
  hot.phases.back().end_ns += 1e9;
  hot.total_ns += 1e9;
  CHECK(swap_relaunch_ns(hot) == doctest::Approx(swap_relaunch_ns(sample()) + 60e6));
  // The projection: labelled, apart, read back.
  CHECK(s.find("projection") == std::string::npos);
  Timeline projected = sample();
  projected.projection = Projection{100, 17.18e6, "faster SerDes"};
  CHECK(format_table(projected).find("projection, not emulated: state_restore at 100 Gb/s lanes 17.2 ms (faster SerDes)") !=
        std::string::npos);
  const Timeline back = timeline_from_json(to_json(projected), "mem");
  REQUIRE(back.projection);
  CHECK(back.projection->lane_gbps == 100);
  CHECK(back.projection->state_restore_ns == 17.18e6);
  CHECK_FALSE(timeline_from_json(to_json(sample()), "mem").projection);
}

TEST_CASE("report: timeline.json is a Chrome trace with one complete event per phase and a track per source") {
  Timeline t = sample();
  json j = json::parse(chrome_trace(t).dump());  // through text, as Perfetto reads it
  REQUIRE(j["traceEvents"].is_array());
  std::map<std::string, int> tid_of_source;
  int complete = 0, thread_names = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      ++complete;
      tid_of_source[e["cat"].get<std::string>()] = e["tid"].get<int>();
      if (e["name"] == "settle") {
        CHECK(e["ts"].get<double>() == doctest::Approx(5.4));   // us after the failure
        CHECK(e["dur"].get<double>() == doctest::Approx(50.0));
      }
    }
    if (e["ph"] == "M" && e["name"] == "thread_name") ++thread_names;
  }
  CHECK(complete == 7);
  CHECK(thread_names == 5);  // one track per source: rtl, firmware, host, measured, modeled
  CHECK(tid_of_source.size() == 3);  // rtl, firmware, modeled used here
  CHECK(tid_of_source["rtl"] != tid_of_source["firmware"]);
  CHECK(tid_of_source["rtl"] != tid_of_source["modeled"]);
}

TEST_CASE("report: timeline.svg is one SVG with a bar per phase, legible labels and decade ticks") {
  Timeline t = sample();
  std::string s = gantt_svg(t);
  CHECK(s.rfind("<svg", 0) == 0);
  CHECK(s.find("</svg>") != std::string::npos);
  CHECK(count(s, "<rect") == 1 + 5 + 7);  // background, legend (a swatch per source), one per phase
  CHECK(count(s, "<svg") == 1);
  CHECK(s.find("detect 1.20 us (rtl)") != std::string::npos);
  CHECK(s.find(">1 s<") != std::string::npos);   // the axis reaches past the target
  t.scenario = "a<b&c";
  CHECK(gantt_svg(t).find("a&lt;b&amp;c") != std::string::npos);
}

TEST_CASE("report: write_report_files writes the three files into the directory") {
  auto dir = std::filesystem::temp_directory_path() / "mxtb-report-unit";
  std::filesystem::remove_all(dir);
  auto paths = write_report_files(sample(), dir.string());
  CHECK(paths.size() == 3);
  for (const char* f : {"report.json", "timeline.json", "timeline.svg"}) CHECK(std::filesystem::exists(dir / f));
  std::filesystem::remove_all(dir);
}

TEST_CASE("report: phases beside the path and alternatives are shown, checked, and read back; they never change the total") {
  Timeline t = sample();
  const double total = t.total_ns;
  add_beside(t, "collective_abort", t.failure_ns, t.failure_ns + 20'000, "rtl", "the collective in flight aborted: LinkLost");
  add_beside(t, "rearm", t.failure_ns + total, t.failure_ns + total + 3'000, "host", "after the path");
  const TimelinePhase* reinit = find_phase(t, "communicator_reinit");
  REQUIRE(reinit);
  CHECK(find_phase(t, "no_such_phase") == nullptr);
  t.alternatives.push_back({"relaunch", "communicator_reinit", 200e6, total - reinit->duration_ns() + 200e6, "measured", "x"});
  t.figures["restore_efficiency"] = 0.882;
  CHECK(check_timeline(t).empty());
  CHECK(t.total_ns == total);

  const std::string table = format_table(t);
  CHECK(table.find("collective_abort") != std::string::npos);
  CHECK(table.find("beside the path: the collective in flight aborted: LinkLost") != std::string::npos);
  CHECK(table.find("total, relaunch") != std::string::npos);
  CHECK(count(gantt_svg(t), "fill-opacity=\"0.4\"") == 2);  // the two beside rows, pale
  CHECK(count(chrome_trace(t).dump(), "beside the path") == 2);

  const json j = to_json(t);
  CHECK(j["problems"].empty());
  Timeline back = timeline_from_json(j, "mem");
  REQUIRE(back.beside.size() == 2);
  CHECK(back.beside[1].name == "rearm");
  CHECK(back.beside[1].start_ns == doctest::Approx(t.failure_ns + total));
  REQUIRE(back.alternatives.size() == 1);
  CHECK(back.alternatives[0].total_ns == doctest::Approx(t.alternatives[0].total_ns));
  CHECK(back.figures.at("restore_efficiency") == doctest::Approx(0.882));
  CHECK(check_timeline(back).empty());

  // What the check catches: a beside phase before the failure or backwards; an alternative whose
  // total is not the timeline's with its phase swapped, or that names a phase the path lacks.
  Timeline bad = t;
  bad.beside[0].start_ns = t.failure_ns - 10;
  bad.beside[1].end_ns = bad.beside[1].start_ns - 1;
  bad.alternatives[0].total_ns += 1e6;
  bad.alternatives.push_back({"other", "no_such_phase", 1, 1, "measured", ""});
  bad.alternatives.push_back({"third", "state_restore", 1, t.total_ns, "guessed", ""});
  const auto p = check_timeline(bad);
  REQUIRE(p.size() == 6);
  CHECK(p[0].find("collective_abort (beside the path): starts at") != std::string::npos);
  CHECK(p[1].find("rearm (beside the path): not an interval") != std::string::npos);
  CHECK(p[2].find("alternative relaunch: total") != std::string::npos);
  CHECK(p[3] == "alternative other: replaces phase no_such_phase, which the timeline lacks");
  CHECK(p[4] == "alternative third: unknown source 'guessed'");
  CHECK(p[5].find("alternative third: total") != std::string::npos);
}

