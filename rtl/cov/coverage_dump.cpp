#include "rtl/cov/coverage_dump.h"

#include "verilated.h"
#ifdef MXTB_COVERAGE
#include "verilated_cov.h"
#endif

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace mxtb::rtl {

bool coverage_build() {
#ifdef MXTB_COVERAGE
  return true;
#else
  return false;
#endif
}

void write_coverage([[maybe_unused]] VerilatedContext& ctx, [[maybe_unused]] const char* what) {
#ifdef MXTB_COVERAGE
  const char* dir = std::getenv("MXTB_COVERAGE_DIR");
  if (!dir || !*dir) return;
  // One file per context and process: a test binary owns many contexts, one after another.
  static std::atomic<unsigned> serial{0};
  std::string path = std::string(dir) + "/" + what + "-" + std::to_string(::getpid()) + "-" +
                     std::to_string(serial.fetch_add(1)) + ".dat";
  ctx.coveragep()->write(path.c_str());
#endif
}

}  // namespace mxtb::rtl
