#include "apps/mxtb/plot.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace mxtb::app {

namespace {

// A title inside gnuplot's single quotes: a quote is written twice.
std::string gnuplot_quoted(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out;
}

}  // namespace

bool plot_series(const std::string& svg, const std::string& settings, const std::vector<PlotSeries>& series,
                 const std::string& style) {
  const std::string stem =
      svg.size() > 4 && svg.compare(svg.size() - 4, 4, ".svg") == 0 ? svg.substr(0, svg.size() - 4) : svg;
  std::ofstream dat(stem + ".dat");
  if (!dat) throw std::runtime_error(fmt::format("cannot write plot data '{}.dat'", stem));
  for (const auto& s : series) {
    dat << "# " << s.title << "\n";
    for (const auto& [x, y] : s.points) dat << fmt::format("{} {}\n", x, y);
    dat << "\n\n";
  }
  dat.close();
  std::ofstream gp(stem + ".gp");
  if (!gp) throw std::runtime_error(fmt::format("cannot write plot script '{}.gp'", stem));
  gp << "set terminal svg size 720,440 dynamic\nset output '" << svg << "'\n" << settings << "\nplot ";
  for (size_t i = 0; i < series.size(); ++i)
    gp << (i ? ", " : "") << "'" << stem << ".dat' index " << i << " with " << style << " title '"
       << gnuplot_quoted(series[i].title) << "'";
  gp << "\n";
  gp.close();
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    fmt::print("gnuplot not found: wrote {}.dat and {}.gp but no plot\n", stem, stem);
    return false;
  }
  int rc = std::system(fmt::format("gnuplot '{}.gp'", stem).c_str());
  if (rc != 0) {
    fmt::print("gnuplot failed on {}.gp (exit {})\n", stem, rc);
    return false;
  }
  fmt::print("wrote {}\n", svg);
  return true;
}

}  // namespace mxtb::app
