#include "apps/mxtb/plot.h"

#include <fmt/format.h>

#include <cstdlib>

namespace mxtb::app {

std::string plot_stem(const std::string& svg) {
  return svg.size() > 4 && svg.compare(svg.size() - 4, 4, ".svg") == 0 ? svg.substr(0, svg.size() - 4) : svg;
}

bool render_gnuplot(const std::string& stem, const std::string& svg) {
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
