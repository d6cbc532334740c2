#include "apps/mxtb/coverage_report.h"

#include "apps/mxtb/args.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

namespace mxtb::app::coverage {

namespace {

// The key of one point: fields separated by \x01, each name\x02value.
std::map<std::string, std::string> key_fields(const std::string& key) {
  std::map<std::string, std::string> f;
  size_t at = 0;
  while (at <= key.size()) {
    size_t end = key.find('\x01', at);
    if (end == std::string::npos) end = key.size();
    std::string field = key.substr(at, end - at);
    if (size_t sep = field.find('\x02'); sep != std::string::npos) f[field.substr(0, sep)] = field.substr(sep + 1);
    at = end + 1;
  }
  return f;
}

int to_int(const std::string& s, const std::string& where) {
  try {
    size_t used = 0;
    int v = std::stoi(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  throw InputError(fmt::format("{}: '{}' is not a line number", where, s));
}

std::string relative(const std::string& file, const std::string& root) {
  std::string r = root;
  if (!r.empty() && r.back() != '/') r += '/';
  return (!r.empty() && file.rfind(r, 0) == 0) ? file.substr(r.size()) : file;
}

std::string folder_of(const std::string& rel) {
  size_t slash = rel.rfind('/');
  return slash == std::string::npos ? "." : rel.substr(0, slash);
}

// * and ? only: signal names carry brackets (dbg_i[3]) that fnmatch would read as a set.
bool glob(const char* p, const char* n) {
  if (!*p) return !*n;
  if (*p == '*') return glob(p + 1, n) || (*n && glob(p, n + 1));
  return *n && (*p == '?' || *p == *n) && glob(p + 1, n + 1);
}

bool glob(const std::string& pattern, const std::string& name) { return glob(pattern.c_str(), name.c_str()); }

}  // namespace

std::vector<Point> parse_dat(const std::string& text, const std::string& what) {
  // Instances of one module are one point: the key without the hierarchy.
  std::map<std::tuple<int, std::string, std::string, int, std::string, std::string, std::string>, Point> merged;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (line.find("SystemC::Coverage") != std::string::npos) header = true;
      continue;
    }
    std::string where = fmt::format("{}:{}", what, n);
    if (!header) throw InputError(fmt::format("{}: not a Verilator coverage file (no '# SystemC::Coverage' header)", where));
    size_t q1 = line.find('\''), q2 = line.rfind('\'');
    if (line.rfind("C ", 0) != 0 || q1 == std::string::npos || q2 <= q1)
      throw InputError(fmt::format("{}: expected C '<key>' <count>", where));
    std::string count_text = line.substr(q2 + 1);
    count_text.erase(0, count_text.find_first_not_of(' '));
    uint64_t count = 0;
    try {
      size_t used = 0;
      count = std::stoull(count_text, &used);
      if (used != count_text.size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      throw InputError(fmt::format("{}: count '{}' is not a number", where, count_text));
    }
    auto f = key_fields(line.substr(q1 + 1, q2 - q1 - 1));
    const std::string& page = f["page"];
    size_t slash = page.find('/');
    if (slash == std::string::npos || f["f"].empty() || f["l"].empty())
      throw InputError(fmt::format("{}: point without page, file or line", where));
    std::string type = page.substr(0, slash);
    Point p;
    if (type == "v_line") p.kind = Kind::Line;
    else if (type == "v_branch") p.kind = Kind::Branch;
    else if (type == "v_toggle") p.kind = Kind::Toggle;
    else if (type == "v_user") p.kind = Kind::Cover;
    else continue;
    // Parameterised copies (ocs_event_log__N4_D8) are one module.
    p.module = page.substr(slash + 1);
    p.module = p.module.substr(0, p.module.find("__"));
    p.file = f["f"];
    p.line = to_int(f["l"], where);
    p.span = {p.line};
    if (auto sp = f.find("S"); sp != f.end() && !sp->second.empty()) {
      p.span.clear();
      std::istringstream parts(sp->second);
      std::string part;
      while (std::getline(parts, part, ',')) {
        size_t dash = part.find('-');
        int first = to_int(part.substr(0, dash), where);
        int last = dash == std::string::npos ? first : to_int(part.substr(dash + 1), where);
        if (last < first || last - first > 100000) throw InputError(fmt::format("{}: span '{}' is not a line range", where, sp->second));
        for (int l = first; l <= last; ++l) p.span.push_back(l);
      }
      // lcov counts the point on its own line as well (an `else` sits on its `if`'s line).
      if (std::find(p.span.begin(), p.span.end(), p.line) == p.span.end()) p.span.push_back(p.line);
    }
    p.name = f["o"];
    p.count = count;
    auto key = std::make_tuple(static_cast<int>(p.kind), p.module, p.file, p.line, f["n"], p.name, f["S"]);
    auto [it, fresh] = merged.emplace(key, p);
    if (!fresh) it->second.count += count;
  }
  if (!header) throw InputError(fmt::format("{}: not a Verilator coverage file (no '# SystemC::Coverage' header)", what));
  std::vector<Point> out;
  out.reserve(merged.size());
  for (auto& [k, p] : merged) out.push_back(std::move(p));
  return out;
}

std::string line_points_only(const std::string& text) {
  std::istringstream in(text);
  std::string out, line;
  while (std::getline(in, line)) {
    if (line.rfind("C ", 0) == 0 && line.find("page\x02v_line/") == std::string::npos &&
        line.find("page\x02v_branch/") == std::string::npos)
      continue;
    out += line + "\n";
  }
  return out;
}

std::vector<Waiver> parse_waivers(const std::string& text, const std::string& what) {
  std::vector<Waiver> out;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    std::string where = fmt::format("{}:{}", what, n);
    std::istringstream words(line);
    Waiver w;
    std::string target;
    if (!(words >> w.kind) || w.kind[0] == '#') continue;
    if (!(words >> target)) throw InputError(fmt::format("{}: '{}' names no point", where, w.kind));
    std::getline(words, w.reason);
    w.reason.erase(0, w.reason.find_first_not_of(" \t"));
    if (w.reason.empty()) throw InputError(fmt::format("{}: waiver of {} gives no reason", where, target));
    w.at = n;
    if (w.kind == "cover" || w.kind == "toggle") {
      size_t dot = target.find('.');
      if (dot == std::string::npos || dot == 0 || dot + 1 == target.size())
        throw InputError(fmt::format("{}: {} waiver wants MODULE.NAME, got '{}'", where, w.kind, target));
      w.module = target.substr(0, dot);
      w.pattern = target.substr(dot + 1);
    } else if (w.kind == "line" && target.find(":/") != std::string::npos) {
      // Anchored: the text may hold spaces, so it is taken from the raw line.
      static const std::regex anchored(R"(^\s*line\s+([^\s:]+):/(.+?)/(?:\+(\d+))?(?:\s+(.*))?$)");
      std::smatch m;
      if (!std::regex_match(line, m, anchored))
        throw InputError(fmt::format("{}: anchored line waiver wants FILE:/TEXT/[+N] REASON", where));
      w.file = m[1];
      w.text = m[2];
      w.after = m[3].matched ? to_int(m[3], where) : 0;
      w.reason = m[4].matched ? std::string(m[4]) : "";
      w.reason.erase(0, w.reason.find_first_not_of(" \t"));
      if (w.reason.empty()) throw InputError(fmt::format("{}: waiver of {}:/{}/ gives no reason", where, w.file, w.text));
      if (w.after < 0 || w.after > 1000) throw InputError(fmt::format("{}: +{} lines is out of range", where, w.after));
    } else if (w.kind == "line") {
      size_t colon = target.rfind(':');
      if (colon == std::string::npos || colon == 0)
        throw InputError(fmt::format("{}: line waiver wants FILE:LINE[-LAST], got '{}'", where, target));
      w.file = target.substr(0, colon);
      std::string span = target.substr(colon + 1);
      size_t dash = span.find('-');
      w.first = to_int(span.substr(0, dash), where);
      w.last = dash == std::string::npos ? w.first : to_int(span.substr(dash + 1), where);
      if (w.first < 1 || w.last < w.first)
        throw InputError(fmt::format("{}: line span '{}' is empty or not positive", where, span));
    } else {
      throw InputError(fmt::format("{}: unknown waiver kind '{}' (cover, toggle or line)", where, w.kind));
    }
    out.push_back(std::move(w));
  }
  return out;
}

Summary summarize(const std::vector<Point>& points, std::vector<Waiver> waivers, const std::string& root) {
  Summary s;
  // Anchored line waivers become spans: every line of the file that contains the text.
  std::vector<Waiver> spans;
  for (auto& w : waivers) {
    if (w.kind != "line" || w.text.empty()) continue;
    std::ifstream in(root + "/" + w.file);
    std::string text;
    int n = 0;
    while (std::getline(in, text)) {
      ++n;
      if (text.find(w.text) == std::string::npos) continue;
      Waiver span = w;
      span.first = n;
      span.last = n + w.after;
      spans.push_back(span);
    }
  }
  std::map<std::string, ModuleSummary> mods;  // by module
  // Lines: a source line counts as reached when every line and branch point spanning it counted,
  // as lcov's line data (and so the HTML report) has it: an `else` never taken leaves its line open.
  std::map<std::string, std::map<int, bool>> reached;      // rel file -> line -> hit
  std::map<std::string, std::string> module_of_file;
  auto waive = [&](const std::string& kind, const std::string& module, const std::string& name) -> Waiver* {
    for (auto& w : waivers)
      if (w.kind == kind && w.module == module && glob(w.pattern, name)) return &w;
    return nullptr;
  };
  for (const Point& p : points) {
    std::string rel = relative(p.file, root);
    ModuleSummary& m = mods[p.module];
    m.module = p.module;
    if (m.file.empty() || p.kind != Kind::Toggle) m.file = rel;
    bool hit = p.count > 0;
    switch (p.kind) {
      case Kind::Line:
      case Kind::Branch:
        module_of_file[rel] = p.module;
        for (int l : p.span) {
          auto [it, fresh] = reached[rel].emplace(l, hit);
          if (!fresh) it->second = it->second && hit;
        }
        break;
      case Kind::Toggle:
        if (!hit)
          if (Waiver* w = waive("toggle", p.module, p.name)) {
            ++w->used;
            ++s.waived_toggles;
          }
        m.toggles.total++;
        m.toggles.hit += hit;
        s.dir_toggles[folder_of(rel)].total++;
        s.dir_toggles[folder_of(rel)].hit += hit;
        break;
      case Kind::Cover: {
        m.covers.total++;
        m.covers.hit += hit;
        s.dir_covers[folder_of(rel)].total++;
        s.dir_covers[folder_of(rel)].hit += hit;
        if (!hit) {
          Unhit u{Kind::Cover, p.module, rel, p.name, p.line, ""};
          if (Waiver* w = waive("cover", p.module, p.name)) {
            ++w->used;
            u.waived = w->reason;
            ++m.covers_waived;
          }
          s.unhit_covers.push_back(u);
        }
        break;
      }
    }
  }
  for (auto& [rel, lines] : reached) {
    ModuleSummary& m = mods[module_of_file[rel]];
    Tally& dir = s.dir_lines[folder_of(rel)];
    for (auto& [l, hit] : lines) {
      m.lines.total++;
      m.lines.hit += hit;
      dir.total++;
      dir.hit += hit;
      if (hit) continue;
      bool waived = false;
      for (auto& w : waivers)
        if (w.kind == "line" && w.text.empty() && w.file == rel && l >= w.first && l <= w.last) {
          ++w.used;
          waived = true;
        }
      for (auto& sp : spans)
        if (sp.file == rel && l >= sp.first && l <= sp.last) {
          waived = true;
          for (auto& w : waivers)
            if (w.at == sp.at) ++w.used;
        }
      if (waived) ++s.waived_lines;
      else s.unhit_lines[rel].push_back(l);
    }
  }
  for (auto& [name, m] : mods) s.modules.push_back(m);
  std::sort(s.modules.begin(), s.modules.end(),
            [](const ModuleSummary& a, const ModuleSummary& b) { return std::tie(a.file, a.module) < std::tie(b.file, b.module); });
  std::sort(s.unhit_covers.begin(), s.unhit_covers.end(),
            [](const Unhit& a, const Unhit& b) { return std::tie(a.file, a.line, a.name) < std::tie(b.file, b.line, b.name); });
  for (auto& w : waivers)
    if (w.used == 0) s.stale.push_back(w);
  return s;
}

std::string ranges(const std::vector<int>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size();) {
    size_t j = i;
    while (j + 1 < lines.size() && lines[j + 1] == lines[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + (j == i ? std::to_string(lines[i]) : fmt::format("{}-{}", lines[i], lines[j]));
    i = j + 1;
  }
  return out;
}

namespace {

nlohmann::json tally_json(const Tally& t) {
  return {{"hit", t.hit}, {"total", t.total}, {"pct", t.total ? nlohmann::json(t.pct()) : nlohmann::json(nullptr)}};
}

std::string pct_text(const Tally& t) { return t.total ? fmt::format("{:5.1f}%", t.pct()) : "    - "; }

}  // namespace

nlohmann::json to_json(const Summary& s) {
  nlohmann::json j;
  j["modules"] = nlohmann::json::array();
  for (const auto& m : s.modules)
    j["modules"].push_back({{"module", m.module}, {"file", m.file}, {"lines", tally_json(m.lines)},
                            {"toggles", tally_json(m.toggles)}, {"covers", tally_json(m.covers)},
                            {"covers_waived", m.covers_waived}});
  for (const auto& [dir, t] : s.dir_lines) j["folders"][dir]["lines"] = tally_json(t);
  for (const auto& [dir, t] : s.dir_toggles) j["folders"][dir]["toggles"] = tally_json(t);
  for (const auto& [dir, t] : s.dir_covers) j["folders"][dir]["covers"] = tally_json(t);
  j["unhit_covers"] = nlohmann::json::array();
  for (const auto& u : s.unhit_covers)
    j["unhit_covers"].push_back({{"module", u.module}, {"name", u.name}, {"file", u.file}, {"line", u.line},
                                 {"waived", u.waived.empty() ? nlohmann::json(nullptr) : nlohmann::json(u.waived)}});
  j["unhit_lines"] = nlohmann::json::object();
  for (const auto& [file, lines] : s.unhit_lines) j["unhit_lines"][file] = lines;
  j["waived_lines"] = s.waived_lines;
  j["waived_toggles"] = s.waived_toggles;
  j["stale_waivers"] = nlohmann::json::array();
  for (const auto& w : s.stale) j["stale_waivers"].push_back({{"line", w.at}, {"kind", w.kind}, {"reason", w.reason}});
  return j;
}

std::string format_summary(const Summary& s) {
  std::string out = fmt::format("  {:<24} {:<32} {:>16} {:>18} {:>12}\n", "module", "file", "lines", "toggles", "cover");
  for (const auto& m : s.modules) {
    std::string cover = m.covers.total ? fmt::format("{}/{}", m.covers.hit, m.covers.total) : "-";
    if (m.covers_waived) cover += fmt::format(" +{}w", m.covers_waived);
    out += fmt::format("  {:<24} {:<32} {:>7} {:>4}/{:<4} {:>7} {:>5}/{:<5} {:>12}\n", m.module, m.file, pct_text(m.lines),
                       m.lines.hit, m.lines.total, pct_text(m.toggles), m.toggles.hit, m.toggles.total, cover);
  }
  out += "  per folder:\n";
  std::set<std::string> dirs;
  for (const auto& [d, t] : s.dir_lines) dirs.insert(d);
  for (const auto& [d, t] : s.dir_toggles) dirs.insert(d);
  for (const auto& d : dirs) {
    auto get = [&](const std::map<std::string, Tally>& m) { auto it = m.find(d); return it == m.end() ? Tally{} : it->second; };
    Tally l = get(s.dir_lines), t = get(s.dir_toggles), c = get(s.dir_covers);
    out += fmt::format("    {:<22} lines {} ({}/{})  toggles {} ({}/{})  cover {}/{}\n", d, pct_text(l), l.hit, l.total,
                       pct_text(t), t.hit, t.total, c.hit, c.total);
  }
  int open = 0;
  for (const auto& u : s.unhit_covers) open += u.waived.empty();
  out += fmt::format("  COVER points never hit: {} ({} not waived)\n", s.unhit_covers.size(), open);
  for (const auto& u : s.unhit_covers)
    out += fmt::format("    {}.{}  {}:{}{}\n", u.module, u.name, u.file, u.line, u.waived.empty() ? "" : "  waived: " + u.waived);
  out += "  lines never reached (not waived):\n";
  if (s.unhit_lines.empty()) out += "    none\n";
  for (const auto& [file, lines] : s.unhit_lines) out += fmt::format("    {}: {}\n", file, ranges(lines));
  for (const auto& w : s.stale)
    out += fmt::format("  stale waiver (waiver file line {}): {} waiver matches no unhit point\n", w.at, w.kind);
  return out;
}

}  // namespace mxtb::app::coverage
