#include "host/report/report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

namespace mxtb::host::report {

using nlohmann::json;

namespace {

bool known_source(const std::string& s) {
  for (const char* k : kSources)
    if (s == k) return true;
  return false;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

const char* source_colour(const std::string& source) {
  if (source == "rtl") return "#1f77b4";
  if (source == "firmware") return "#ff7f0e";
  if (source == "host") return "#2ca02c";
  if (source == "measured") return "#d62728";
  if (source == "modeled") return "#9467bd";
  return "#7f7f7f";
}

int source_tid(const std::string& source) {
  for (size_t i = 0; i < std::size(kSources); ++i)
    if (source == kSources[i]) return static_cast<int>(i) + 1;
  return static_cast<int>(std::size(kSources)) + 1;
}

}  // namespace

std::vector<std::string> check_timeline(const Timeline& t, double tol) {
  std::vector<std::string> p;
  if (t.phases.empty() && !t.degraded) p.push_back("no phases: the failover left no timeline");
  double prev_start = t.failure_ns, prev_end = t.failure_ns;
  std::string prev = "the failure";
  for (const auto& ph : t.phases) {
    const std::string name = ph.name.empty() ? "(unnamed)" : ph.name;
    if (ph.name.empty()) p.push_back("a phase has no name");
    if (!known_source(ph.source)) p.push_back(fmt::format("phase {}: unknown source '{}'", name, ph.source));
    if (!std::isfinite(ph.start_ns) || !std::isfinite(ph.end_ns)) {
      p.push_back(fmt::format("phase {}: timestamps not finite", name));
      continue;
    }
    if (ph.end_ns < ph.start_ns)
      p.push_back(fmt::format("phase {}: negative duration ({} ns)", name, ph.end_ns - ph.start_ns));
    if (ph.start_ns < prev_start - tol)
      p.push_back(fmt::format("phase {}: out of order, starts at {} ns before {} ({} ns)", name, ph.start_ns, prev, prev_start));
    else if (ph.start_ns > prev_end + tol)
      p.push_back(fmt::format("phase {}: gap of {} ns after {}", name, ph.start_ns - prev_end, prev));
    else if (ph.start_ns < prev_end - tol)
      p.push_back(fmt::format("phase {}: overlaps {} by {} ns", name, prev, prev_end - ph.start_ns));
    prev_start = ph.start_ns;
    prev_end = ph.end_ns;
    prev = "phase " + name;
  }
  if (!t.phases.empty()) {
    double span = t.phases.back().end_ns - t.failure_ns;
    if (std::fabs(t.total_ns - span) > tol)
      p.push_back(fmt::format("total_ns {} is not failure to the end of the last phase ({})", t.total_ns, span));
  }
  for (const auto& ph : t.beside) {
    const std::string name = ph.name.empty() ? "(unnamed)" : ph.name;
    if (ph.name.empty()) p.push_back("a phase beside the path has no name");
    if (!known_source(ph.source)) p.push_back(fmt::format("phase {} (beside the path): unknown source '{}'", name, ph.source));
    if (!std::isfinite(ph.start_ns) || !std::isfinite(ph.end_ns) || ph.end_ns < ph.start_ns)
      p.push_back(fmt::format("phase {} (beside the path): not an interval ({} to {} ns)", name, ph.start_ns, ph.end_ns));
    else if (ph.start_ns < t.failure_ns - tol)
      p.push_back(fmt::format("phase {} (beside the path): starts at {} ns, before the failure ({} ns)", name, ph.start_ns,
                              t.failure_ns));
  }
  for (const auto& a : t.alternatives) {
    const TimelinePhase* ph = find_phase(t, a.phase);
    if (!known_source(a.source)) p.push_back(fmt::format("alternative {}: unknown source '{}'", a.name, a.source));
    if (!ph)
      p.push_back(fmt::format("alternative {}: replaces phase {}, which the timeline lacks", a.name, a.phase));
    else if (a.phase_ns < 0 || std::fabs(a.total_ns - (t.total_ns - ph->duration_ns() + a.phase_ns)) > tol)
      p.push_back(fmt::format("alternative {}: total {} ns is not the timeline's {} ns with {} at {} ns instead of {} ns",
                              a.name, a.total_ns, t.total_ns, a.phase, a.phase_ns, ph->duration_ns()));
  }
  if (t.hardware_ns < 0 || t.hardware_ns > t.total_ns + tol)
    p.push_back(fmt::format("hardware_ns {} is outside [0, total_ns {}]", t.hardware_ns, t.total_ns));
  if (!t.degraded && !t.phases.empty() && t.hardware_ns <= 0)
    p.push_back("hardware_ns missing: no spare link came up");
  return p;
}

void append_phase(Timeline& t, std::string name, double duration_ns, std::string source, std::string detail) {
  double start = t.phases.empty() ? t.failure_ns : t.phases.back().end_ns;
  t.phases.push_back({std::move(name), start, start + duration_ns, std::move(source), std::move(detail)});
  t.total_ns = t.phases.back().end_ns - t.failure_ns;
}

void add_beside(Timeline& t, std::string name, double start_ns, double end_ns, std::string source, std::string detail) {
  t.beside.push_back({std::move(name), start_ns, end_ns, std::move(source), std::move(detail)});
}

const TimelinePhase* find_phase(const Timeline& t, const std::string& phase) {
  for (const auto& p : t.phases)
    if (p.name == phase) return &p;
  return nullptr;
}

double swap_relaunch_ns(const Timeline& t) {
  const TimelinePhase* restore = find_phase(t, "state_restore");
  if (!restore) return t.total_ns;
  double ns = t.total_ns - restore->duration_ns();
  // A hot spare's re-form ran beside the restore, which hid what the restore outlasted: with no
  // state to move, all of it from the restore's start would be on the path.
  for (const auto& b : t.beside)
    if (b.name == "hot_spare_reform")
      ns += std::max(0.0, b.end_ns - restore->start_ns) - std::max(0.0, b.end_ns - restore->end_ns);
  return ns;
}

double swap_relaunch_ns(const Timeline& t, const Alternative& a) {
  // An alternative is a relaunch, after the restore: none of it ran beside it.
  const TimelinePhase* restore = find_phase(t, "state_restore");
  return a.total_ns - (restore ? restore->duration_ns() : 0);
}

std::string human_duration(double ns) {
  double a = std::fabs(ns);
  auto three = [](double v, const char* unit) {
    double av = std::fabs(v);
    int decimals = av >= 100 ? 0 : av >= 10 ? 1 : 2;
    return fmt::format("{:.{}f} {}", v, decimals, unit);
  };
  if (a < 1e3) return fmt::format("{:.0f} ns", ns);
  if (a < 1e6) return three(ns / 1e3, "us");
  if (a < 1e9) return three(ns / 1e6, "ms");
  return three(ns / 1e9, "s");
}

std::string format_table(const Timeline& t) {
  std::string out = fmt::format("failover of scenario {} (seed {}, time mode {}): simulated time from the failure\n",
                                t.scenario, t.seed, t.time_mode);
  out += fmt::format("  {:<22} {:>10} {:>10}  {}\n", "phase", "start", "duration", "source");
  for (const auto& p : t.phases)
    out += fmt::format("  {:<22} {:>10} {:>10}  {}{}\n", p.name, human_duration(p.start_ns - t.failure_ns),
                       human_duration(p.duration_ns()), p.source, p.board >= 0 ? fmt::format(", server {}", p.board) : "");
  std::vector<TimelinePhase> beside = t.beside;  // in the order they started
  std::stable_sort(beside.begin(), beside.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  for (const auto& p : beside)
    out += fmt::format("  {:<22} {:>10} {:>10}  {}, beside the path: {}\n", p.name, human_duration(p.start_ns - t.failure_ns),
                       human_duration(p.duration_ns()), p.source, p.detail);
  if (t.degraded) out += "  DEGRADED: no spare was left; the tenant runs without the failed XPU\n";
  if (!t.phases.empty()) {
    out += fmt::format("  {:<22} {:>10} {:>10}  failure to the last spare link Active\n", "hardware", "",
                       human_duration(t.hardware_ns));
    out += fmt::format("  {:<22} {:>10} {:>10}  failure to the end of the last phase\n", "total", "", human_duration(t.total_ns));
    const double swap = swap_relaunch_ns(t);
    out += fmt::format("  {:<22} {:>10} {:>10}  the path with no state to restore, {} the prototype's {} ({:.1f} %), "
                       "which swapped circuits and relaunched its job, moving no state\n",
                       "swap_relaunch", "", human_duration(swap), swap <= t.target_ns ? "within" : "OVER",
                       human_duration(t.target_ns), swap / t.target_ns * 100);
  }
  for (const auto& a : t.alternatives) {
    const double swap = swap_relaunch_ns(t, a);
    out += fmt::format("  {:<22} {:>10} {:>10}  {} instead: {} {} ({}); without state_restore {}, {} the target ({:.1f} %)\n",
                       "total, " + a.name, "", human_duration(a.total_ns), a.name, a.phase, human_duration(a.phase_ns),
                       a.source, human_duration(swap), swap <= t.target_ns ? "within" : "OVER", swap / t.target_ns * 100);
  }
  if (t.projection)
    out += fmt::format("  projection, not emulated: state_restore at {} Gb/s lanes {} ({})\n", t.projection->lane_gbps,
                       human_duration(t.projection->state_restore_ns), t.projection->detail);
  for (const auto& n : t.notes) out += fmt::format("  note: {}\n", n);
  return out;
}

json to_json(const Timeline& t) {
  auto phase_list = [](const std::vector<TimelinePhase>& list) {
    json out = json::array();
    for (const auto& p : list)
    {
      json ph{{"name", p.name}, {"start_ns", p.start_ns}, {"end_ns", p.end_ns}, {"duration_ns", p.duration_ns()},
              {"source", p.source}, {"detail", p.detail}};
      if (p.board >= 0) ph["board"] = p.board;
      out.push_back(ph);
    }
    return out;
  };
  json alternatives = json::array();
  for (const auto& a : t.alternatives)
    alternatives.push_back({{"name", a.name}, {"phase", a.phase}, {"phase_ns", a.phase_ns}, {"total_ns", a.total_ns},
                            {"source", a.source}, {"detail", a.detail}, {"swap_relaunch_ns", swap_relaunch_ns(t, a)},
                            {"within_target", swap_relaunch_ns(t, a) <= t.target_ns}});
  json projection = nullptr;
  if (t.projection)
    projection = {{"lane_gbps", t.projection->lane_gbps}, {"state_restore_ns", t.projection->state_restore_ns},
                  {"detail", t.projection->detail}};
  return json{{"time_mode", t.time_mode},
              {"scenario", t.scenario},
              {"seed", t.seed},
              {"degraded", t.degraded},
              {"notes", t.notes},
              {"failover", {{"failure_ns", t.failure_ns}, {"total_ns", t.total_ns}, {"hardware_ns", t.hardware_ns},
                            {"swap_relaunch_ns", swap_relaunch_ns(t)}, {"target_ns", t.target_ns},
                            {"within_target", swap_relaunch_ns(t) <= t.target_ns},
                            {"phases", phase_list(t.phases)}, {"beside", phase_list(t.beside)},
                            {"alternatives", alternatives}, {"figures", t.figures}, {"projection", projection},
                            {"blast_radius", t.blast_radius}}},
              {"problems", check_timeline(t)}};
}

Timeline timeline_from_json(const json& j, const std::string& source) {
  auto need = [&](const json& obj, const char* key, const std::string& where) -> const json& {
    if (!obj.is_object() || !obj.contains(key))
      throw std::runtime_error(fmt::format("{}: {}.{}: missing", source, where, key));
    return obj.at(key);
  };
  try {
    Timeline t;
    t.time_mode = need(j, "time_mode", "$").get<std::string>();
    t.scenario = need(j, "scenario", "$").get<std::string>();
    t.seed = need(j, "seed", "$").get<uint64_t>();
    t.degraded = j.value("degraded", false);
    if (j.contains("notes")) t.notes = j.at("notes").get<std::vector<std::string>>();
    const json& f = need(j, "failover", "$");
    t.failure_ns = need(f, "failure_ns", "$.failover").get<double>();
    t.total_ns = need(f, "total_ns", "$.failover").get<double>();
    t.hardware_ns = need(f, "hardware_ns", "$.failover").get<double>();
    t.target_ns = f.value("target_ns", t.target_ns);
    auto read_phases = [&](const json& ps, const char* key, std::vector<TimelinePhase>& into) {
      for (size_t i = 0; i < ps.size(); ++i) {
        std::string where = fmt::format("$.failover.{}[{}]", key, i);
        into.push_back({need(ps[i], "name", where).get<std::string>(), need(ps[i], "start_ns", where).get<double>(),
                        need(ps[i], "end_ns", where).get<double>(), need(ps[i], "source", where).get<std::string>(),
                        ps[i].value("detail", ""), ps[i].value("board", -1)});
      }
    };
    read_phases(need(f, "phases", "$.failover"), "phases", t.phases);
    if (f.contains("beside")) read_phases(f.at("beside"), "beside", t.beside);
    if (f.contains("figures")) t.figures = f.at("figures").get<std::map<std::string, double>>();
    if (f.contains("blast_radius")) t.blast_radius = f.at("blast_radius");
    if (f.contains("alternatives"))
      for (size_t i = 0; i < f.at("alternatives").size(); ++i) {
        const json& a = f.at("alternatives")[i];
        std::string where = fmt::format("$.failover.alternatives[{}]", i);
        t.alternatives.push_back({need(a, "name", where).get<std::string>(), need(a, "phase", where).get<std::string>(),
                                  need(a, "phase_ns", where).get<double>(), need(a, "total_ns", where).get<double>(),
                                  need(a, "source", where).get<std::string>(), a.value("detail", "")});
      }
    if (f.contains("projection") && !f.at("projection").is_null()) {
      const json& p = f.at("projection");
      t.projection = Projection{need(p, "lane_gbps", "$.failover.projection").get<double>(),
                                need(p, "state_restore_ns", "$.failover.projection").get<double>(), p.value("detail", "")};
    }
    return t;
  } catch (const json::exception& e) {
    throw std::runtime_error(fmt::format("{}: not a failover report: {}", source, e.what()));
  }
}

json chrome_trace(const Timeline& t) {
  // Time origin: the failure (ts 0), in microseconds as the format wants; one thread (row) per
  // source so rtl, firmware, host and modeled phases sit on separate tracks.
  json ev = json::array();
  ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 0},
                {"args", {{"name", fmt::format("mxtb failover: {} (seed {}, {})", t.scenario, t.seed, t.time_mode)}}}});
  for (const char* s : kSources) {
    ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", source_tid(s)}, {"args", {{"name", s}}}});
    ev.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 1}, {"tid", source_tid(s)},
                  {"args", {{"sort_index", source_tid(s)}}}});
  }
  ev.push_back({{"name", "XPU failure"}, {"ph", "i"}, {"s", "g"}, {"pid", 1}, {"tid", source_tid("rtl")}, {"ts", 0.0}});
  for (const auto& p : t.phases)
    ev.push_back({{"name", p.name}, {"cat", p.source}, {"ph", "X"}, {"pid", 1}, {"tid", source_tid(p.source)},
                  {"ts", (p.start_ns - t.failure_ns) / 1000}, {"dur", p.duration_ns() / 1000},
                  {"args", {{"start_ns", p.start_ns}, {"end_ns", p.end_ns}, {"detail", p.detail}}}});
  for (const auto& p : t.beside)
    ev.push_back({{"name", p.name}, {"cat", "beside the path"}, {"ph", "X"}, {"pid", 1}, {"tid", source_tid(p.source)},
                  {"ts", (p.start_ns - t.failure_ns) / 1000}, {"dur", p.duration_ns() / 1000},
                  {"args", {{"start_ns", p.start_ns}, {"end_ns", p.end_ns}, {"detail", p.detail}, {"beside_the_path", true}}}});
  if (t.hardware_ns > 0)
    ev.push_back({{"name", "last spare link Active"}, {"ph", "i"}, {"s", "g"}, {"pid", 1}, {"tid", source_tid("rtl")},
                  {"ts", t.hardware_ns / 1000}});
  return json{{"traceEvents", ev}, {"displayTimeUnit", "ns"},
              {"otherData", {{"scenario", t.scenario}, {"seed", t.seed}, {"time_mode", t.time_mode},
                             {"time_origin", "the XPU failure"}, {"total_ns", t.total_ns}, {"hardware_ns", t.hardware_ns}}}};
}

