// `mxtb cover`'s arithmetic (docs/coverage.md): Verilator coverage data (.dat) read into points,
// the waiver list, and the summary per module and per RTL folder: lines, toggles and the RTL's
// COVER points, with every point never hit.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mxtb::app::coverage {

enum class Kind { Line, Branch, Toggle, Cover };

// One coverage point of a merged .dat: instances of a module are folded into one point.
struct Point {
  Kind kind = Kind::Line;
  std::string module;  // the page's module, e.g. ocs_sequencer
  std::string file;    // as Verilator wrote it (absolute)
  int line = 0;
  std::vector<int> span;  // the source lines it counts for: its line and Verilator's S field ("7", "7-9", "7,9")
  std::string name;         // toggle: the signal bit; cover: the COVER point's name; line: block/if/else/case
  uint64_t count = 0;
};

// Parses a Verilator coverage file ("# SystemC::Coverage-3" then one "C '<key>' <count>" a line).
// Points of other kinds are skipped. Throws InputError naming `what` and the line for a malformed one.
std::vector<Point> parse_dat(const std::string& text, const std::string& what);

// The same text with only line and branch points: what the lcov data and the HTML report show,
// because `verilator_coverage --write-info` would count a signal's toggles as hits of its line.
std::string line_points_only(const std::string& text);

// A reviewed exception: a point that cannot be reached, and why.
//   cover  MODULE.NAME        REASON   (NAME may use * and ?)
//   toggle MODULE.SIGNAL      REASON   (SIGNAL may use * and ?, e.g. dbg_i[*])
//   line   FILE:LINE[-LAST]   REASON   (FILE relative to the repository root)
//   line   FILE:/TEXT/[+N]    REASON   (every line of FILE containing TEXT, and the N lines after
//                                       it: survives edits that move lines)
struct Waiver {
  std::string kind;    // cover, toggle, line
  std::string module;  // cover and toggle
  std::string pattern; // cover and toggle
  std::string file;    // line
  int first = 0, last = 0;
  std::string text;  // line, anchored form: first and last unused
  int after = 0;
  std::string reason;
  int at = 0;  // its line in the waiver file
  int used = 0;
};
// Blank lines and # comments are skipped. Throws InputError naming `what` and the line.
std::vector<Waiver> parse_waivers(const std::string& text, const std::string& what);

struct Tally {
  int hit = 0, total = 0;
  double pct() const { return total ? 100.0 * hit / total : 0.0; }
};

struct Unhit {
  Kind kind;
  std::string module, file, name;
  int line = 0;
  std::string waived;  // the waiver's reason; empty: not waived
};

struct ModuleSummary {
  std::string module, file;  // file relative to the root
  Tally lines, toggles, covers;
  int covers_waived = 0;
};

struct Summary {
  std::vector<ModuleSummary> modules;  // sorted by file
  std::map<std::string, Tally> dir_lines, dir_toggles, dir_covers;  // per folder, e.g. rtl/ocs
  std::vector<Unhit> unhit_covers;                   // every COVER point never hit, waived or not
  std::map<std::string, std::vector<int>> unhit_lines;  // file -> lines never reached (not waived)
  int waived_lines = 0, waived_toggles = 0;
  std::vector<Waiver> stale;  // waivers that matched nothing: the point is gone or now hit
};

// `root`: the repository root, stripped from file names; anchored line waivers read FILE under it.
Summary summarize(const std::vector<Point>& points, std::vector<Waiver> waivers, const std::string& root);
nlohmann::json to_json(const Summary& s);
// The table and the lists the command prints.
std::string format_summary(const Summary& s);
// "3-5,9" from {3,4,5,9}.
std::string ranges(const std::vector<int>& lines);

}  // namespace mxtb::app::coverage
