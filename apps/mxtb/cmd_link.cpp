// `mxtb link-pair` runs one link-pair scenario; `mxtb bench link` measures the link pair's
// simulation speed in the plain C++ loop and under SystemC, side by side in one process;
// `mxtb bench link-campaign` runs many random link-pair seeds (peer moves and faults) in threads.
#include "apps/mxtb/args.h"
#include "apps/mxtb/commands.h"

#include "sim/link/link_pair.h"
#include "sim/link/link_pair_sc.h"
#include "sim/common/sc_runner.h"
#include "apps/mxtb/scenario.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace mxtb::app {

using nlohmann::json;
using sim::LinkPair;
using sim::LinkPairConfig;
using sim::LinkPairResult;

namespace {

void write_json(const std::string& path, const json& j) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path));
  out << j.dump(2) << "\n";
  if (!out) throw std::runtime_error(fmt::format("write to {} failed", path));
}

void print_result(const LinkPairConfig& cfg, const LinkPairResult& r, double wall_s) {
  double sim_us = r.cycles * 1000.0 / cfg.clock_mhz / 1000.0;
  fmt::print("  {} cycles at {} MHz = {:.1f} us simulated in {:.2f} s wall ({:.0f} cycles/s)\n",
             r.cycles, cfg.clock_mhz, sim_us, wall_s, r.cycles / std::max(wall_s, 1e-9));
  fmt::print("  {:<3} {:<10} {:<16} {:>9} {:>10} {:>10} {:>8} {:>8} {:>8} {:>10}\n", "", "state",
             "reason", "peer", "frames_tx", "frames_rx", "crc_err", "replays", "retrains", "bad_blocks");
  std::vector<std::pair<const char*, const sim::EndpointReport*>> eps{{"A", &r.a}, {"B", &r.b}};
  if (r.c) eps.push_back({"C", &*r.c});
  for (auto [name, e] : eps)
    fmt::print("  {:<3} {:<10} {:<16} {:>9} {:>10} {:>10} {:>8} {:>8} {:>8} {:>10}\n", name,
               link::to_string(e->state), link::to_string(e->reason),
               fmt::format("{}.{}", e->peer.xpu, e->peer.lane), e->frames_tx, e->frames_rx,
               e->crc_errors, e->replays, e->retrains, e->bad_blocks);
  const bool moved = r.ab.peer_moves > 0;
  const std::string peer(1, static_cast<char>(r.peer - 32));
  for (auto [name, d] : {std::pair{"A->" + peer, &r.ab}, std::pair{peer + "->A", &r.ba}}) {
    fmt::print("  {}: {} messages sent, {} delivered ({} words), {} scoreboard errors", name,
               d->messages_sent, d->messages_delivered, d->words_delivered, d->errors);
    if (moved)
      fmt::print("; after {} planned peer moves (delivered counts every peer's stream): last message {}", d->peer_moves,
                 d->last_delivered ? "delivered" : "NOT delivered");
    fmt::print("\n");
  }
  fmt::print("  channels: A->B {} bits flipped, {} erasures, {} dark cycles; B->A {}, {}, {}\n",
             r.ch_ab.bits_flipped, r.ch_ab.erasures, r.ch_ab.dark_cycles, r.ch_ba.bits_flipped,
             r.ch_ba.erasures, r.ch_ba.dark_cycles);
  size_t shown = 0;
  for (const auto& t : r.transitions) {
    if (shown++ == 12) {
      fmt::print("  ... {} more transitions\n", r.transitions.size() - 12);
      break;
    }
    fmt::print("  cycle {:>9}: {} {} -> {} ({})\n", t.cycle, static_cast<char>(t.endpoint - 32),
               link::to_string(t.from), link::to_string(t.to), link::to_string(t.reason));
  }
}

}  // namespace

