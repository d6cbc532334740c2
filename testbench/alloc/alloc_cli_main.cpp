// Stand-alone driver for the alloc CLI until the integrator wires it into `mxtb`:
//   mxtb_alloc_cli alloc ...        == mxtb alloc ...
//   mxtb_alloc_cli bench alloc ...  == mxtb bench alloc ...
#include <string>
#include <vector>

#include <fmt/format.h>

#include "host/alloc/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> a(argv + 1, argv + argc);
  if (!a.empty() && a[0] == "alloc") return mxtb::host::alloc::run_alloc_command({a.begin() + 1, a.end()});
  if (a.size() >= 2 && a[0] == "bench" && a[1] == "alloc")
    return mxtb::host::alloc::run_alloc_bench({a.begin() + 2, a.end()});
  fmt::print("usage: mxtb_alloc_cli alloc ... | bench alloc ...\n");
  return 2;
}
