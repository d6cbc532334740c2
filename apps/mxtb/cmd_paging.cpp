// `mxtb bench paging`: option parsing; the measurement lives with the engine (cuda/paging_bench).
#include "apps/mxtb/args.h"
#include "apps/mxtb/commands.h"

#include "cuda/paging_bench.h"

#include <fmt/format.h>

#include <sstream>

namespace mxtb::app {

namespace {
std::vector<size_t> list(const Args& a, const std::string& flag, std::vector<size_t> def) {
  if (!a.has(flag)) return def;
  std::vector<size_t> out;
  std::stringstream ss(a.str(flag));
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t pos = 0;
    unsigned long long v = 0;
    try {
      v = std::stoull(item, &pos);
    } catch (const std::exception&) {
      pos = std::string::npos;
    }
    if (item.empty() || item[0] == '-' || pos != item.size())
      throw UsageError(fmt::format("{} wants comma-separated non-negative integers, got '{}'", flag, item));
    out.push_back(v);
  }
  return out;
}
}  // namespace

int cmd_bench_paging(const ArgList& args) {
  Args a(args, {"--json", "--sizes", "--counts", "--max-mib", "--gpu-max-mib", "--reps"}, {"--quick"});
  mxtb::paging::PagingBenchOptions o;
  if (a.has("--quick")) {
    // Every backend and tier, fewer cells: what the ctest bench label runs.
    o.sizes = {4096, 65536, 1 << 20};
    o.counts = {16, 1024};
    o.cpu_max_total = size_t{16} << 20;
    o.gpu_max_total = size_t{64} << 20;
    o.reps = 3;
  }
  o.sizes = list(a, "--sizes", o.sizes);
  o.counts = list(a, "--counts", o.counts);
  o.cpu_max_total = a.u64("--max-mib", o.cpu_max_total >> 20) << 20;
  o.gpu_max_total = a.u64("--gpu-max-mib", o.gpu_max_total >> 20) << 20;
  o.reps = static_cast<int>(a.u64("--reps", static_cast<uint64_t>(o.reps)));
  o.json = a.str("--json");
  try {
    mxtb::paging::validate(o);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  return mxtb::paging::run_paging_bench(o);
}

}  // namespace mxtb::app
