// Figures through gnuplot (a real process, SVG terminal); the JSON is always written first.
#include <algorithm>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "host/alloc/experiments.h"

namespace mxtb::host::alloc {

using nlohmann::json;

namespace {
bool have_gnuplot() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

bool run_gnuplot(const std::string& script_path) {
  std::string cmd = fmt::format("gnuplot '{}'", script_path);
  int rc = std::system(cmd.c_str());
  if (rc != 0) fmt::print("gnuplot failed on {} (exit {})\n", script_path, rc);
  return rc == 0;
}

// Writes `prefix_name.dat` (one block per policy) and `.gp`, then runs gnuplot.
std::string series_title(const json& p) {
  std::string t = p["policy"].get<std::string>();
  if (p.contains("state")) t += " on " + p["state"].get<std::string>() + " fill";
  return t;
}

// "plot 'file' index 0 ... title 'a', '' index 1 ... title 'b', ...": one series per policy.
void plot_series(std::ofstream& gp, const json& policies, const std::string& dat, const std::string& style) {
  gp << "plot ";
  for (size_t i = 0; i < policies.size(); ++i)
    gp << (i ? ", " : "") << "'" << (i ? "" : dat) << "' index " << i << " with " << style << " title '"
       << series_title(policies[i]) << "'";
  gp << "\n";
}

bool plot_by_size(const json& j, const std::string& prefix, const std::string& name, const std::string& field,
                  const std::string& ylabel, std::vector<std::string>* files) {
  bool any = false;
  std::ofstream dat(prefix + "_" + name + ".dat");
  for (const auto& p : j["policies"]) {
    dat << "# " << p["policy"].get<std::string>() << "\n";
    for (const auto& s : p["by_size"])
      if (s.contains(field)) {
        dat << s["size"].get<int>() << " " << s[field].get<double>() << "\n";
        any = true;
      }
    dat << "\n\n";
  }
  dat.close();
  if (!any) return false;
  std::string svg = prefix + "_" + name + ".svg";
  std::ofstream gp(prefix + "_" + name + ".gp");
  gp << "set terminal svg size 640,400 dynamic\n"
     << "set output '" << svg << "'\n"
     << "set logscale x 2\nset xlabel 'slice size (chips)'\nset ylabel '" << ylabel << "'\n"
     << "set yrange [0:1.05]\nset key bottom left\nset grid\n";
  plot_series(gp, j["policies"], prefix + "_" + name + ".dat", "linespoints");
  gp.close();
  if (run_gnuplot(prefix + "_" + name + ".gp")) files->push_back(svg);
  return true;
}

void plot_frag_cdf(const json& j, const std::string& prefix, std::vector<std::string>* files) {
  bool any = false;
  std::ofstream dat(prefix + "_frag_cdf.dat");
  for (const auto& p : j["policies"]) {
    auto v = p["fragmentation_samples"].get<std::vector<double>>();
    std::sort(v.begin(), v.end());
    dat << "# " << p["policy"].get<std::string>() << "\n";
    for (size_t i = 0; i < v.size(); ++i) {
      dat << v[i] << " " << static_cast<double>(i + 1) / v.size() << "\n";
      any = true;
    }
    dat << "\n\n";
  }
  dat.close();
  if (!any) return;
  std::string svg = prefix + "_frag_cdf.svg";
  std::ofstream gp(prefix + "_frag_cdf.gp");
  gp << "set terminal svg size 640,400 dynamic\n"
     << "set output '" << svg << "'\n"
     << "set xlabel 'rack fragmentation index 1 - S/T'\nset ylabel 'CDF over racks'\n"
     << "set xrange [0:1]\nset yrange [0:1]\nset key bottom right\nset grid\n";
  plot_series(gp, j["policies"], prefix + "_frag_cdf.dat", "steps");
  gp.close();
  if (run_gnuplot(prefix + "_frag_cdf.gp")) files->push_back(svg);
}
// fragmented-32: share of the 32-chip requests rejected, one cluster of bars per fill (placement
// and size mix), one bar per allocator, with the paper's figures as reference lines.
void plot_rejection(const json& j, const std::string& prefix, std::vector<std::string>* files) {
  const json& states = j["states"];
  if (states.empty()) return;
  std::ofstream dat(prefix + "_rejection.dat");
  dat << "fill";
  for (const auto& p : states[0]["policies"]) dat << " \"" << p["policy"].get<std::string>() << "\"";
  dat << "\n";
  for (const auto& st : states) {
    dat << "\"" << st["name"].get<std::string>() << "\"";
    for (const auto& p : st["policies"]) dat << " " << 100.0 * p["rejected"].get<double>();
    dat << "\n";
  }
  dat.close();
  std::string svg = prefix + "_rejection.svg";
  std::ofstream gp(prefix + "_rejection.gp");
  const size_t n = states[0]["policies"].size();
  gp << "set terminal svg size 820,440 dynamic\n"
     << "set output '" << svg << "'\n"
     << "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
     << "set ylabel '32-chip requests rejected (%)'\nset xlabel 'fill: placement and slice sizes'\n"
     << "set yrange [0:105]\nset key top right\nset grid ytics\nset xtics rotate by -15\n"
     << "set arrow from graph 0, first 75 to graph 1, first 75 nohead dt 2 lc rgb 'black'\n"
     << "set label 'paper: baseline about 75%, Morphlux 0%' at graph 0.01, first 78\n"
     << "plot '" << prefix + "_rejection.dat" << "' using 2:xtic(1) title columnheader(2)";
  for (size_t i = 1; i < n; ++i) gp << ", '' using " << i + 2 << " title columnheader(" << i + 2 << ")";
  gp << "\n";
  gp.close();
  if (run_gnuplot(prefix + "_rejection.gp")) files->push_back(svg);
}
}  // namespace

std::vector<std::string> plot_results(const json& j, const std::string& prefix) {
  std::vector<std::string> files;
  if (!j.contains("policies") && !j.contains("states")) return files;
  if (!have_gnuplot()) {
    fmt::print("gnuplot not found: no plots written (install the Debian package gnuplot-nox); the JSON is complete\n");
    return files;
  }
  if (j.value("experiment", "") == "fragmented-32") {
    plot_rejection(j, prefix, &files);
    // The rack fragmentation CDF of the paper's protocol (the first state), per allocator.
    json first{{"policies", j["states"][0]["policies"]}};
    plot_frag_cdf(first, prefix, &files);
    return files;
  }
  plot_frag_cdf(j, prefix, &files);
  plot_by_size(j, prefix, "acceptance", "acceptance", "acceptance rate", &files);
  plot_by_size(j, prefix, "bandwidth", "bandwidth", "allocation bandwidth (fraction of ports)", &files);
  return files;
}

}  // namespace mxtb::host::alloc