int cmd_link_pair(const ArgList& argv) {
  Args args(argv, {"--scenario", "--random", "--seed", "--harness", "--fst", "--fst-from", "--fst-to", "--json", "--progress"}, {});
  if (args.has("--scenario") == args.has("--random"))
    throw UsageError("give exactly one of --scenario FILE or --random SEED");
  LinkPairConfig cfg;
  std::string rerun;
  if (args.has("--random")) {
    uint64_t seed = args.u64("--random", 0);
    cfg = random_link_pair_scenario(seed);
    rerun = fmt::format("./mxtb link-pair --random {}", seed);
  } else {
    std::string path = args.str("--scenario");
    cfg = load_link_pair_scenario(path);
    if (args.has("--seed")) set_seed(cfg, args.u64("--seed", cfg.seed));
    rerun = fmt::format("./mxtb link-pair --scenario {} --seed {}", path, cfg.seed);
  }
  std::string harness = args.str("--harness", "systemc");
  if (harness != "systemc" && harness != "loop")
    throw UsageError(fmt::format("--harness must be systemc or loop, got '{}'", harness));
  sim::TraceOptions trace;
  trace.fst_path = args.str("--fst");
  trace.from_cycle = args.u64("--fst-from", 0);
  trace.to_cycle = args.u64("--fst-to", UINT64_MAX);
  uint64_t progress = args.u64("--progress", 0);

  fmt::print("mxtb link-pair: scenario {}, seed {}, time mode free, harness {}\n", cfg.name, cfg.seed, harness);
  auto t0 = std::chrono::steady_clock::now();
  LinkPairResult r;
  if (harness == "loop") {
    LinkPair pair(cfg, trace);
    pair.run();
    r = pair.result();
  } else {
    int rc = sim::run_under_systemc([&] {
      LinkPair pair(cfg, trace, /*apply_actions_itself=*/false);
      r = sim::run_link_pair_sc(pair, sim::ScRunOptions{1000, progress});
      return 0;
    });
    if (rc != 0) return rc;
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  print_result(cfg, r, wall);
  if (!trace.fst_path.empty()) fmt::print("  waveform: {}\n", trace.fst_path);
  if (args.has("--json")) {
    json j{{"command", "link-pair"}, {"time_mode", "free"}, {"harness", harness},
           {"scenario", to_json(cfg)}, {"seed", cfg.seed}, {"wall_s", wall}, {"result", to_json(r)}};
    write_json(args.str("--json"), j);
  }
  if (r.passed()) {
    fmt::print("PASS {}\n", cfg.name);
    return 0;
  }
  for (const auto& f : r.failures) fmt::print("FAIL: {}\n", f);
  fmt::print("rerun alone: {}   (add --fst out/{}.fst for a waveform)\n", rerun, cfg.name);
  return 1;
}

int cmd_bench_link(const ArgList& argv) {
  Args args(argv, {"--cycles", "--json", "--batch", "--rounds"}, {});
  uint64_t cycles = args.u64("--cycles", 1000000);
  uint64_t batch = args.u64("--batch", 1000);
  const uint64_t rounds_arg = args.u64("--rounds", 3);
  if (cycles < 10000) throw UsageError("--cycles must be at least 10000");
  if (batch < 1) throw UsageError("--batch must be at least 1");
  if (rounds_arg < 1 || rounds_arg > 100) throw UsageError("--rounds must be 1 to 100");
  const int rounds = static_cast<int>(rounds_arg);

  // Both directions saturated with traffic, a clean channel: the link layer's busiest case.
  LinkPairConfig cfg;
  cfg.name = "bench-link";
  cfg.traffic_cycles = cycles;
  cfg.drain_cycles = 200000;
  cfg.ab.latency_cycles = cfg.ba.latency_cycles = 8;

  auto timed = [](auto&& fn) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  fmt::print("mxtb bench link: {} traffic cycles, both directions saturated, time mode free\n", cycles);

  // Warm-up, then loop, SystemC, then the rounds against the loop without assertions. Noise on a
  // shared machine only ever adds time, so the loop's figure is its fastest run, taken on either
  // side of the SystemC run; the SystemC figure is its only run (SystemC elaborates once per
  // process), which makes the ratio, if anything, pessimistic.
  {
    LinkPairConfig warm = cfg;
    warm.traffic_cycles = 20000;
    LinkPair pair(warm);
    pair.run();
  }
  LinkPairResult loop_r, sc_r;
  uint64_t sc_batches = 0;
  std::vector<double> loop_s;
  auto run_loop = [&] {
    LinkPair pair(cfg);
    loop_s.push_back(timed([&] { pair.run(); }));
    loop_r = pair.result();
  };
  run_loop();
  fmt::print("  (a) plain C++ loop:    {:.3f} s\n", loop_s.back());
  double sc_s = 0;
  int rc = sim::run_under_systemc([&] {
    LinkPair pair(cfg, {}, false);
    sim::LinkPairSc harness("link_pair", pair, batch);
    sim::FaultInjector injector("fault_injector", pair);
    sc_s = timed([&] { sc_core::sc_start(); });
    sc_r = pair.result();
    sc_batches = harness.batches();
    return 0;
  });
  if (rc != 0) return rc;
  fmt::print("  (b) SystemC harness:   {:.3f} s ({} batches of up to {} cycles)\n", sc_s, sc_batches, batch);
  // The cost of the RTL assertions: the same loop on endpoints built without them, in rounds of
  // one run each, which of the two goes first alternating, so that both see the same machine;
  // each side's figure is its fastest run (noise only adds).
  LinkPairResult off_r;
  std::vector<double> off_s;
  auto run_off = [&] {
    LinkPairConfig off = cfg;
    off.assertions = false;
    LinkPair pair(off);
    off_s.push_back(timed([&] { pair.run(); }));
    off_r = pair.result();
  };
  for (int r = 0; r < rounds; ++r) {
    if (r % 2 == 0) {
      run_loop();
      run_off();
    } else {
      run_off();
      run_loop();
    }
    fmt::print("  round {}: (a) with asserts {:.3f} s, (c) without {:.3f} s: {:+.1f} %\n", r + 1, loop_s.back(), off_s.back(),
               100.0 * (loop_s.back() / off_s.back() - 1.0));
  }

  double loop_best = *std::min_element(loop_s.begin(), loop_s.end());
  double a_rate = loop_r.cycles / loop_best;
  double b_rate = sc_r.cycles / sc_s;
  double ratio = b_rate / a_rate;
  bool identical = to_json(loop_r) == to_json(sc_r) && to_json(loop_r) == to_json(off_r);
  const double off_best = *std::min_element(off_s.begin(), off_s.end());
  const double c_rate = off_r.cycles / off_best;
  // How much longer the same cycles take with assertions than without.
  const double assert_cost_pct = 100.0 * (loop_best / off_best - 1.0);
  const double assert_goal_pct = 15.0;
  fmt::print("\n  {:<22} {:>12} {:>14}\n", "harness", "cycles", "cycles/s");
  fmt::print("  {:<22} {:>12} {:>14.0f}\n", "(a) plain C++ loop", loop_r.cycles, a_rate);
  fmt::print("  {:<22} {:>12} {:>14.0f}\n", "(b) SystemC, batched", sc_r.cycles, b_rate);
  fmt::print("  {:<22} {:>12} {:>14.0f}\n", "(c) loop, no asserts", off_r.cycles, c_rate);
  fmt::print("  ratio b/a: {:.3f} (goal >= 0.5: {})\n", ratio, ratio >= 0.5 ? "met" : "NOT met");
  fmt::print("  assertions cost: {:+.1f} % wall time, a against c (goal <= {:.0f} %: {})\n", assert_cost_pct,
             assert_goal_pct, assert_cost_pct <= assert_goal_pct ? "met" : "NOT met");
  fmt::print("  all runs simulated the same thing: {}\n", identical ? "yes (identical results)" : "NO");
  fmt::print("  traffic delivered: A->B {} messages, B->A {} messages\n", loop_r.ab.messages_delivered,
             loop_r.ba.messages_delivered);
  if (args.has("--json")) {
    json j{{"bench", "link"},
           {"time_mode", "free"},
           {"cycles", loop_r.cycles},
           {"clock_mhz", cfg.clock_mhz},
           {"plain_loop", {{"wall_s", loop_s}, {"best_wall_s", loop_best}, {"cycles_per_s", a_rate}}},
           {"systemc", {{"wall_s", sc_s}, {"cycles_per_s", b_rate}, {"batches", sc_batches}, {"max_batch", batch}}},
           {"ratio_b_over_a", ratio},
           {"assertions_off", {{"wall_s", off_s}, {"best_wall_s", off_best}, {"cycles_per_s", c_rate}}},
           {"assertion_cost_pct", assert_cost_pct},
           {"assertion_rounds", rounds},
           {"goal_assertion_cost_pct", assert_goal_pct},
           {"assertion_goal_met", assert_cost_pct <= assert_goal_pct},
           {"goal_ratio", 0.5},
           {"goal_met", ratio >= 0.5},
           {"identical_results", identical},
           {"hardware_threads", std::thread::hardware_concurrency()}};
    write_json(args.str("--json"), j);
    fmt::print("  wrote {}\n", args.str("--json"));
  }
  return identical ? 0 : 1;
}

namespace {

// One seed of the link-pair campaign: what `mxtb link-pair --random SEED --harness loop` runs.
struct CampaignSeed {
  uint64_t seed = 0;
  bool passed = false;
  uint64_t cycles = 0, moves = 0, retrains = 0, replays = 0;
  std::optional<uint64_t> recovery;  // cycles from the last disruption to the last state change
  std::vector<std::string> failures;
};

// How long the pair took to settle after its last disruption (the light back after a dark window
// or a move, an enable, a retrain request): from that cycle to the last state change of either
// endpoint, 0 if none followed. Only for runs that end with both Active; lanes with bit errors
// count too, so an error-rate retrain after the last fault would show here as a longer recovery.
std::optional<uint64_t> recovery_cycles(const LinkPairConfig& cfg, const LinkPairResult& r) {
  using K = sim::LinkAction::Kind;
  if (r.a.state != link::LinkState::Active || r.b.state != link::LinkState::Active) return std::nullopt;
  uint64_t last_fault = 0;
  bool any = false;
  for (const auto& a : cfg.actions)
    if (a.kind == K::DarkOff || a.kind == K::Enable || a.kind == K::Retrain) {
      last_fault = std::max(last_fault, a.cycle);
      any = true;
    }
  if (!any) return std::nullopt;
  uint64_t last_change = 0;
  for (const auto& t : r.transitions) last_change = std::max(last_change, t.cycle);
  return last_change > last_fault ? last_change - last_fault : 0;
}

CampaignSeed run_campaign_seed(uint64_t seed) {
  CampaignSeed out;
  out.seed = seed;
  try {
    const LinkPairConfig cfg = random_link_pair_scenario(seed);
    LinkPair pair(cfg);
    pair.run();
    LinkPairResult r = pair.result();
    out.recovery = recovery_cycles(cfg, r);
    out.passed = r.passed();
    out.cycles = r.cycles;
    out.moves = r.ab.peer_moves;
    out.retrains = r.a.retrains + r.b.retrains + (r.c ? r.c->retrains : 0);
    out.replays = r.a.replays + r.b.replays + (r.c ? r.c->replays : 0);
    out.failures = r.failures;
  } catch (const std::exception& e) {  // an RTL assertion, or a harness error: a failed seed
    out.failures.push_back(e.what());
  }
  return out;
}

}  // namespace

int cmd_bench_link_campaign(const ArgList& argv) {
  Args args(argv, {"--seeds", "--first-seed", "--jobs", "--json"}, {});
  const uint64_t seeds = args.u64("--seeds", 500);
  const uint64_t first = args.u64("--first-seed", 1);
  const uint64_t jobs_arg = args.u64("--jobs", std::max(1u, std::thread::hardware_concurrency()));
  if (seeds < 1) throw UsageError("--seeds must be at least 1");
  if (jobs_arg < 1 || jobs_arg > 256) throw UsageError("--jobs must be 1 to 256");
  const uint64_t goal_cycles = 100'000'000;

  fmt::print("mxtb bench link-campaign: random link-pair seeds {}..{} (peer moves in about one in three), "
             "{} jobs, plain C++ loop, time mode free\n", first, first + seeds - 1, jobs_arg);
  std::vector<CampaignSeed> results(seeds);
  std::atomic<uint64_t> next{0};
  std::mutex print_mu;
  auto t0 = std::chrono::steady_clock::now();
  auto worker = [&] {
    for (uint64_t i = next++; i < seeds; i = next++) {
      results[i] = run_campaign_seed(first + i);
      if (!results[i].passed) {
        std::lock_guard<std::mutex> lock(print_mu);
        fmt::print("  FAIL seed {}: {}\n    rerun alone: ./mxtb link-pair --random {}\n", first + i,
                   results[i].failures.empty() ? "?" : results[i].failures.front(), first + i);
      }
    }
  };
  std::vector<std::thread> pool;
  for (uint64_t j = 0; j < std::min(jobs_arg, seeds); ++j) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  uint64_t passed = 0, cycles = 0, moved_seeds = 0, moves = 0, retrains = 0, replays = 0;
  json failed = json::array();
  std::vector<uint64_t> recovery;
  for (const auto& r : results) {
    if (r.recovery) recovery.push_back(*r.recovery);
    passed += r.passed;
    cycles += r.cycles;
    moved_seeds += r.moves > 0;
    moves += r.moves;
    retrains += r.retrains;
    replays += r.replays;
    if (!r.passed) failed.push_back({{"seed", r.seed}, {"failures", r.failures}});
  }
  fmt::print("  {} seeds: {} passed, {} failed\n", seeds, passed, seeds - passed);
  fmt::print("  {} cycles simulated in {:.1f} s wall ({:.0f} cycles/s over {} jobs)\n", cycles, wall, cycles / wall,
             jobs_arg);
  fmt::print("  {} seeds with planned peer moves ({} moves), {} retrains, {} go-back-N replays in all\n", moved_seeds,
             moves, retrains, replays);
  std::sort(recovery.begin(), recovery.end());
  auto pct = [&](double q) { return recovery.empty() ? 0 : recovery[static_cast<size_t>(q * (recovery.size() - 1))]; };
  if (!recovery.empty())
    fmt::print("  recovery after the last fault ({} seeds ending Active): p50 {} p99 {} max {} cycles "
               "(to the last state change; seed {} the longest)\n", recovery.size(), pct(0.5), pct(0.99),
               recovery.back(), [&] {
                 for (const auto& r : results)
                   if (r.recovery && *r.recovery == recovery.back()) return r.seed;
                 return uint64_t{0};
               }());
  if (cycles >= goal_cycles)
    fmt::print("  goal: >= {} cycles with 0 failures: {}\n", goal_cycles, passed == seeds ? "met" : "NOT met");
  else
    fmt::print("  goal: >= {} cycles with 0 failures: not measured by this sample ({} cycles; about 1,000 seeds reach it)\n",
               goal_cycles, cycles);
  if (args.has("--json")) {
    json j{{"bench", "link-campaign"}, {"time_mode", "free"},   {"first_seed", first},
           {"seeds", seeds},           {"passed", passed},      {"failed", failed},
           {"cycles", cycles},         {"wall_s", wall},        {"jobs", jobs_arg},
           {"seeds_with_moves", moved_seeds}, {"peer_moves", moves}, {"retrains", retrains},
           {"replays", replays},       {"goal_cycles", goal_cycles},
           {"recovery_cycles", {{"seeds", recovery.size()}, {"p50", pct(0.5)}, {"p99", pct(0.99)},
                                {"max", recovery.empty() ? 0 : recovery.back()}}},
           {"goal_met", cycles >= goal_cycles && passed == seeds}};
    write_json(args.str("--json"), j);
    fmt::print("  wrote {}\n", args.str("--json"));
  }
  return passed == seeds ? 0 : 1;
}

}  // namespace mxtb::app
