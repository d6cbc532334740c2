// mxtb cover's reading of Verilator coverage data, its waivers and its summary (docs/coverage.md).
#include "apps/mxtb/args.h"
#include "apps/mxtb/coverage_report.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace mxtb::app::coverage;
using mxtb::app::InputError;

namespace {

// One point as Verilator writes it: fields \x01name\x02value, then the count.
std::string point(const std::string& file, int line, const std::string& page, const std::string& name,
                  const std::string& span, const std::string& hier, uint64_t count) {
  std::string key = "\x01" "f\x02" + file + "\x01" "l\x02" + std::to_string(line) + "\x01" "n\x02" "3\x01" "page\x02" + page +
                    "\x01" "o\x02" + name;
  if (!span.empty()) key += "\x01" "S\x02" + span;
  key += "\x01" "h\x02" + hier;
  return "C '" + key + "' " + std::to_string(count) + "\n";
}

const std::string kSeq = "/repo/rtl/ocs/ocs_sequencer.sv";
const std::string kTrain = "/repo/rtl/link/link_train.sv";

std::string sample() {
  return "# SystemC::Coverage-3\n" +
         // A block hit, an if taken and its else never taken on the same line.
         point(kSeq, 10, "v_line/ocs_sequencer__N8", "block", "10", "TOP.u", 5) +
         point(kSeq, 12, "v_branch/ocs_sequencer__N8", "if", "12-13", "TOP.u", 2) +
         point(kSeq, 12, "v_branch/ocs_sequencer__N8", "else", "14", "TOP.u", 0) +
         // Two instances of one line: folded, counts summed.
         point(kTrain, 20, "v_line/link_train", "block", "20", "TOP.a.u_train", 0) +
         point(kTrain, 20, "v_line/link_train", "block", "20", "TOP.b.u_train", 3) +
         point(kTrain, 21, "v_line/link_train", "block", "21,23", "TOP.a.u_train", 0) +
         point(kSeq, 5, "v_toggle/ocs_sequencer__N8", "state_q[0]", "", "TOP.u", 4) +
         point(kSeq, 5, "v_toggle/ocs_sequencer__N8", "state_q[1]", "", "TOP.u", 0) +
         point(kSeq, 5, "v_toggle/ocs_sequencer__N8", "dbg_q[0]", "", "TOP.u", 0) +
         point(kSeq, 40, "v_user/ocs_sequencer__N8", "c_rollback", "40", "TOP.u.c_rollback", 1) +
         point(kSeq, 41, "v_user/ocs_sequencer__N8", "c_watchdog", "41", "TOP.u.c_watchdog", 0) +
         point(kTrain, 50, "v_user/link_train", "c_replay_max", "50", "TOP.a.u_train.c_replay_max", 0);
}

}  // namespace

TEST_CASE("coverage: .dat points are read, instances folded, parameterised modules named by their module") {
  auto pts = parse_dat(sample(), "x.dat");
  CHECK(pts.size() == 11);  // 12 lines, two instances of one point
  int folded = 0;
  for (const auto& p : pts) {
    CHECK(p.module.find("__") == std::string::npos);
    if (p.module == "link_train" && p.line == 20) {
      CHECK(p.count == 3);
      ++folded;
    }
    if (p.name == "if") CHECK(p.span == std::vector<int>{12, 13});
    if (p.line == 21) CHECK(p.span == std::vector<int>{21, 23});
    if (p.name == "else") CHECK(p.span == std::vector<int>{14, 12});  // its own line too
  }
  CHECK(folded == 1);
}

