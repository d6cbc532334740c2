// The plots the mxtb commands draw: data in STEM.dat, a gnuplot script in STEM.gp, the SVG the
// user named (`--plot FILE.svg`). One place runs gnuplot and says why when it cannot.
#pragma once

#include <string>

namespace mxtb::app {

// FILE.svg -> FILE (any other name is its own stem).
std::string plot_stem(const std::string& svg);
// Runs gnuplot on STEM.gp, which writes `svg`. Prints what it wrote, or why it could not (gnuplot
// missing or failing: the .dat and .gp stay for the user); returns whether the SVG was written.
bool render_gnuplot(const std::string& stem, const std::string& svg);

}  // namespace mxtb::app
