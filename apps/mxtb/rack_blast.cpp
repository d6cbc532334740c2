#include "apps/mxtb/rack_blast.h"

#include "apps/mxtb/plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <vector>

namespace mxtb::app {

using nlohmann::json;

namespace {

const char* const kCases[] = {"spare in the same server", "spare in another server", "no spare", "migration (static torus)"};

struct CaseFigures {
  size_t failovers = 0, committed = 0, clean = 0, with_job = 0;
  std::vector<double> boards, xpus, outside, lanes, placed_us, path_us, aborted, restarted, state_ms;
  // The outside XPUs of clean failovers in which no board's routing moved a circuit that stayed
  // (every ReportWord CircuitsMoved read and 0): what a rearrangement of a mesh does not explain.
  std::vector<double> outside_no_mesh_moved;
  uint64_t words_lost = 0, scoreboard_errors = 0, wrong = 0;
  // Failovers with other tenants beside the failing one (their jobs running), and those jobs'
  // collectives aborted over them: the several-tenant invariant wants 0.
  size_t beside_others = 0;
  uint64_t others_aborted = 0;
};

double pct(const std::vector<double>& v, double p) { return v.empty() ? 0 : host::regress::percentile_nearest_rank(v, p); }
double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}
json spread(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  return {{"n", v.size()}, {"mean", mean(v)}, {"p50", pct(v, 50)}, {"p99", pct(v, 99)}, {"max", *std::max_element(v.begin(), v.end())}};
}

// One failover record of a seed (cmd_rack_failover.cpp, record_json) into its case. The blast
// radius and times count clean failovers only: committed, with no second XPU dying and no board
// going silent during it (those add their own XPUs and waits).
void add(const json& rec, std::map<std::string, CaseFigures>& cases) {
  const bool migration = rec.value("baseline", "") == "migration";
  const std::string name = migration ? kCases[3] : rec["spare"].is_null() ? kCases[2] : rec.value("same_server", false) ? kCases[0] : kCases[1];
  CaseFigures& c = cases[name];
  ++c.failovers;
  if (rec["outcome"] != (migration ? "migrated" : "committed")) return;
  ++c.committed;
  if (rec.contains("killed_during_transaction") || rec.contains("silent_board") || rec["blast_radius"].is_null()) return;
  ++c.clean;
  const json& b = rec["blast_radius"];
  c.boards.push_back(static_cast<double>(b["boards_touched"].size()));
  c.xpus.push_back(static_cast<double>(b["xpus_left_active"].size()));
  c.outside.push_back(static_cast<double>(b["xpus_left_active_outside_circuits"].size()));
  const json moved = rec.value("circuits_moved_by_server", json::array());
  if (!moved.empty() && std::all_of(moved.begin(), moved.end(), [](const json& n) { return n.get<uint64_t>() == 0; }))
    c.outside_no_mesh_moved.push_back(static_cast<double>(b["xpus_left_active_outside_circuits"].size()));
  double lanes = 0;
  for (const auto& n : b["lanes_left_active_by_server"]) lanes += n.get<double>();
  c.lanes.push_back(lanes);
  c.words_lost += b["words_lost"].get<uint64_t>();
  // Ranks started anew: Morphlux's spare alone (the survivors keep running), every rank of a
  // migrated slice.
  c.restarted.push_back(migration ? b["ranks_relaunched"].get<double>() : 1.0);
  if (rec.contains("state")) c.state_ms.push_back(rec["state"]["ns"].get<double>() / 1e6);
  c.scoreboard_errors += b["scoreboard_errors"].get<uint64_t>();
  if (!rec["placed_ns"].is_null()) c.placed_us.push_back(rec["placed_ns"].get<double>() / 1e3);
  if (b.contains("other_tenants_collectives_aborted")) {
    ++c.beside_others;
    c.others_aborted += b["other_tenants_collectives_aborted"].get<uint64_t>();
  }
  if (!rec["job"].is_null()) {
    ++c.with_job;
    c.aborted.push_back(rec["job"]["collectives_aborted"].get<double>());
    c.wrong += rec["job"]["collectives_wrong"].get<uint64_t>();
    if (!rec["total_ns"].is_null()) c.path_us.push_back(rec["total_ns"].get<double>() / 1e3);
  }
}

// The clean failovers in which no mesh moved a circuit that stayed, and those of them that still
// left an XPU outside the dead XPU's circuits out of Active (a lane fault, or a cause to find).
json no_mesh_moved(const std::vector<double>& outside) {
  if (outside.empty()) return nullptr;
  const auto with = std::count_if(outside.begin(), outside.end(), [](double n) { return n > 0; });
  return {{"failovers", outside.size()}, {"with_outside_xpus", with}, {"outside_xpus_max", *std::max_element(outside.begin(), outside.end())}};
}

}  // namespace