std::string gantt_svg(const Timeline& t) {
  // Phases run from nanoseconds (detect) to hundreds of milliseconds (modeled): on a linear axis
  // the hardware phases would be invisible. The axis is logarithmic in time since the failure, one
  // row per phase, every bar at least 2 px wide, and each row's label carries the exact duration.
  // Phases beside the critical path get rows of their own below it, drawn pale.
  std::vector<std::pair<const TimelinePhase*, bool>> rows;
  for (const auto& p : t.phases) rows.push_back({&p, false});
  for (const auto& p : t.beside) rows.push_back({&p, true});
  const double label_w = 330, x0 = label_w + 10, x1 = 980, row_h = 24, top = 64;
  const double width = x1 + 30;
  const double height = top + row_h * static_cast<double>(rows.size()) + 80;
  double shortest = 1e18, longest = std::max(t.total_ns, t.target_ns);
  for (const auto& [pp, beside] : rows) {
    const TimelinePhase& p = *pp;
    double s = p.start_ns - t.failure_ns, e = p.end_ns - t.failure_ns;
    if (s > 0) shortest = std::min(shortest, s);
    if (e > 0) shortest = std::min(shortest, e);
  }
  const double lo = std::pow(10.0, std::floor(std::log10(std::max(1.0, std::min(shortest, longest)))));
  const double hi = std::pow(10.0, std::ceil(std::log10(std::max(longest, lo * 10))));
  auto x = [&](double since_failure_ns) {
    double v = std::clamp(since_failure_ns, lo, hi);
    return x0 + (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) * (x1 - x0);
  };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      width, height);
  s += fmt::format("<rect x=\"0\" y=\"0\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"white\"/>\n", width, height);
  s += fmt::format("<text x=\"10\" y=\"20\" font-size=\"15\" font-weight=\"bold\">Failover of {} (seed {}, time mode {}): "
                   "total {}, hardware {}{}</text>\n",
                   xml_escape(t.scenario), t.seed, xml_escape(t.time_mode), human_duration(t.total_ns),
                   human_duration(t.hardware_ns), t.degraded ? ", DEGRADED" : "");
  s += "<text x=\"10\" y=\"38\" fill=\"#555\">simulated time since the XPU failure, logarithmic axis; bars start "
       "and end at their times, durations are in the labels</text>\n";
  // Legend.
  double lx = x0;
  for (const char* src : kSources) {
    s += fmt::format("<rect x=\"{:.1f}\" y=\"44\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{:.1f}\" y=\"55\">{}</text>\n",
                     lx, source_colour(src), lx + 16, src);
    lx += 90;
  }
  // Decade grid and axis labels.
  const double axis_y = top + row_h * static_cast<double>(rows.size()) + 6;
  for (double d = lo; d <= hi * 1.0001; d *= 10) {
    double gx = x(d);
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.0f}\" x2=\"{0:.1f}\" y2=\"{2:.0f}\" stroke=\"#ddd\"/>\n", gx, top - 4, axis_y);
    std::string label = human_duration(d);  // decades: "1 us", not "1.00 us"
    for (const char* zeros : {".00 ", ".0 "})
      if (auto at = label.find(zeros); at != std::string::npos) label.erase(at, std::string(zeros).size() - 1);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.0f}\" text-anchor=\"middle\">{}</text>\n", gx, axis_y + 16, label);
  }
  s += fmt::format("<line x1=\"{0:.0f}\" y1=\"{1:.0f}\" x2=\"{2:.0f}\" y2=\"{1:.0f}\" stroke=\"black\"/>\n", x0, axis_y, x1);
  // One row per phase.
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& [pp, beside] = rows[i];
    const TimelinePhase& p = *pp;
    double y = top + row_h * static_cast<double>(i);
    double bx0 = x(p.start_ns - t.failure_ns), bx1 = x(p.end_ns - t.failure_ns);
    double w = std::max(2.0, bx1 - bx0);
    s += fmt::format("<text x=\"10\" y=\"{:.0f}\"{}>{} {} ({}{})</text>\n", y + 15, beside ? " fill=\"#777\"" : "",
                     xml_escape(p.name), human_duration(p.duration_ns()), xml_escape(p.source), beside ? ", beside" : "");
    s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"{:.0f}\" fill=\"{}\"{}><title>{}: {} from "
                     "{} ({}){}{}</title></rect>\n",
                     bx0, y + 3, w, row_h - 6, source_colour(p.source), beside ? " fill-opacity=\"0.4\"" : "",
                     xml_escape(p.name), human_duration(p.duration_ns()),
                     human_duration(p.start_ns - t.failure_ns), xml_escape(p.source), p.detail.empty() ? "" : ": ",
                     xml_escape(p.detail));
  }
  // Markers: the hardware's end and the target.
  auto marker = [&](double at_ns, const char* colour, const std::string& label, double dy) {
    double mx = x(at_ns);
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.0f}\" x2=\"{0:.1f}\" y2=\"{2:.0f}\" stroke=\"{3}\" stroke-dasharray=\"4 3\"/>\n",
                     mx, top - 4, axis_y, colour);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.0f}\" fill=\"{}\" text-anchor=\"end\">{}</text>\n", mx - 3, axis_y + 34 + dy,
                     colour, xml_escape(label));
  };
  if (t.hardware_ns > 0) marker(t.hardware_ns, "#1f77b4", "hardware " + human_duration(t.hardware_ns), 0);
  marker(t.target_ns, "#d62728", "target " + human_duration(t.target_ns), 14);
  s += "</svg>\n";
  return s;
}

std::vector<std::string> write_report_files(const Timeline& t, const std::string& dir) {
  std::filesystem::create_directories(dir);
  std::vector<std::string> written;
  auto put = [&](const std::string& name, const std::string& text) {
    std::string path = (std::filesystem::path(dir) / name).string();
    std::ofstream out(path);
    if (!out || !(out << text)) throw std::runtime_error(fmt::format("cannot write {}", path));
    written.push_back(path);
  };
  put("report.json", to_json(t).dump(2) + "\n");
  put("timeline.json", chrome_trace(t).dump(1) + "\n");
  put("timeline.svg", gantt_svg(t));
  return written;
}

}  // namespace mxtb::host::report
