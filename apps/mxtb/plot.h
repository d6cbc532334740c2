// The plots the mxtb commands draw: data in STEM.dat, a gnuplot script in STEM.gp, the SVG the
// user named (`--plot FILE.svg`). One place writes them and runs gnuplot, and says why when it
// cannot.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace mxtb::app {

// One curve: its title in the key and its (x, y) points.
struct PlotSeries {
  std::string title;
  std::vector<std::pair<double, double>> points;
};

// Writes STEM.dat (one gnuplot data set per series) and STEM.gp (`settings`: gnuplot commands for
// the axes, labels and key; each series drawn `with STYLE`), then renders `svg` (STEM is `svg`
// without ".svg"). Throws std::runtime_error when the files cannot be written; when gnuplot is
// missing or fails it prints why and returns false (the .dat and .gp stay for the user).
bool plot_series(const std::string& svg, const std::string& settings, const std::vector<PlotSeries>& series,
                 const std::string& style);

}  // namespace mxtb::app