TEST_CASE("coverage: malformed .dat files are rejected with the file and line") {
  CHECK_THROWS_WITH_AS(parse_dat("C 'x' 1\n", "a.dat"), doctest::Contains("a.dat:1: not a Verilator coverage file"), InputError);
  CHECK_THROWS_WITH_AS(parse_dat("", "e.dat"), doctest::Contains("e.dat: not a Verilator coverage file"), InputError);
  std::string bad_count = "# SystemC::Coverage-3\n" + point(kSeq, 1, "v_line/m", "block", "", "TOP", 1);
  bad_count.replace(bad_count.rfind(' ') + 1, 1, "x");
  CHECK_THROWS_WITH_AS(parse_dat(bad_count, "b.dat"), doctest::Contains("b.dat:2: count 'x' is not a number"), InputError);
  CHECK_THROWS_WITH_AS(parse_dat("# SystemC::Coverage-3\nC '\x01page\x02v_line/m' 3\n", "c.dat"),
                       doctest::Contains("c.dat:2: point without page, file or line"), InputError);
  CHECK_THROWS_WITH_AS(parse_dat("# SystemC::Coverage-3\n" + point(kSeq, 1, "v_line/m", "block", "9-3", "TOP", 1), "d.dat"),
                       doctest::Contains("d.dat:2: span '9-3' is not a line range"), InputError);
}

TEST_CASE("coverage: summary per module and folder, lines as lcov counts them, open and waived COVER points") {
  auto waivers = parse_waivers(
      "# reviewed\n"
      "cover  link_train.c_replay_*   needs MAX_REPLAYS corrupted frames in a row\n"
      "toggle ocs_sequencer.dbg_q[*]  debug tap, tied off\n"
      "line   rtl/link/link_train.sv:21-23  default arm of a full case\n"
      "cover  ocs_sequencer.c_gone    a point that no longer exists\n",
      "w.txt");
  REQUIRE(waivers.size() == 4);
  Summary s = summarize(parse_dat(sample(), "x.dat"), waivers, "/repo");
  REQUIRE(s.modules.size() == 2);
  const ModuleSummary& train = s.modules[0];  // sorted by file: rtl/link before rtl/ocs
  const ModuleSummary& seq = s.modules[1];
  CHECK(train.file == "rtl/link/link_train.sv");
  CHECK(seq.module == "ocs_sequencer");
  // Lines 10, 12, 13, 14: 12 has an else never taken, 14 is that else: 10 and 13 reached.
  CHECK(seq.lines.hit == 2);
  CHECK(seq.lines.total == 4);
  CHECK(seq.toggles.hit == 1);
  CHECK(seq.toggles.total == 3);
  CHECK(seq.covers.hit == 1);
  CHECK(seq.covers.total == 2);
  CHECK(train.covers_waived == 1);
  CHECK(s.dir_lines.at("rtl/ocs").pct() == doctest::Approx(50.0));
  CHECK(s.dir_lines.at("rtl/link").hit == 1);   // line 20 (either instance counts)
  CHECK(s.dir_lines.at("rtl/link").total == 3);  // 20, 21, 23
  REQUIRE(s.unhit_covers.size() == 2);
  CHECK(s.unhit_covers[0].name == "c_replay_max");
  CHECK(s.unhit_covers[0].waived == "needs MAX_REPLAYS corrupted frames in a row");
  CHECK(s.unhit_covers[1].name == "c_watchdog");
  CHECK(s.unhit_covers[1].waived.empty());
  CHECK(s.unhit_lines.count("rtl/link/link_train.sv") == 0);  // 21 and 23 waived
  CHECK(s.unhit_lines.at("rtl/ocs/ocs_sequencer.sv") == std::vector<int>{12, 14});
  CHECK(s.waived_lines == 2);
  CHECK(s.waived_toggles == 1);
  REQUIRE(s.stale.size() == 1);
  CHECK(s.stale[0].at == 5);
  std::string text = format_summary(s);
  CHECK(text.find("ocs_sequencer.c_watchdog") != std::string::npos);
  CHECK(text.find("stale waiver (waiver file line 5)") != std::string::npos);
  auto j = to_json(s);
  CHECK(j["folders"]["rtl/ocs"]["covers"]["total"] == 1 + 1);
  CHECK(j["unhit_covers"][1]["waived"].is_null());
}

