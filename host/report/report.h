// The failover report: one Timeline (every phase from the failure to the job running again, in
// simulated time, each with its source) rendered as a printed table, report.json, a Chrome trace
// (timeline.json, opens in Perfetto) and a Gantt chart (timeline.svg). docs/report.md.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::host::report {

// rtl: timestamps from the verilated RTL (controller event log, link layers); firmware: the
// controller firmware's time in the emulator; host: host software, charged to simulated time;
// measured: wall time of real software on this host (the job's ranks re-forming their
// communicator with a real collective library), laid end to end like a modeled phase;
// modeled: a named constant from the scenario file, nothing emulated.
inline const char* const kSources[] = {"rtl", "firmware", "host", "measured", "modeled"};

struct TimelinePhase {
  std::string name;
  double start_ns = 0, end_ns = 0;  // simulated time since the emulator's reset
  std::string source;               // one of kSources
  std::string detail;               // what bounds it, or a modeled constant's source
  int board = -1;                   // in a rack, the server whose board ran it (-1: one board, or every board)
  double duration_ns() const { return end_ns - start_ns; }
};

// The same failover with one phase measured another way in the same run (the relaunch strategy
// beside the hot spare's): that phase's duration and the total it gives.
struct Alternative {
  std::string name;         // "relaunch"
  std::string phase;        // the phase it replaces ("communicator_reform")
  double phase_ns = 0;      // its duration on the critical path that way
  double total_ns = 0;      // failure to the end of the last phase that way
  std::string source;       // one of kSources
  std::string detail;
};

// The restore at a faster SerDes lane than the emulated one: the report's one projection, labelled
// as such and never summed into a total.
struct Projection {
  double lane_gbps = 0;          // the projected lane
  double state_restore_ns = 0;   // state_restore at that rate, the same circuits and payload efficiency
  std::string detail;
};

struct Timeline {
  std::string scenario;
  uint64_t seed = 0;
  std::string time_mode;
  double failure_ns = 0;             // when the XPU died
  std::vector<TimelinePhase> phases; // in order, each starting where the previous ended
  // Phases that ran beside the critical path (the collective in flight aborting, the hot spare's
  // whole re-form, the next backup armed after it): shown with their times, not summed; each
  // starts at or after the failure.
  std::vector<TimelinePhase> beside;
  std::vector<Alternative> alternatives;
  // The measured inputs of derived phases, by name (state_restore's "restore_efficiency",
  // "restore_circuits", "state_bytes", "lane_gbps"): what a what-if sweep recomputes them from.
  std::map<std::string, double> figures;
  double hardware_ns = 0;            // failure to the last spare link Active
  double total_ns = 0;               // failure to the end of the last phase
  // The Morphlux prototype's measured failover: its circuits swapped and its job relaunched (it moved
  // no state), compared with swap_relaunch_ns.
  double target_ns = 1.2e9;
  std::optional<Projection> projection;  // state_restore at a faster lane (none: no restore)
  bool degraded = false;             // no spare was left: the tenant runs without one
  // The failure's blast radius where it is measured (a rack's failover: the boards touched, the
  // XPUs whose links left Active, the words lost, the job's collectives aborted and wrong;
  // docs/rack.md): one JSON object, written and read back as it is. Null elsewhere.
  nlohmann::json blast_radius;
  std::vector<std::string> notes;    // what was not emulated, the spare choice, ...
};

// The phases must start at the failure, follow one another without gaps or overlaps (within
// `tolerance_ns`), have non-negative durations and known sources, and add up to total_ns; the
// hardware part must end inside the total; every phase beside the path must start at or after the
// failure, and every alternative must differ from the total only by its phase. One line per problem; empty
// when consistent.
std::vector<std::string> check_timeline(const Timeline& t, double tolerance_ns = 0.5);

// Appends a phase that starts where the last one ended (at the failure when there is none).
void append_phase(Timeline& t, std::string name, double duration_ns, std::string source, std::string detail);
// Records a phase that ran beside the critical path, from start_ns to end_ns (simulated time).
void add_beside(Timeline& t, std::string name, double start_ns, double end_ns, std::string source, std::string detail);
// The phase named `phase` on the path, or nullptr.
const TimelinePhase* find_phase(const Timeline& t, const std::string& phase);
// The path without state_restore: what the prototype's 1.2 s covers (the circuits swapped, the job
// relaunched; it restored no state), the part compared with target_ns. A hot spare's re-form that
// the restore hid (beside it, hot_spare_reform) counts from the restore's start. For an
// alternative (a relaunch, after the restore): its total less the restore.
double swap_relaunch_ns(const Timeline& t);
double swap_relaunch_ns(const Timeline& t, const Alternative& a);


// "812 ns", "3.20 us", "45.1 ms", "1.23 s" (plain "us": terminals and logs without UTF-8).
std::string human_duration(double ns);

std::string format_table(const Timeline& t);     // the printed table
nlohmann::json to_json(const Timeline& t);       // report.json
Timeline timeline_from_json(const nlohmann::json& j, const std::string& source);  // its inverse; throws std::runtime_error naming source
nlohmann::json chrome_trace(const Timeline& t);  // timeline.json
std::string gantt_svg(const Timeline& t);        // timeline.svg

// Writes report.json, timeline.json and timeline.svg into dir (created if missing); returns the
// paths written.
std::vector<std::string> write_report_files(const Timeline& t, const std::string& dir);

}  // namespace mxtb::host::report
