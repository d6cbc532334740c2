// mxtb: the testbench's one program. `./mxtb demo` and `./mxtb test` are handled by the root
// script; everything else arrives here. See docs/cli.md.
#include "args.h"
#include "commands.h"

#include "host/alloc/cli.h"
#include "host/serve/cli.h"
#include "sim/scenario.h"

#include <fmt/format.h>

#include <cstdio>
#include <functional>
#include <map>
#include <string>

namespace {

const char* kUsage = R"(usage: mxtb COMMAND [options]

commands:
  link-pair --scenario FILE [--seed N] | --random SEED
            [--harness systemc|loop] [--json FILE] [--fst FILE [--fst-from C] [--fst-to C]]
            [--progress CYCLES]
      run two verilated link endpoints over a lane channel model with an XPU scoreboard
  bench link [--cycles N] [--batch N] [--json FILE]
      simulated cycles per second: plain C++ loop against the SystemC harness
  server [--preset thermo_optic|electro_optic|mems] [--kill-xpu N | --no-kill] [--kill-after-us T]
         [--reprogram] [--seed N] [--limit-us T] [--progress-us T] [--json FILE] [--engine E] [--threads N]
  server --scenario FILE | --scenario-seed N [--seed N] [--json FILE] [--out DIR]
      the emulated server (controller RTL, 20 link layers, photonic mesh, firmware) through a failover;
      with a failover scenario: its timeline table, and report.json, timeline.json, timeline.svg in DIR
  regress --seeds N [--jobs J] [--first-seed S] [--out DIR] [--json FILE] [--junit FILE] [--quiet]
      N random failover scenarios, J at a time: p50/p99/max of every phase, JSON, JUnit XML
  bench reconfig [--seed N] [--json FILE]
      failure-to-Active breakdown of a failover for every settle preset
  bench server [--cycles N] [--rounds R] [--threads T,T..] [--xpus 5|8] [--seed N] [--json FILE]
               [--no-systemc] [--no-breakdown] [--no-reference]
      the whole emulated server's simulated cycles per second, engine by engine, under traffic and
      through a reconfiguration, with where the time goes (docs/performance.md)
  alloc --racks R --workload tpuv4|philly|FILE --policy baseline|morphlux|both --json FILE
  alloc --experiment frag-tpuv4|fragmented-32|spares --json FILE
      datacenter allocation: the torus allocator against Morphlux (docs/alloc.md; alloc --help)
  serve --trace FILE|azure-code|synthetic-burst|long-prompt [--policy NAME...] [--scale X|auto]
        [--json FILE] [--plot FILE.svg]
      LLM serving under bursts: admission control against Aqua-style preemption paging to host
      memory or over the fabric (docs/serve.md; serve --help)
  bench alloc [--json FILE]
      100,000-request trace with the heuristic, integer-program solve times
  demo [--scenario FILE | --scenario-seed N] [--seed N] [--out DIR] [--json FILE] [--no-waves]
      the main job: the emulator on loopback, the failover manager over IPbus, an XPU killed and
      replaced by a spare; phase table against 1.2 s, report.json, timeline.json/.svg, waves.fst
  sim [--scenario FILE] [--listen ADDR:PORT] [--time-mode lockstep|paced|free] [--rtf X] [--preset P] [--seed N]
      [--fst FILE] [--stop-after-s S] [--engine reference|fast] [--threads N]
      the emulated server as a board on the network: IPbus 2.0 over UDP (docs/protocol.md);
      prints "listening on udp://ADDR:PORT" when it answers
  reg read|write|dump --target udp://ADDR:PORT [NAME|ADDRESS [VALUE]] [--count N]
      registers by name: controller (STATUS, LINK_STATUS[3]), emulator (emu.TIME_NS_LO), ram[i]
  bench bridge [--rounds N] [--blocks N] [--json FILE]
      IPbus round trip and block-read throughput against a plain UDP echo on loopback
  bench paging [--quick] [--sizes B,B..] [--counts N,N..] [--max-mib M] [--gpu-max-mib M] [--reps N]
               [--json FILE]
      KV-cache paging bandwidth of each copy backend and tier against memcpy ceilings (docs/paging.md)

The emulated server runs on the fast engine on one thread unless --engine/--threads (or, for
every command that starts it, MXTB_ENGINE and MXTB_THREADS) say otherwise (docs/performance.md).
The root script adds: ./mxtb demo (the main job), ./mxtb test [ctest args] (the test suite).
)";

std::string bench_names(const std::map<std::string, std::function<int(const mxtb::host::ArgList&)>>& benches) {
  std::string out;
  for (const auto& [name, run] : benches) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mxtb::host;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  std::string cmd = args[0];
  args.erase(args.begin());
  std::map<std::string, std::function<int(const ArgList&)>> commands{
      {"link-pair", cmd_link_pair},
      {"server", cmd_server},
      {"regress", cmd_regress},
      {"alloc", mxtb::host::alloc::run_alloc_command},
      {"sim", cmd_sim},
      {"demo", cmd_demo},
      {"reg", cmd_reg},
      {"serve", mxtb::host::serve::run_serve_command},
  };
  std::map<std::string, std::function<int(const ArgList&)>> benches{
      {"link", cmd_bench_link},
      {"reconfig", cmd_bench_reconfig},
      {"server", cmd_bench_server},
      {"alloc", mxtb::host::alloc::run_alloc_bench},
      {"bridge", cmd_bench_bridge},
      {"paging", cmd_bench_paging},
  };
  try {
    if (cmd == "bench") {
      if (args.empty() || !benches.count(args[0]))
        throw UsageError(fmt::format("bench wants one of: {}; got '{}'", bench_names(benches), args.empty() ? "" : args[0]));
      std::string which = args[0];
      args.erase(args.begin());
      return benches[which](args);
    }
    auto it = commands.find(cmd);
    if (it == commands.end()) throw UsageError(fmt::format("unknown command '{}'", cmd));
    return it->second(args);
  } catch (const UsageError& e) {
    fmt::print(stderr, "mxtb {}: {}\n\n{}", cmd, e.what(), kUsage);
    return 2;
  } catch (const mxtb::sim::ScenarioError& e) {
    fmt::print(stderr, "mxtb {}: scenario error: {}\n", cmd, e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "mxtb {}: error: {}\n", cmd, e.what());
    return 1;
  }
}
