// The RTL IPbus transactor against the C++ target over many random datagrams (ipbus_rtl_diff.h):
// prints the datagrams run, the mismatches (the first few in full, minimised) and each side's
// datagrams per second, and writes them as JSON.
//
//   bench_ipbus_rtl_diff --datagrams 1000000 --seed 1 --json bench-ipbus-rtl-diff.json [--eager]
//
// --eager: the RTL's environment always ready, without gaps or delays (its own speed); by default
// the stream and bus timing is randomised as in the test. Exits 1 when any datagram mismatched.
#include "testbench/protocol/ipbus_rtl_diff.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

using namespace mxtb::testbench::ipbus_diff;

namespace {

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "bench_ipbus_rtl_diff: %s\nusage: bench_ipbus_rtl_diff [--datagrams N] [--seed S] [--json FILE] [--eager] [--show K]\n", why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t n = 1000000, seed = 1, show = 3;
  std::string json;
  bool eager = false;
  for (int i = 1; i < argc; ++i) {
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(fmt::format("{} needs a value", argv[i]).c_str());
      return argv[++i];
    };
    try {
      if (!std::strcmp(argv[i], "--datagrams")) n = std::stoull(value());
      else if (!std::strcmp(argv[i], "--seed")) seed = std::stoull(value());
      else if (!std::strcmp(argv[i], "--show")) show = std::stoull(value());
      else if (!std::strcmp(argv[i], "--json")) json = value();
      else if (!std::strcmp(argv[i], "--eager")) eager = true;
      else usage(fmt::format("unknown argument {}", argv[i]).c_str());
    } catch (const std::logic_error&) {
      usage(fmt::format("{} wants a number", argv[i - 1]).c_str());
    }
  }

  const auto refused = random_refused_words(seed);
  RtlTiming timing = eager ? RtlTiming::eager(seed) : RtlTiming{};
  timing.seed = seed * 7919;
  const uint64_t fill_seed = seed + 1000;
  auto make_runner = [&](uint64_t attempt) {
    RtlTiming t = timing;
    t.seed += attempt;
    return std::make_unique<DiffRunner>(std::make_unique<CppSide>(fill_seed), std::make_unique<RtlSide>(fill_seed, t), refused);
  };
  auto runner = make_runner(0);
  DatagramGenerator gen(seed);
  gen.aim_at(refused);
  std::map<DatagramClass, uint64_t> classes;
  std::map<std::string, uint64_t> mismatch_kinds;
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < n; ++i) {
    Datagram d = gen.next(runner->next_expected_id());
    ++classes[d.cls];
    auto m = runner->run(d.bytes);
    if (!m) continue;
    // Counted by the kind of difference: the description up to its first detail.
    std::string what = m->what;
    const std::string device = std::string(runner->device().name()) + ": ";
    if (what.rfind(device, 0) == 0) what = what.substr(device.size());
    ++mismatch_kinds[what.substr(0, what.find_first_of(":(0123456789"))];
    if (runner->stats().mismatches <= show) {
      std::printf("datagram %llu (%s):\n%s", static_cast<unsigned long long>(i), to_string(d.cls), describe(*m).c_str());
      std::printf("  minimised on fresh sides: %s\n\n", hex(minimise(m->datagram, make_runner)).c_str());
      std::fflush(stdout);
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto& s = runner->stats();
  const double cpp_rate = s.datagrams / s.reference_seconds, rtl_rate = s.datagrams / s.device_seconds;
  const double cycles_per = s.datagrams ? double(s.device_cycles) / s.datagrams : 0;

  std::printf("IPbus RTL transactor vs C++ target, seed %llu, %s timing\n", static_cast<unsigned long long>(seed), eager ? "eager" : "randomised");
  std::printf("  datagrams   %llu\n  mismatches  %llu\n", static_cast<unsigned long long>(s.datagrams), static_cast<unsigned long long>(s.mismatches));
  for (const auto& [what, count] : mismatch_kinds) std::printf("    %-40s %llu\n", what.c_str(), static_cast<unsigned long long>(count));
  std::printf("  C++ target  %.0f datagrams/s\n  RTL         %.0f datagrams/s (%.1f cycles/datagram, %.2f Mcycles/s)\n  wall        %.1f s\n",
              cpp_rate, rtl_rate, cycles_per, s.device_cycles / s.device_seconds / 1e6, wall);
  std::printf("  classes:");
  for (const auto& [c, count] : classes) std::printf(" %s %llu;", to_string(c), static_cast<unsigned long long>(count));
  std::printf("\n");

  if (!json.empty()) {
    std::string j = fmt::format(
        "{{\n  \"bench\": \"ipbus_rtl_diff\",\n  \"seed\": {},\n  \"timing\": \"{}\",\n  \"datagrams\": {},\n  \"mismatches\": {},\n"
        "  \"cpp_datagrams_per_s\": {:.1f},\n  \"rtl_datagrams_per_s\": {:.1f},\n  \"rtl_cycles\": {},\n  \"rtl_cycles_per_datagram\": {:.2f},\n"
        "  \"wall_s\": {:.3f},\n  \"classes\": {{",
        seed, eager ? "eager" : "randomised", s.datagrams, s.mismatches, cpp_rate, rtl_rate, s.device_cycles, cycles_per, wall);
    bool first = true;
    for (const auto& [c, count] : classes) {
      j += fmt::format("{}\"{}\": {}", first ? "" : ", ", to_string(c), count);
      first = false;
    }
    j += "},\n  \"mismatch_kinds\": {";
    first = true;
    for (const auto& [what, count] : mismatch_kinds) {
      j += fmt::format("{}\"{}\": {}", first ? "" : ", ", what, count);
      first = false;
    }
    j += "}\n}\n";
    std::ofstream out(json);
    out << j;
    if (!out) {
      std::fprintf(stderr, "bench_ipbus_rtl_diff: cannot write %s\n", json.c_str());
      return 2;
    }
  }
  return s.mismatches ? 1 : 0;
}
