#include "apps/mxtb/demo_sweep.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

namespace mxtb::app {

using host::comm::Restart;
using host::report::human_duration;
using host::report::Timeline;
using host::report::TimelinePhase;
using nlohmann::json;

SweepInputs sweep_inputs(const Timeline& t) {
  const TimelinePhase* restore = host::report::find_phase(t, "state_restore");
  const TimelinePhase* reform = host::report::find_phase(t, "communicator_reform");
  if (!restore) throw std::runtime_error("the run has no state_restore phase (degraded, or no state to restore)");
  if (!reform) throw std::runtime_error("the run has no communicator_reform phase (the ranks were not run: --restart none, or a scenario with no job)");
  const TimelinePhase* hot = nullptr;
  const TimelinePhase* abort = nullptr;
  for (const auto& p : t.beside) {
    if (p.name == "hot_spare_reform") hot = &p;
    if (p.name == "ranks_abort") abort = &p;
  }
  const host::report::Alternative* relaunch = nullptr;
  for (const auto& a : t.alternatives)
    if (a.name == host::comm::to_string(Restart::Relaunch)) relaunch = &a;
  if (!hot || !relaunch)
    throw std::runtime_error("the run did not measure both strategies (the hot spare on the path, the relaunch beside it: "
                             "--restart both)");
  auto figure = [&](const char* name) {
    auto it = t.figures.find(name);
    if (it == t.figures.end()) throw std::runtime_error(fmt::format("the run's report has no figure '{}'", name));
    return it->second;
  };
  SweepInputs in;
  in.before_restore_ns = restore->start_ns - t.failure_ns;
  in.after_reform_ns = t.failure_ns + t.total_ns - reform->end_ns;
  in.efficiency = figure("restore_efficiency");
  in.efficiency_measured = figure("restore_efficiency_measured") != 0;
  in.ranks_abort_ns = abort ? abort->end_ns - t.failure_ns : 0;
  in.hot_spare_reform_ns = hot->duration_ns();
  in.relaunch_reform_ns = relaunch->phase_ns;
  in.state_bytes = figure("state_bytes");
  in.lane_gbps = figure("lane_gbps");
  in.lanes = static_cast<int>(figure("restore_circuits"));
  in.target_ns = t.target_ns;
  if (!(in.efficiency > 0 && in.efficiency <= 1))
    throw std::runtime_error(fmt::format("the run's restore efficiency {} is outside (0, 1]", in.efficiency));
  return in;
}

SweepPoint sweep_point(const SweepInputs& in, double state_gib, double lane_gbps, int lanes, Restart r) {
  if (!(state_gib > 0) || !(lane_gbps > 0) || lanes < 1)
    throw std::invalid_argument(fmt::format("sweep point {} GiB, {} Gb/s, {} lanes: each must be positive", state_gib,
                                            lane_gbps, lanes));
  SweepPoint p;
  p.state_gib = state_gib;
  p.lane_gbps = lane_gbps;
  p.lanes = lanes;
  p.restart = r;
  p.failover_ns = in.before_restore_ns;
  // Gb/s over 8 is bytes per ns.
  p.restore_ns = state_gib * double(1ull << 30) / (lanes * lane_gbps / 8 * in.efficiency);
  // Times from the failure; the re-form laid out as the manager's timeline does.
  p.reform_ns = host::comm::place_reform(r, in.ranks_abort_ns, p.failover_ns, p.failover_ns + p.restore_ns,
                                         r == Restart::HotSpare ? in.hot_spare_reform_ns : in.relaunch_reform_ns)
                    .on_path_ns;
  p.rest_ns = in.after_reform_ns;
  p.total_ns = p.failover_ns + p.restore_ns + p.reform_ns + p.rest_ns;
  std::pair<double, const char*> phases[] = {{p.failover_ns, "failover"},
                                             {p.restore_ns, "state_restore"},
                                             {p.reform_ns, "communicator_reform"},
                                             {p.rest_ns, "first_collective"}};
  p.largest = std::max_element(std::begin(phases), std::end(phases))->second;
  return p;
}

std::vector<SweepPoint> sweep(const SweepInputs& in, const SweepGrid& grid) {
  std::vector<SweepPoint> out;
  for (Restart r : {Restart::HotSpare, Restart::Relaunch})
    for (double gib : grid.state_gib)
      for (double gbps : grid.lane_gbps)
        for (int lanes : grid.lanes) out.push_back(sweep_point(in, gib, gbps, lanes, r));
  return out;
}

std::string format_sweep(const SweepInputs& in, const std::vector<SweepPoint>& points) {
  std::string out = fmt::format(
      "what-if sweep, from this run: failover {} before the restore, first collective {} after the re-form; restore at "
      "{:.3f} payload efficiency ({}); hot spare re-form {} (beside the restore), relaunch {} (after it)\n",
      human_duration(in.before_restore_ns), human_duration(in.after_reform_ns), in.efficiency,
      in.efficiency_measured ? "measured on the RTL links" : "not measured: the lanes' raw rate",
      human_duration(in.hot_spare_reform_ns), human_duration(in.relaunch_reform_ns));
  // Two views of the grid: state size by lanes at the run's lane rate, and lane rate by strategy
  // with all of the run's lanes; the JSON holds every point.
  auto find = [&](double gib, double gbps, int lanes, Restart r) -> const SweepPoint* {
    for (const auto& p : points)
      if (p.state_gib == gib && p.lane_gbps == gbps && p.lanes == lanes && p.restart == r) return &p;
    return nullptr;
  };
  std::vector<double> gibs;
  std::vector<int> lanes;
  std::vector<double> rates;
  for (const auto& p : points) {
    if (std::find(gibs.begin(), gibs.end(), p.state_gib) == gibs.end()) gibs.push_back(p.state_gib);
    if (std::find(lanes.begin(), lanes.end(), p.lanes) == lanes.end()) lanes.push_back(p.lanes);
    if (std::find(rates.begin(), rates.end(), p.lane_gbps) == rates.end()) rates.push_back(p.lane_gbps);
  }
  const int most = lanes.empty() ? 0 : *std::max_element(lanes.begin(), lanes.end());
  for (Restart r : {Restart::HotSpare, Restart::Relaunch}) {
    out += fmt::format("  {:<40}", fmt::format("{}: total at {} Gb/s per lane", host::comm::to_string(r), in.lane_gbps));
    for (int l : lanes) out += fmt::format(" {:>10}", fmt::format("{} lane{}", l, l == 1 ? "" : "s"));
    out += fmt::format("   largest phase at {} lanes\n", most);
    for (double g : gibs) {
      out += fmt::format("  {:<40}", fmt::format("{:>6} GiB", g));
      for (int l : lanes) {
        const SweepPoint* p = find(g, in.lane_gbps, l, r);
        out += fmt::format(" {:>10}", p ? human_duration(p->total_ns) : "-");
      }
      const SweepPoint* at_most = find(g, in.lane_gbps, most, r);
      out += at_most ? fmt::format("   {}\n", at_most->largest) : "\n";
    }
  }
  const double run_gib = in.state_bytes / double(1ull << 30);
  out += fmt::format("  {:<40}", fmt::format("total by lane rate, {} GiB over {} lanes", run_gib, in.lanes));
  for (double g : rates) out += fmt::format(" {:>10}", fmt::format("{} Gb/s", g));
  out += "\n";
  for (Restart r : {Restart::HotSpare, Restart::Relaunch}) {
    out += fmt::format("  {:<40}", host::comm::to_string(r));
    for (double g : rates) {
      SweepPoint p = sweep_point(in, run_gib, g, in.lanes, r);
      out += fmt::format(" {:>10}", human_duration(p.total_ns));
    }
    out += "\n";
  }
  return out;
}

json sweep_json(const SweepInputs& in, const std::vector<SweepPoint>& points) {
  json pts = json::array();
  for (const auto& p : points)
    pts.push_back({{"state_gib", p.state_gib}, {"lane_gbps", p.lane_gbps}, {"lanes", p.lanes},
                   {"restart", host::comm::to_string(p.restart)}, {"failover_ns", p.failover_ns},
                   {"state_restore_ns", p.restore_ns}, {"communicator_reform_ns", p.reform_ns},
                   {"first_collective_ns", p.rest_ns}, {"total_ns", p.total_ns}, {"largest_phase", p.largest},
                   {"total_within_target", p.total_ns <= in.target_ns}});  // the whole path, state included: a what-if
  return json{{"inputs",
               {{"before_restore_ns", in.before_restore_ns}, {"after_reform_ns", in.after_reform_ns},
                {"restore_efficiency", in.efficiency}, {"restore_efficiency_measured", in.efficiency_measured},
                {"ranks_abort_ns", in.ranks_abort_ns}, {"hot_spare_reform_ns", in.hot_spare_reform_ns}, {"relaunch_reform_ns", in.relaunch_reform_ns},
                {"state_bytes", in.state_bytes}, {"lane_gbps", in.lane_gbps}, {"lanes", in.lanes},
                {"target_ns", in.target_ns}}},
              {"points", pts}};
}

}  // namespace mxtb::app