TEST_CASE("coverage: bad waivers name the file, the line and what is wrong") {
  CHECK_THROWS_WITH_AS(parse_waivers("cover ocs_sequencer.c_idle\n", "w"), doctest::Contains("w:1: waiver of ocs_sequencer.c_idle gives no reason"), InputError);
  CHECK_THROWS_WITH_AS(parse_waivers("\nbranch x.y why\n", "w"), doctest::Contains("w:2: unknown waiver kind 'branch'"), InputError);
  CHECK_THROWS_WITH_AS(parse_waivers("cover c_idle because\n", "w"), doctest::Contains("w:1: cover waiver wants MODULE.NAME, got 'c_idle'"), InputError);
  CHECK_THROWS_WITH_AS(parse_waivers("line rtl/a.sv because\n", "w"), doctest::Contains("w:1: line waiver wants FILE:LINE[-LAST]"), InputError);
  CHECK_THROWS_WITH_AS(parse_waivers("line rtl/a.sv:9-3 because\n", "w"), doctest::Contains("w:1: line span '9-3' is empty"), InputError);
  CHECK_THROWS_WITH_AS(parse_waivers("line rtl/a.sv:x because\n", "w"), doctest::Contains("w:1: 'x' is not a line number"), InputError);
  CHECK(parse_waivers("# only comments\n\n   \n", "w").empty());
}

TEST_CASE("coverage: the lcov input keeps line and branch points only; line ranges") {
  std::string only = line_points_only(sample());
  CHECK(only.find("v_toggle") == std::string::npos);
  CHECK(only.find("v_user") == std::string::npos);
  CHECK(only.find("v_branch") != std::string::npos);
  CHECK(only.rfind("# SystemC::Coverage-3", 0) == 0);
  CHECK(ranges({3, 4, 5, 9, 11, 12}) == "3-5,9,11-12");
  CHECK(ranges({}).empty());
}

TEST_CASE("coverage: an anchored line waiver follows its text wherever the lines move") {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / "mxtb-coverage-anchor";
  fs::create_directories(root / "rtl/link");
  {
    std::ofstream f(root / "rtl/link/link_train.sv");
    for (int i = 1; i <= 30; ++i) f << (i == 21 ? "      default: st_d = StReset;" : "      x = y;") << "\n";
  }
  std::string dat = "# SystemC::Coverage-3\n" + point((root / "rtl/link/link_train.sv").string(), 21, "v_line/link_train", "case", "21-22", "TOP", 0) +
                    point((root / "rtl/link/link_train.sv").string(), 25, "v_line/link_train", "block", "25", "TOP", 0);
  auto w = parse_waivers("line rtl/link/link_train.sv:/default: st_d = StReset;/+1  the default arm: every state has one\n"
                         "line rtl/link/link_train.sv:/no such text/  gone\n", "w");
  REQUIRE(w.size() == 2);
  CHECK(w[0].text == "default: st_d = StReset;");
  CHECK(w[0].after == 1);
  Summary s = summarize(parse_dat(dat, "x.dat"), w, root.string());
  CHECK(s.waived_lines == 2);  // 21 and 22
  CHECK(s.unhit_lines.at("rtl/link/link_train.sv") == std::vector<int>{25});
  REQUIRE(s.stale.size() == 1);
  CHECK(s.stale[0].at == 2);
  CHECK_THROWS_WITH_AS(parse_waivers("line rtl/a.sv:/text/\n", "w"), doctest::Contains("w:1: waiver of rtl/a.sv:/text/ gives no reason"), InputError);
  CHECK_THROWS_WITH_AS(parse_waivers("line rtl/a.sv:/text/+x why\n", "w"), doctest::Contains("w:1: anchored line waiver wants FILE:/TEXT/[+N] REASON"), InputError);
  fs::remove_all(root);
}
