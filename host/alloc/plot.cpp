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
     << "set yrange [0:1.05]\nset key bottom left\nset grid\n"
     << "plot '" << prefix + "_" + name + ".dat" << "' index 0 with linespoints title '"
     << j["policies"][0]["policy"].get<std::string>() << "'";
  if (j["policies"].size() > 1)
    gp << ", '' index 1 with linespoints title '" << j["policies"][1]["policy"].get<std::string>() << "'";
  gp << "\n";
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
     << "set xrange [0:1]\nset yrange [0:1]\nset key bottom right\nset grid\n"
     << "plot '" << prefix + "_frag_cdf.dat" << "' index 0 with steps title '"
     << j["policies"][0]["policy"].get<std::string>() << "'";
  if (j["policies"].size() > 1)
    gp << ", '' index 1 with steps title '" << j["policies"][1]["policy"].get<std::string>() << "'";
  gp << "\n";
  gp.close();
  if (run_gnuplot(prefix + "_frag_cdf.gp")) files->push_back(svg);
}
}  // namespace

std::vector<std::string> plot_results(const json& j, const std::string& prefix) {
  std::vector<std::string> files;
  if (!j.contains("policies")) return files;
  if (!have_gnuplot()) {
    fmt::print("gnuplot not found: no plots written (install the Debian package gnuplot-nox); the JSON is complete\n");
    return files;
  }
  plot_frag_cdf(j, prefix, &files);
  plot_by_size(j, prefix, "acceptance", "acceptance", "acceptance rate", &files);
  plot_by_size(j, prefix, "bandwidth", "bandwidth", "allocation bandwidth (fraction of ports)", &files);
  return files;
}

}  // namespace mxtb::host::alloc
