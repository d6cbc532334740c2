// libFuzzer over the differential harness (ipbus_rtl_diff.h): each input is one datagram into the
// RTL transactor (verilated, built with libFuzzer's coverage instrumentation, so that the fuzzer
// steers by the RTL's branches as well as the C++ target's) and into the C++ target; any
// difference in reply, datagram kind, fault, bus accesses or register contents, an AXI rule broken,
// a failed RTL assertion or a hung transactor aborts with the datagram and both answers. The
// targets keep their state from input to input (packet ids, reply buffers), as a board does; the
// report says whether the datagram also differs on a fresh pair.
#include "testbench/protocol/ipbus_rtl_diff.h"

#include <cstdio>
#include <cstdlib>
#include <memory>

namespace diff = mxtb::testbench::ipbus_diff;

namespace {

constexpr uint64_t kFillSeed = 1;

std::unique_ptr<diff::DiffRunner> make_runner(uint64_t timing_seed) {
  diff::RtlTiming timing;
  timing.seed = timing_seed;
  return std::make_unique<diff::DiffRunner>(std::make_unique<diff::CppSide>(kFillSeed),
                                            std::make_unique<diff::RtlSide>(kFillSeed, timing),
                                            diff::random_refused_words(kFillSeed));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::unique_ptr<diff::DiffRunner> runner = make_runner(1);
  if (size > 1600) return 0;  // past any MTU: the generator's Oversized class covers it
  if (auto m = runner->run_one(data, size)) {
    std::fprintf(stderr, "mismatch between the RTL transactor and the C++ target:\n%s\n", diff::describe(*m).c_str());
    auto fresh = make_runner(2);
    std::fprintf(stderr, "on a fresh pair the datagram %s\n",
                 fresh->run_one(data, size) ? "differs too (it alone is the reproducer)"
                                            : "agrees (it needed the state earlier inputs left)");
    std::abort();
  }
  return 0;
}