json rack_blast_summary(const host::regress::RegressResult& r) {
  std::map<std::string, CaseFigures> cases;
  size_t seeds = 0;
  for (const auto& run : r.runs) {
    std::ifstream f(run.json_path);
    if (!f) continue;
    json seed;
    try {
      f >> seed;
    } catch (const json::exception&) {
      continue;
    }
    if (!seed.contains("failovers") || !seed.contains("rack")) continue;  // a rack seed's (mxtb rack-failover)
    ++seeds;
    for (const auto& rec : seed["failovers"]) add(rec, cases);
  }
  json out = json::array();
  for (const char* name : kCases) {
    const CaseFigures& c = cases[name];
    out.push_back({{"case", name},
                   {"failovers", c.failovers},
                   {"committed", c.committed},
                   {"clean", c.clean},
                   {"with_job", c.with_job},
                   {"boards_touched", spread(c.boards)},
                   {"xpus_left_active", spread(c.xpus)},
                   {"xpus_left_active_outside_circuits", spread(c.outside)},
                   {"no_mesh_moved", no_mesh_moved(c.outside_no_mesh_moved)},
                   {"lanes_left_active", spread(c.lanes)},
                   {"collectives_aborted", spread(c.aborted)},
                   {"ranks_restarted", spread(c.restarted)},
                   {"state_ms_modeled", spread(c.state_ms)},
                   {"collectives_wrong", c.wrong},
                   {"beside_other_tenants", c.beside_others},
                   {"other_tenants_collectives_aborted", c.others_aborted},
                   {"words_lost", c.words_lost},
                   {"scoreboard_errors", c.scoreboard_errors},
                   {"placed_us", spread(c.placed_us)},
                   {"first_collective_us", spread(c.path_us)},
                   {"first_collective_us_all", c.path_us}});
  }
  return {{"seeds", seeds}, {"cases", out}};
}

std::string format_rack_blast(const json& summary) {
  auto f1 = [](const json& s, const char* key) { return s.is_null() ? std::string("-") : fmt::format("{:.1f}", s[key].get<double>()); };
  std::string out = fmt::format(
      "  blast radius by case ({} seeds; clean failovers: committed or migrated, no second death, no silent board)\n"
      "  {:<25} {:>9} {:>9} {:>6} {:>13} {:>11} {:>16} {:>22} {:>10} {:>9} {:>6} {:>5} {:>15} {:>17} {:>27} {:>19} {:>22}\n",
      summary["seeds"].get<size_t>(), "case", "failovers", "committed", "clean", "boards(mean)", "XPUs(mean)",
      "outside circuits", "outside, no mesh moved", "lanes p50", "aborted", "wrong", "lost", "ranks restarted", "placed p50/p99 us", "first collective p50/p99 us",
      "state ms (modeled)", "other tenants aborted");
  for (const auto& c : summary["cases"]) {
    const json& out_circ = c["xpus_left_active_outside_circuits"];
    const size_t beside = c.value("beside_other_tenants", size_t{0});
    const json unmoved = c.value("no_mesh_moved", json());
    out += fmt::format("  {:<25} {:>9} {:>9} {:>6} {:>13} {:>11} {:>16} {:>22} {:>10} {:>9} {:>6} {:>5} {:>15} {:>17} {:>27} {:>19} {:>22}\n",
                       c["case"].get<std::string>(), c["failovers"].get<size_t>(), c["committed"].get<size_t>(),
                       c["clean"].get<size_t>(), f1(c["boards_touched"], "mean"), f1(c["xpus_left_active"], "mean"),
                       out_circ.is_null() ? "-" : fmt::format("{:.0f} max", out_circ["max"].get<double>()),
                       unmoved.is_null() ? "-"
                                         : fmt::format("{} in {}", unmoved["with_outside_xpus"].get<size_t>(),
                                                       unmoved["failovers"].get<size_t>()),
                       f1(c["lanes_left_active"], "p50"), f1(c["collectives_aborted"], "mean"), c["collectives_wrong"].get<uint64_t>(),
                       c["words_lost"].get<uint64_t>(), f1(c["ranks_restarted"], "mean"),
                       c["placed_us"].is_null() ? "-" : fmt::format("{}/{}", f1(c["placed_us"], "p50"), f1(c["placed_us"], "p99")),
                       c["first_collective_us"].is_null()
                           ? "-"
                           : fmt::format("{}/{}", f1(c["first_collective_us"], "p50"), f1(c["first_collective_us"], "p99")),
                       f1(c["state_ms_modeled"], "p50"),
                       beside ? fmt::format("{} in {}", c["other_tenants_collectives_aborted"].get<uint64_t>(), beside) : "-");
  }
  return out;
}

bool plot_rack_blast(const json& summary, const std::string& svg) {
  std::vector<PlotSeries> series;
  for (const auto& c : summary["cases"]) {
    std::vector<double> t = c["first_collective_us_all"].get<std::vector<double>>();
    if (t.empty()) continue;
    std::sort(t.begin(), t.end());
    PlotSeries s{fmt::format("{} ({} failovers)", c["case"].get<std::string>(), t.size()), {}};
    for (size_t i = 0; i < t.size(); ++i) s.points.push_back({t[i], static_cast<double>(i + 1) / static_cast<double>(t.size())});
    series.push_back(std::move(s));
  }
  if (series.empty()) return false;
  return plot_series(svg,
                     "set title \"Rack failovers: the failure to the job's first verified collective on the new ring\"\n"
                     "set xlabel 'board time from the failure (us)'\nset ylabel 'fraction of failovers'\n"
                     "set yrange [0:1]\nset key bottom right\nset grid\n",
                     series, "steps lw 2");
}

}  // namespace mxtb::app
