// mxtb: the testbed's one program, and the one place that links both the emulator (sim/) and the
// host software (host/). `./mxtb demo` and `./mxtb test` are handled by the root script; everything
// else arrives here. docs/cli.md.
#include "apps/mxtb/args.h"
#include "apps/mxtb/commands.h"
#include "apps/mxtb/rtl_rerun.h"
#include "apps/mxtb/scenario.h"
#include "sim/common/rtl_assert.h"

#include <fmt/format.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

namespace {

using mxtb::app::ArgList;

struct Command {
  const char* name;  // "demo", or "bench link"
  int (*run)(const ArgList&);
  const char* usage;  // its options and what it does
};

const Command kCommands[] = {
    {"demo", mxtb::app::cmd_demo,
     R"(demo [--scenario FILE | --scenario-seed N] [--seed N] [--out DIR] [--json FILE] [--no-waves]
    [--ipbus-timeout-ms MS] [--inject-stall MS/EVERY] [--restart hot-spare|relaunch|both|none]
    [--sweep] [--host-decide-ns NS] [--ipbus-target rtl|cpp] [--rack FILE | --no-rack]
    the main job: the emulator on loopback, the failover manager over IPbus, an XPU killed and
    replaced by a spare; phase table against 1.2 s, report.json, timeline.json/.svg, waves.fst.
    The IPbus client waits MS per attempt (default 1000); --inject-stall is the stress harness's
    fault (see sim). The job's ranks run as processes with Gloo and their communicator's
    re-form is measured (--restart hot-spare: a waiting hot spare; relaunch: every rank
    relaunched from its checkpoint; both, the default: the hot spare on the path and the
    relaunch measured beside it in the same run; none: the scenario's modeled
    communicator_reinit instead). A scenario with no job (random traffic) has no communicator. --sweep (implies --restart both): the path
    recomputed over state size 1-16 GiB, lane rate 10-200 Gb/s, lanes 1-4 and strategy from this
    run's measured phases (sweep.json, sweep.svg)). --host-decide-ns charges the host's decide
    compute as NS instead of measuring it: a report's figure host_decide_ns replays that run.
    --ipbus-target: the emulator's IPbus target (see sim; default: the scenario's ipbus_target,
    else MXTB_IPBUS_TARGET, else rtl). --rack: the rack rows beside the run's (default with no
    scenario named: traces/scenarios/rack/rack-2x1.json): the same death on a rack of boards at
    the run's settle, its spare in the same server and then in another, by the host's rack path)"},
    {"rank", mxtb::app::cmd_rank,
     R"(rank --store DIR [--library gloo|nccl] [--timeout-ms MS]
    one rank of the job, driven over stdin/stdout by the failover manager (host/comm/rank.h);
    nccl where the build found CUDA and NCCL (its device: the rank modulo the devices))"},
    {"regress", mxtb::app::cmd_regress,
     R"(regress --seeds N [--jobs J] [--first-seed S] [--out DIR] [--json FILE] [--junit FILE] [--quiet]
    [--launcher local|slurm] [--seeds-per-task K] [--partition P] [--time-limit T]
    [--sbatch-args "ARGS"] [--poll-s S] [--no-wait] [--restart hot-spare|relaunch|both] [--rack]
regress --collect DIR [--json FILE] [--junit FILE]
    N random failover scenarios through the demo (--restart: with the job's ranks as processes
    in every seed, as demo --restart), J at a time: p50/p99/max of every phase, JSON,
    JUnit XML, and the command that reruns each failing seed. --launcher slurm submits one job
    array (K seeds per task, at most J tasks at once) and waits, or --no-wait and --collect DIR
    later; cancelled, timed-out and never-started seeds are reported as such. --rack: random rack
    failovers instead (rack-failover --scenario-seed), each seed a served rack of its own)"},
    {"cover", mxtb::app::cmd_cover,
     R"(cover [--seeds N] [--build DIR] [--no-build] [--tests PROG,..] [--jobs J] [--first-seed S]
    [--waivers FILE] [--out DIR] [--json FILE] [--no-html] [--min-line PCT] [--keep]
    the RTL's coverage: the RTL testbenches and N regression seeds (default 50) on the coverage
    build (DIR, default build-cover/, configured with -DMXTB_COVERAGE=ON), merged; line, toggle and
    COVER points per module, every point never hit, lcov data and an HTML report (docs/coverage.md))"},
    {"sim", mxtb::app::cmd_sim,
     R"(sim [--scenario FILE | --preset P] [--listen ADDR:PORT] [--time-mode lockstep|paced|free] [--rtf X]
    [--seed N] [--fst FILE] [--stop-after-s S] [--calibration FILE] [--engine reference|fast] [--threads N]
    [--stall-report-ms MS] [--inject-stall MS/EVERY] [--job-xpus X,X,...] [--ipbus-target rtl|cpp]
    the emulated server as a board on the network: IPbus 2.0 over UDP (docs/protocol.md);
    --ipbus-target rtl (the default; else the scenario's ipbus_target, else MXTB_IPBUS_TARGET)
    answers through the transactor RTL clocked in the simulation, cpp through the C++ reference
    target (docs/ipbus-rtl.md);
    a request unanswered for MS (default 2000; 0: off) is logged with what the simulation does;
    --inject-stall holds every EVERY-th request that reaches the simulation for MS first
    (a starved simulation thread, for tools/ipbus_stress.py);
    prints "listening on udp://ADDR:PORT" when it answers. It runs on the fast engine on one
    thread unless --engine/--threads (or, for every command that starts it, MXTB_ENGINE and
    MXTB_THREADS) say otherwise (docs/performance.md))"},
    {"rack", mxtb::app::cmd_rack,
     R"(rack --scenario FILE [--out DIR] [--seed N] [--processes N] [--peer-timeout-s S] [--window W] [--fst-dir DIR] [--progress]
    [--calibration FILE] [--engine reference|fast]
    a rack of servers emulated as one system (docs/rack.md): every server a whole board (controller
    RTL and firmware, link layers, mesh), the fibres between their meshes with their latency and
    loss, one global time in windows of the shortest fibre's latency; the tenant's torus brought up
    across servers and its traffic checked. --processes N: the servers split over N MPI
    processes (MPICH's mpiexec, started by this command; a process that dies or stays silent S
    seconds, default 30, ends every other with its name). --window W: cycles a window (at most,
    and by default, the shortest fibre's latency; results do not depend on it). Writes DIR/rack.json (the same for any partition),
    DIR/rack-perf.json and DIR/events/serverN.events.jsonl (default DIR: out/rack)
rack --scenario FILE --launcher slurm --processes N [--partition P] [--time-limit T] [--sbatch-args "ARGS"] [--poll-s S]
    the same rack as one Slurm job of N tasks (mpiexec inside the job's allocation)
rack --scenario FILE --serve [--time-mode lockstep|paced|free] [--rtf R] [--listen ADDR:PORT] [--ipbus-target rtl|cpp]
    [--fst-dir DIR] [--stop-after-s S] [--stall-report-ms MS] [--processes N]
    every server's board on the network, as mxtb sim serves one: a 'listening on udp://ADDR:PORT server S'
    line each; lockstep time commands move the whole rack)"},
    {"rack-failover", mxtb::app::cmd_rack_failover,
     R"(rack-failover --scenario FILE --fail S.X[,S.X...] [--out DIR] [--json FILE] [--calibration FILE]
    [--job [--job-op OP] [--job-type float|bfloat16] [--job-bytes N] [--ranks]]
    XPU deaths in a served rack (mxtb rack --serve, lockstep, on loopback), in the order given, each
    failed over by the host's rack path: its own server's spare first, else the nearest server's,
    placed on every board whose map changes as one transaction; prints one line a failure (spare,
    outcome, boards touched, the XPUs whose links left Active, words lost, time from the failure)
    and writes DIR/rack-failover.json (docs/rack.md). Exit 1 when a failure found no spare or its
    placement did not verify (default DIR: out/rack-failover). --job: the tenant's job of collectives,
    each path ending at its first verified collective on the new ring; --ranks: its ranks as Gloo
    processes, their re-form on the path
rack-failover --scenario FILE --migrate --fail S.X --job [--slice WxH[@X,Y]] [--state-bytes N] [--ranks]
    the migration baseline beside Morphlux: the same death on the same rack twice, Morphlux with the
    slice (a block of the rack's torus, default half of it) as its tenant, then the rack's torus
    left static, the slice moved to the nearest free block, every rank relaunched; one row each
    and their ratio, the state's move modeled (N bytes a rank, default 4 GiB)
rack-failover --scenario-seed N [--out DIR] [--json FILE] [--calibration FILE]
    one seed of the rack campaign (mxtb regress --rack): the rack, the deaths, a fibre cut and a
    death during a transaction drawn from N (one seed in six: the migration baseline instead); checks the campaign's rules (docs/rack.md) and writes
    the first failover's timeline as report.json's; exit 1 when a rule broke)"},
    {"reg", mxtb::app::cmd_reg,
     R"(reg read|write|dump --target udp://ADDR:PORT [NAME|ADDRESS [VALUE]] [--count N] [--timeout-ms MS]
    registers by name: controller (STATUS, LINK_STATUS[3]), emulator (emu.TIME_NS_LO), ram[i]
reg uhal --out DIR [--target udp://ADDR:PORT] [--id ID]
    writes the map as a uHAL address table (DIR/mxtb_board.xml) and a connections file naming
    the board or emulator at ADDR:PORT (default 127.0.0.1:50001) as device ID (mxtb.board))"},
    {"link-pair", mxtb::app::cmd_link_pair,
     R"(link-pair --scenario FILE [--seed N] | --random SEED
    [--harness systemc|loop] [--json FILE] [--fst FILE [--fst-from C] [--fst-to C]] [--progress CYCLES]
    two verilated link endpoints over a lane channel model with an XPU scoreboard)"},
    {"alloc", mxtb::app::cmd_alloc,
     R"(alloc --racks R --workload tpuv4|philly|FILE --policy baseline|morphlux|both --json FILE
alloc --experiment frag-tpuv4|fragmented-32|spares --json FILE
    [--seed N] [--solver auto|ilp|heuristic] [--ilp-ms N] [--fibres F] [--requests N] [--load X]
    [--trials N] [--free F] [--util U] [--probes N] [--churn N] [--chips N] [--target P]
    [--plots PREFIX | --no-plots] [--no-check]
    [--baseline aligned|torus-first-fit|both] [--morphlux server|neighbour|both]
    fragmented-32: [--fill aligned|torus-first-fit|both] [--fill-mix 4|4/8|4/8/16/32|all]
    datacenter allocation: the torus allocator against Morphlux (docs/alloc.md))"},
    {"serve", mxtb::app::cmd_serve,
     R"(serve --trace FILE|azure-code|azure-conv|chat-burst|synthetic-burst|long-prompt [--policy NAME...]
    [--scale X|auto] [--json FILE] [--plot FILE.svg] [--model M] [--device h100|h200] [--kv-gib G]
    [--slice K] [--seed N] [--real-bytes-per-token B] [--max-wait S] [--requests N]
    [--fabric emulator|static] [--fabric-preset thermo_optic|electro_optic|mems]
    [--burst N] [--bursts K] [--rate R] [--duration S] [--no-overload] [--paging-budget B] [--repick N]
    LLM serving under bursts: policies fcfs, vllm-0.3, recompute, aqua-host, aqua-fabric, aqua
    (default: all six); the load at an operating point the stronger baseline sustains, bursts on
    top, and the sustained overload beside it (docs/serve.md))"},
    {"collective", mxtb::app::cmd_collective,
     R"(collective [--op all_reduce|reduce_scatter|all_gather|alltoall|all ...] [--type float|bfloat16]
    [--minbytes 4K] [--maxbytes 4M] [--stepfactor 2] [--tenant X,X,..] [--placement torus|steered|both]
    [--rings N] [--one-direction] [--grain W] [--algo auto|ring|chain] [--ber B] [--seed N] [--engine fast|reference] [--json FILE] [--plot FILE.svg]
    nccl-tests' sweep on the emulated server: ring collectives with real data over the RTL links,
    the static torus wiring against lanes steered into the tenant's ring (docs/collectives.md)
collective --rack FILE [--op OP] [--type T] [--minbytes 4K] [--maxbytes 4M] [--stepfactor 2] [--grain W] [--seed N] [--json FILE]
    the same sweep on a rack's tenant: one ring collective over every server's ranks, its rings across
    the fibres, busbw against the fibres' limit (docs/rack.md))"},
    {"bench steering", mxtb::app::cmd_bench_steering,
     R"(bench steering [--preset electro_optic|thermo_optic|mems ...] [--pair X,X] [--minbytes 4K]
    [--maxbytes 4M] [--stepfactor 2] [--seed N] [--json FILE] [--plot FILE.svg]
    a hot pair's all-reduce on the static torus against its lanes steered to each other, with the
    reconfiguration measured: the size above which steering pays, per settle preset (docs/collectives.md))"},
    {"bench link", mxtb::app::cmd_bench_link,
     R"(bench link [--cycles N] [--batch N] [--rounds N] [--json FILE]
    simulated cycles per second of a link pair: plain C++ loop against the SystemC harness)"},
    {"bench link-campaign", mxtb::app::cmd_bench_link_campaign,
     R"(bench link-campaign [--seeds N] [--first-seed S] [--jobs J] [--json FILE]
    random link-pair seeds (faults, and A's lane steered to a third endpoint and back in about one
    seed of three) in J threads: passes, cycles, peer moves; the goal is 1e8 cycles at 0 errors)"},
    {"bench bridge", mxtb::app::cmd_bench_bridge,
     R"(bench bridge [--rounds N] [--blocks N] [--ipbus-target rtl|cpp|both] [--json FILE]
    IPbus round trip and block-read throughput against a plain UDP echo on loopback, and the
    board cycles each request takes; both (the default): the RTL and the C++ target side by side)"},
    {"bench reconfig", mxtb::app::cmd_bench_reconfig,
     R"(bench reconfig [--scenario FILE] [--seed N] [--out DIR] [--json FILE]
    the demo's failover once per settle preset: the failure-to-Active breakdown of each)"},
    {"bench server", mxtb::app::cmd_bench_server,
     R"(bench server [--cycles N] [--rounds R] [--threads T,T..] [--xpus 5|8] [--seed N] [--json FILE]
    [--no-systemc] [--no-breakdown] [--no-reference]
    the whole emulated server's simulated cycles per second, engine by engine, under traffic and
    through a reconfiguration, with where the time goes (docs/performance.md))"},
    {"bench rack", mxtb::app::cmd_bench_rack,
     R"(bench rack [--run-us US] [--repeat N] [--settle electro_optic|thermo_optic|mems] [--seed N] [--tcp-us US] [--out DIR] [--json FILE]
    the rack's synchronization cost, each case a real mxtb rack run side by side in N rounds (default 5; ratios
    the median over rounds, with their range): a server alone
    against the same server in racks of 2 and 4, the rack on 1, 2 and 4 processes, and the
    projection to 16 servers on 16 cores and to hosts over TCP (docs/rack.md))"},
    {"bench alloc", mxtb::app::cmd_bench_alloc,
     R"(bench alloc --json FILE [--requests N] [--racks R] [--ilp-instances N] [--seed N] [--ilp-ms N]
    100,000-request trace with the heuristic, integer-program solve times)"},
    {"bench paging", mxtb::app::cmd_bench_paging,
     R"(bench paging [--quick] [--sizes B,B..] [--counts N,N..] [--max-mib M] [--gpu-max-mib M] [--reps N]
    [--json FILE]
    KV-cache paging bandwidth of each copy backend and tier against memcpy ceilings (docs/paging.md))"},
};

std::string usage_of(const Command& c) {
  std::string out;
  std::string text = c.usage;
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(at, nl - at);
    out += (line.rfind(" ", 0) == 0 ? "  " : "  mxtb ") + line + "\n";
    at = nl + 1;
  }
  return out;
}

std::string full_usage() {
  std::string out = "usage: mxtb COMMAND [options]\n\ncommands:\n";
  for (const auto& c : kCommands) out += usage_of(c);
  out += "\nThe root script adds: ./mxtb demo (the main job), ./mxtb test [ctest args] (the test suite).\n"
         "mxtb COMMAND --help prints that command's usage.\n";
  return out;
}

std::string bench_names() {
  std::set<std::string> names;
  for (const auto& c : kCommands)
    if (std::string n = c.name; n.rfind("bench ", 0) == 0) names.insert(n.substr(6));
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using mxtb::app::UsageError;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::fputs(full_usage().c_str(), args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  std::string name = args[0];
  args.erase(args.begin());
  const Command* cmd = nullptr;
  try {
    if (name == "bench") {
      if (args.empty() || args[0].rfind("--", 0) == 0)
        throw UsageError(fmt::format("bench wants one of: {}; got '{}'", bench_names(), args.empty() ? "" : args[0]));
      name += " " + args[0];
      args.erase(args.begin());
    }
    for (const auto& c : kCommands)
      if (name == c.name) cmd = &c;
    if (!cmd) {
      if (name.rfind("bench ", 0) == 0)
        throw UsageError(fmt::format("bench wants one of: {}; got '{}'", bench_names(), name.substr(6)));
      throw UsageError(fmt::format("unknown command '{}'", name));
    }
    if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
      fmt::print("usage:\n{}", usage_of(*cmd));
      return 0;
    }
    return cmd->run(args);
  } catch (const UsageError& e) {
    fmt::print(stderr, "mxtb {}: error: {}\n\n{}", name, e.what(), cmd ? "usage:\n" + usage_of(*cmd) : full_usage());
    return 2;
  } catch (const mxtb::app::InputError& e) {
    fmt::print(stderr, "mxtb {}: error: {}\n", name, e.what());
    return 2;
  } catch (const mxtb::app::ScenarioError& e) {
    fmt::print(stderr, "mxtb {}: scenario error: {}\n", name, e.what());
    return 2;
  } catch (const mxtb::sim::RtlAssertionFailure& e) {
    fmt::print(stderr, "mxtb {}: error: {}\n  rerun: {}\n", name, e.what(),
               mxtb::app::rtl_assert_rerun(name, args, e.cycle()));
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "mxtb {}: error: {}\n", name, e.what());
    return 1;
  }
}
