// `mxtb collective`: nccl-tests' sweep on the emulated server (apps/mxtb/bench_collective.h), for the
// static torus wiring and for lanes steered into the tenant's ring, side by side. docs/collectives.md.
#include "apps/mxtb/args.h"
#include "apps/mxtb/commands.h"
#include "apps/mxtb/plot.h"
#include "apps/mxtb/bench_collective.h"
#include "protocol/fabric_map.h"
#include "sim/mesh/photonic_mesh.h"
#include "apps/mxtb/bench_server.h"
#include "apps/mxtb/scenario.h"
#include "sim/rack/rack_sim.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>

namespace mxtb::app {

namespace {

// nccl-tests' size syntax: a number with an optional K, M or G (powers of 1024).
uint64_t parse_bytes(const std::string& flag, const std::string& v) {
  if (v.empty()) throw UsageError(fmt::format("{}: empty size", flag));
  uint64_t mult = 1;
  std::string digits = v;
  switch (v.back()) {
    case 'K': case 'k': mult = 1ull << 10; digits.pop_back(); break;
    case 'M': case 'm': mult = 1ull << 20; digits.pop_back(); break;
    case 'G': case 'g': mult = 1ull << 30; digits.pop_back(); break;
    default: break;
  }
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError(fmt::format("{} '{}': not a size (a number, optionally followed by K, M or G)", flag, v));
  uint64_t n = std::stoull(digits);
  if (n == 0 || n > (1ull << 34) / mult) throw UsageError(fmt::format("{} '{}': out of range (1 B to 16 GiB)", flag, v));
  return n * mult;
}

void print_table(const CollectiveBenchResult& r, const std::string& placement) {
  const auto& c = r.config;
  const size_t streams = r.rows.empty() ? 0 : static_cast<size_t>(r.rows.front().rings);
  fmt::print("# placement {}: {} ranks on XPUs {}, {} {} {} ({} lanes sent on per rank, {:.1f} Gb/s each at {:.2f} MHz), "
             "bring-up {:.1f} us\n",
             placement, c.tenant.size(), fmt::join(c.tenant, " "), to_string(r.algorithm), streams,
             r.algorithm == sim::Algorithm::Chain ? "streams" : "rings", r.tx_lanes_per_rank, r.lane_gbps, r.clock_mhz,
             static_cast<double>(r.bringup_cycles) * 1e3 / r.clock_mhz / 1e3);
  fmt::print("#\n");
  fmt::print("#{:>11} {:>13} {:>9} {:>7} {:>7} {:>10} {:>7} {:>7} {:>6} {:>8} {:>6} {:>7}\n", "size", "count", "type", "redop",
             "root", "time", "algbw", "busbw", "#wrong", "replays", "crc", "stall%");
  fmt::print("#{:>11} {:>13} {:>9} {:>7} {:>7} {:>10} {:>7} {:>7} {:>6} {:>8} {:>6} {:>7}\n", "(B)", "(elements)", "", "", "",
             "(us)", "(GB/s)", "(GB/s)", "", "", "", "");
  std::string op;
  double bw_sum = 0;
  uint64_t wrong = 0;
  for (const auto& x : r.rows) {
    if (to_string(x.op) != op) {
      op = to_string(x.op);
      fmt::print("# {}\n", op);
    }
    bool sums = x.op == sim::CollectiveOp::AllReduce || x.op == sim::CollectiveOp::ReduceScatter;
    double stall = x.lane_words + x.backpressure ? 100.0 * static_cast<double>(x.backpressure) /
                                                      static_cast<double>(x.lane_words + x.backpressure)
                                                : 0.0;
    fmt::print(" {:>11} {:>13} {:>9} {:>7} {:>7} {:>10.2f} {:>7.2f} {:>7.2f} {:>6} {:>8} {:>6} {:>7.1f}{}\n", x.size, x.count,
               to_string(x.type), sums ? "sum" : "none", -1, x.time_us, x.algbw_gbs, x.busbw_gbs, x.wrong, x.replays,
               x.crc_errors, stall, x.completed && !x.framing_errors ? "" : "  FAILED: " + x.first_error);
    bw_sum += x.busbw_gbs;
    wrong += x.wrong + x.framing_errors;
  }
  fmt::print("# Out of bounds values : {} {}\n", wrong, wrong ? "FAILED" : "OK");
  fmt::print("# Avg bus bandwidth    : {:.4f}\n#\n", r.rows.empty() ? 0.0 : bw_sum / static_cast<double>(r.rows.size()));
}

bool plot_busbw(const std::vector<std::pair<std::string, CollectiveBenchResult>>& runs, const std::string& svg) {
  std::vector<PlotSeries> series;
  for (const auto& [placement, r] : runs)
    for (const auto& x : r.rows) {
      const std::string title = placement + " " + to_string(x.op);
      if (series.empty() || series.back().title != title) series.push_back({title, {}});
      series.back().points.emplace_back(static_cast<double>(x.size), x.busbw_gbs);
    }
  return plot_series(svg, "set logscale x 2\nset xlabel 'size (bytes)'\nset ylabel 'busbw (GB/s)'\nset key top left\nset grid",
                     series, "linespoints lw 2");
}

void plot_steering(const SteeringBenchResult& r, const std::string& svg) {
  std::vector<PlotSeries> series;
  for (const auto& p : r.presets) {
    PlotSeries s{sim::to_string(p.preset), {}};
    for (size_t i = 0; i < p.static_rows.size(); ++i)
      s.points.emplace_back(static_cast<double>(p.static_rows[i].size),
                            p.static_rows[i].time_us - p.steered_rows[i].time_us - p.to_pair_us);
    series.push_back(std::move(s));
  }
  plot_series(svg,
              "set logscale x 2\nset xlabel 'hot pair all-reduce size (bytes)'\n"
              "set ylabel 'phase time saved by steering (us)'\nset key top left\nset grid\nset xzeroaxis lw 2",
              series, "linespoints lw 2");
}

std::string bytes_text(double b) {
  if (b < 0) return "never (the steered lanes are no faster)";
  if (b >= 1 << 20) return fmt::format("{:.2f} MiB", b / (1 << 20));
  if (b >= 1 << 10) return fmt::format("{:.1f} KiB", b / (1 << 10));
  return fmt::format("{:.0f} B", b);
}

}  // namespace

int cmd_bench_steering(const ArgList& argv) {
  Args args(argv, ArgSpec{{"--seed", "--json", "--plot", "--minbytes", "--maxbytes", "--stepfactor"}, {}, {"--preset", "--pair"}, false});
  const uint64_t min_bytes = parse_bytes("--minbytes", args.str("--minbytes", "4K"));
  const uint64_t max_bytes = parse_bytes("--maxbytes", args.str("--maxbytes", "4M"));
  const uint64_t factor = args.u64("--stepfactor", 2, 2, 1024);
  if (max_bytes < min_bytes) throw UsageError(fmt::format("--maxbytes {} is below --minbytes {}", max_bytes, min_bytes));
  SteeringBenchConfig cfg;
  for (uint64_t s = min_bytes; s <= max_bytes; s *= factor) cfg.sizes.push_back(s / 8 * 8);
  if (!args.list("--preset").empty()) {
    cfg.presets.clear();
    for (const auto& name : args.list("--preset")) {
      auto p = sim::settle_preset_from_string(name);
      if (!p) throw UsageError(fmt::format("--preset '{}': not electro_optic, thermo_optic or mems", name));
      cfg.presets.push_back(*p);
    }
  }
  if (!args.list("--pair").empty()) cfg.pair = parse_xpus(args, "--pair");
  cfg.seed = args.u64("--seed", 1);
  cfg.calibration_file = source_root() + "/traces/calibration/mesh32.json";
  fmt::print("# mxtb bench steering: tenant XPUs {} on the static 2x2 torus; hot pair {}: an all-reduce of each size,\n"
             "# on the torus's circuits between them (static) or on every lane of the pair steered to each other\n"
             "# through the firmware (steered); times in emulated us, reconfiguration from the request to every\n"
             "# circuit Active\n#\n",
             fmt::join(cfg.tenant, " "), fmt::join(cfg.pair, " "));
  SteeringBenchResult r;
  try {
    r = run_steering_bench(cfg);
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
  for (const auto& p : r.presets) {
    fmt::print("# preset {} (tau {} ns): torus -> pair lanes {:.2f} us, back {:.2f} us\n", sim::to_string(p.preset),
               sim::preset_tau_ns(p.preset), p.to_pair_us, p.back_us);
    fmt::print("#{:>11} {:>11} {:>11} {:>13} {:>6} {:>7}\n", "size", "static", "steered", "steered+reconf", "pays", "#wrong");
    fmt::print("#{:>11} {:>11} {:>11} {:>13} {:>6} {:>7}\n", "(B)", "(us)", "(us)", "(us)", "", "");
    for (size_t i = 0; i < p.static_rows.size(); ++i) {
      const auto& a = p.static_rows[i];
      const auto& b = p.steered_rows[i];
      double with = b.time_us + p.to_pair_us;
      fmt::print(" {:>11} {:>11.2f} {:>11.2f} {:>13.2f} {:>6} {:>7}\n", a.size, a.time_us, b.time_us, with,
                 with < a.time_us ? "yes" : "no", a.wrong + b.wrong);
    }
    fmt::print("# steering pays above {}{} (steer and stay); {}{} (steer for the phase and back)\n#\n",
               bytes_text(p.break_even_bytes), p.extrapolated ? ", extrapolated" : "", bytes_text(p.round_trip_break_even_bytes),
               p.round_trip_extrapolated ? ", extrapolated" : "");
  }
  if (args.has("--json")) {
    std::ofstream f(args.str("--json"));
    if (!f) throw InputError(fmt::format("--json {}: cannot write", args.str("--json")));
    f << to_json(r).dump(2) << "\n";
    fmt::print("wrote {}\n", args.str("--json"));
  }
  if (args.has("--plot")) plot_steering(r, args.str("--plot"));
  fmt::print("{}\n", r.passed() ? "PASS" : "FAIL");
  return r.passed() ? 0 : 1;
}

namespace {

// --op, repeated or "all"; all_reduce when not given.
std::vector<sim::CollectiveOp> parse_ops(const Args& args) {
  std::vector<sim::CollectiveOp> ops;
  for (const auto& name : args.list("--op")) {
    if (name == "all") {
      ops = {sim::CollectiveOp::AllReduce, sim::CollectiveOp::ReduceScatter, sim::CollectiveOp::AllGather,
             sim::CollectiveOp::AllToAll};
      continue;
    }
    auto op = sim::collective_op_from_string(name);
    if (!op) throw UsageError(fmt::format("--op '{}': not all_reduce, reduce_scatter, all_gather, alltoall or all", name));
    ops.push_back(*op);
  }
  if (ops.empty()) ops = {sim::CollectiveOp::AllReduce};
  return ops;
}

// The configurations to run: the static torus (its ring, or a chain where the circuits close no
// ring) and the steered ring, as --placement asks; a tenant neither can carry is an InputError.
std::vector<std::pair<std::string, CollectiveBenchConfig>> placement_configs(const CollectiveBenchConfig& base,
                                                                              const std::string& placement) {
  std::vector<std::pair<std::string, CollectiveBenchConfig>> configs;
  try {
    if (placement != "steered") {
      auto c = base;
      c.port_map = sim::static_torus_map(c.shape);
      if (c.algo == CollectiveBenchConfig::Algo::Chain) sim::chain_plan(c.shape, c.port_map, c.tenant);
      else if (c.algo == CollectiveBenchConfig::Algo::Ring) sim::ring_plan(c.shape, c.port_map, c.tenant, c.both_directions);
      else try {
          sim::ring_plan(c.shape, c.port_map, c.tenant, c.both_directions);
        } catch (const std::invalid_argument&) {
          sim::chain_plan(c.shape, c.port_map, c.tenant);
        }
      configs.emplace_back("torus", c);
    }
    if (placement != "torus") {
      auto c = base;
      c.port_map = protocol::ring_map(c.shape, c.tenant).port_target;
      configs.emplace_back("steered", c);
    }
  } catch (const protocol::FabricMapError& e) {
    throw InputError(fmt::format("--tenant {}: {}", fmt::join(base.tenant, ","), e.what()));
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("--tenant {} on the static torus: {}", fmt::join(base.tenant, ","), e.what()));
  }
  return configs;
}

// A finetuning step: compute, then the gradient's all-reduce (the largest size measured), under
// both placements. Compute is swept as a multiple of the torus's all-reduce time. Prints the
// table and returns its rows (none without both placements' all-reduce).
nlohmann::json print_finetuning_step(const std::vector<std::pair<std::string, CollectiveBenchResult>>& results) {
  nlohmann::json step = nlohmann::json::array();
  const sim::CollectiveRow* t_ar = nullptr;
  const sim::CollectiveRow* s_ar = nullptr;
  if (results.size() == 2)
    for (size_t i = 0; i < results[0].second.rows.size(); ++i)
      if (results[0].second.rows[i].op == sim::CollectiveOp::AllReduce) {
        t_ar = &results[0].second.rows[i];
        s_ar = &results[1].second.rows[i];
      }
  if (t_ar && s_ar && s_ar->time_us > 0) {
    const double comm_ratio = t_ar->time_us / s_ar->time_us;
    fmt::print("# finetuning step: compute + all-reduce of the {} B gradient (torus {:.2f} us, steered {:.2f} us)\n", t_ar->size,
               t_ar->time_us, s_ar->time_us);
    fmt::print("#{:>16} {:>12} {:>12} {:>14}\n", "compute/comm", "torus (us)", "steered (us)", "steered speedup");
    for (double r : {0.0, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0}) {
      double compute = r * t_ar->time_us;
      double ratio = (compute + t_ar->time_us) / (compute + s_ar->time_us);
      fmt::print(" {:>16.2f} {:>12.2f} {:>12.2f} {:>13.3f}x\n", r, compute + t_ar->time_us, compute + s_ar->time_us, ratio);
      step.push_back({{"compute_over_comm", r}, {"torus_us", compute + t_ar->time_us}, {"steered_us", compute + s_ar->time_us},
                      {"speedup", ratio}});
    }
    // The prototype's own epochs (Table 1), not a point solved from its 1.72x: each fabric's
    // compute and communication terms fitted through batch 2 and 4, batch 8 predicted and set
    // beside its measurement; then the baseline's terms with this fabric's all-reduce speedup c
    // in place of the prototype's (T = compute + comm / (c b)) at each batch.
    const FinetuneTable t;
    const EpochModel base = fit_epoch(t.batch[0], t.baseline_s[0], t.batch[1], t.baseline_s[1]);
    const EpochModel mlux = fit_epoch(t.batch[0], t.morphlux_s[0], t.batch[1], t.morphlux_s[1]);
    fmt::print("# the prototype's finetuning (Table 1: Llama-3.2-1B, 2 DDP workers, 10 Gb/s), epoch = compute + comm / batch, "
               "fitted at batch 2 and 4:\n");
    fmt::print("#   baseline compute {:.2f} s + comm {:.2f} s / b; Morphlux compute {:.2f} s + comm {:.2f} s / b: comm {:.2f}x faster "
               "(its NCCL all-reduce measured {:.2f}x)\n",
               base.compute_s, base.comm_s, mlux.compute_s, mlux.comm_s, base.comm_s / mlux.comm_s, t.allreduce_ratio);
    fmt::print("#{:>7} {:>13} {:>13} {:>13} {:>13} {:>9} {:>9} {:>14}\n", "batch", "base (s)", "base fit (s)", "Morphlux (s)",
               "Mlux fit (s)", "ratio", "fit", "this fabric's");
    for (size_t i = 0; i < t.batch.size(); ++i) {
      const double b = t.batch[i];
      const double mine = base.at(b) / (base.compute_s + base.comm_s / (comm_ratio * b));
      fmt::print(" {:>7.0f} {:>13.3f} {:>13.3f} {:>13.3f} {:>13.3f} {:>8.2f}x {:>8.2f}x {:>13.2f}x{}\n", b, t.baseline_s[i], base.at(b),
                 t.morphlux_s[i], mlux.at(b), t.baseline_s[i] / t.morphlux_s[i], base.at(b) / mlux.at(b), mine,
                 i >= 2 ? "  (predicted)" : "");
      step.push_back({{"prototype_batch", b},
                      {"baseline_s", t.baseline_s[i]},
                      {"baseline_fit_s", base.at(b)},
                      {"morphlux_s", t.morphlux_s[i]},
                      {"morphlux_fit_s", mlux.at(b)},
                      {"measured_ratio", t.baseline_s[i] / t.morphlux_s[i]},
                      {"fit_ratio", base.at(b) / mlux.at(b)},
                      {"this_fabric_ratio", mine},
                      {"this_fabric_allreduce_speedup", comm_ratio}});
    }
    fmt::print("#   this fabric's: the baseline's terms with this tenant's all-reduce {:.2f}x in place of the prototype's\n#\n",
               comm_ratio);
  }
  return step;
}

// nccl-tests' sizes from min to max by factor, each rounded down to a whole number of elements
// per rank (`quantum` bytes), none empty, none twice.
std::vector<uint64_t> sweep_sizes(uint64_t min_bytes, uint64_t max_bytes, uint64_t factor, uint64_t quantum) {
  std::vector<uint64_t> sizes;
  for (uint64_t s = min_bytes; s <= max_bytes; s *= factor)
    if (s / quantum * quantum > 0 && (sizes.empty() || sizes.back() != s / quantum * quantum)) sizes.push_back(s / quantum * quantum);
  return sizes;
}

// `mxtb collective --rack FILE`: the sweep on the rack tenant, one ring collective over every
// server's XPUs, its rings across the fibres (docs/rack.md, "A collective across servers").
int collective_on_rack(const Args& args, sim::CollectiveOp op, sim::DataType type, uint64_t min_bytes, uint64_t max_bytes,
                       uint64_t factor) {
  for (const char* f : {"--placement", "--rings", "--engine", "--ber", "--algo", "--one-direction", "--tenant", "--plot"})
    if (args.has(f)) throw UsageError(fmt::format("{} does not go with --rack: the rack file places the tenant, its rings are planned", f));
  const std::string path = args.str("--rack");
  sim::rack::RackConfig cfg = load_rack_scenario(path, source_root() + "/traces/calibration/mesh32.json");
  const uint64_t ranks = cfg.tenant.xpu_of_position.size();
  const uint64_t elem = sim::element_bytes(type);
  const std::vector<uint64_t> sizes = sweep_sizes(min_bytes, max_bytes, factor, elem * ranks);
  if (sizes.empty()) throw UsageError(fmt::format("--maxbytes {}: less than one element per rank of the {} ranks", max_bytes, ranks));
  sim::rack::RackRunOptions opt;
  opt.config_source = path;
  opt.collective = sim::rack::RackCollectiveOptions{op, type, sizes, args.u64("--seed", 1), static_cast<uint32_t>(args.u64("--grain", 1, 1, 1u << 20))};
  auto ex = sim::rack::local_exchange();
  sim::rack::RackOutcome out;
  try {
    out = sim::rack::run_rack(cfg, *ex, opt);
  } catch (const sim::rack::RackError& e) {
    throw InputError(e.what());
  } catch (const protocol::RackMapError& e) {
    throw InputError(fmt::format("{}: {}", path, e.what()));
  }
  const sim::rack::RackCollectiveResult& rc = *out.collective;
  CollectiveBenchResult r;
  r.config.tenant = rc.ranks;
  r.config.ops = {op};
  r.config.type = type;
  r.config.sizes = sizes;
  r.config.seed = opt.collective->seed;
  r.config.grain_words = opt.collective->grain_words;
  r.clock_mhz = cfg.server.clock_mhz;
  r.lane_gbps = protocol::lane_gbps(cfg.server.clock_mhz);
  r.tx_lanes_per_rank = rc.rings;
  r.algorithm = sim::Algorithm::Ring;
  r.bringup_cycles = rc.all_active_cycle;
  r.rows = rc.rows;
  fmt::print("# mxtb collective --rack {}: {} servers ({}x{}), tenant {}x{}: {} ranks (rack XPUs {}), {}, sizes {} to {} B (x{}), "
             "seed {}\n",
             cfg.name, cfg.shape.servers(), cfg.shape.servers_x, cfg.shape.servers_y, cfg.tenant.dim_x, cfg.tenant.dim_y, ranks,
             fmt::join(rc.ranks, " "), to_string(type), min_bytes, max_bytes, factor, r.config.seed);
  fmt::print("# every element of every rank checked against the host's sum (#wrong); time in emulated us; bring-up: power-on to "
             "every circuit Active\n#\n");
  print_table(r, "rack");
  // The ring order's hops each have as many circuits as the torus gives them (one a direction and
  // dimension); the rings are as many as the hop with the fewest, and a hop across servers has
  // one circuit on one fibre of its own. So each rank sends on `rings` lanes, one fibre's worth
  // each where the ring leaves its server: busbw can reach at most rings x the lane's data rate.
  const double limit_gbs = rc.rings * r.lane_gbps / 8.0;
  double best = 0;
  for (const auto& row : rc.rows) best = std::max(best, row.busbw_gbs);
  fmt::print("# the fibres' limit: {} of the ring's {} hops cross a fibre, one circuit each way; {} rings x {:.1f} Gb/s a lane = "
             "{:.3f} GB/s busbw per rank; best measured {:.3f} GB/s ({:.0f} %)\n",
             rc.fibre_hops, rc.ranks.size(), rc.rings, r.lane_gbps, limit_gbs, best, limit_gbs > 0 ? 100.0 * best / limit_gbs : 0.0);
  for (const std::string& f : out.failures) fmt::print("FAIL {}\n", f);
  const bool ok = r.passed() && out.failures.empty();
  if (args.has("--json")) {
    nlohmann::json j = {{"tool", "mxtb collective"}, {"passed", ok}, {"rack", path}, {"fibre_hops", rc.fibre_hops},
                        {"limit_busbw_gbs", limit_gbs}, {"failures", out.failures}};
    j["placements"]["rack"] = to_json(r);
    std::ofstream f(args.str("--json"));
    if (!f) throw InputError(fmt::format("--json {}: cannot write", args.str("--json")));
    f << j.dump(2) << "\n";
    fmt::print("wrote {}\n", args.str("--json"));
  }
  fmt::print("{}\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace

int cmd_collective(const ArgList& argv) {
  Args args(argv, ArgSpec{{"--type", "--minbytes", "--maxbytes", "--stepfactor", "--placement", "--rings", "--seed", "--json",
                           "--plot", "--engine", "--ber", "--grain", "--algo", "--rack"},
                          {"--one-direction"},
                          {"--op", "--tenant"},
                          false});
  const std::vector<sim::CollectiveOp> ops = parse_ops(args);
  auto type = sim::data_type_from_string(args.str("--type", "float"));
  if (!type) throw UsageError(fmt::format("--type '{}': not float (fp32) or bfloat16 (bf16)", args.str("--type")));
  const uint64_t min_bytes = parse_bytes("--minbytes", args.str("--minbytes", "4K"));
  const uint64_t max_bytes = parse_bytes("--maxbytes", args.str("--maxbytes", "4M"));
  const uint64_t factor = args.u64("--stepfactor", 2, 2, 1024);
  if (max_bytes < min_bytes)
    throw UsageError(fmt::format("--maxbytes {} is below --minbytes {}", max_bytes, min_bytes));
  if (args.has("--rack")) {
    if (ops.size() != 1) throw UsageError(fmt::format("--rack runs one --op at a time, not {}", ops.size()));
    return collective_on_rack(args, ops.front(), *type, min_bytes, max_bytes, factor);
  }
  std::vector<int> tenant = parse_xpus(args, "--tenant");
  if (tenant.empty()) tenant = {0, 1, 3, 2};
  const protocol::ServerShape shape;
  for (size_t i = 0; i < tenant.size(); ++i) {
    if (tenant[i] >= shape.xpus)
      throw UsageError(fmt::format("--tenant: XPU {} is not an XPU of the server (0..{})", tenant[i], shape.xpus - 1));
    if (std::count(tenant.begin(), tenant.end(), tenant[i]) > 1) throw UsageError(fmt::format("--tenant: XPU {} is given twice", tenant[i]));
  }
  if (tenant.size() < 2) throw UsageError("--tenant: a collective needs at least 2 XPUs");
  const uint64_t elem = sim::element_bytes(*type);
  for (const auto& [flag, v] : {std::pair{"--minbytes", min_bytes}, std::pair{"--maxbytes", max_bytes}})
    if (v % elem) throw UsageError(fmt::format("{} {}: not a multiple of {}'s {} bytes", flag, v, to_string(*type), elem));
  // As nccl-tests does, each size is rounded down to a whole number of elements per rank.
  const std::vector<uint64_t> sizes = sweep_sizes(min_bytes, max_bytes, factor, elem * std::max<uint64_t>(1, tenant.size()));
  if (sizes.empty()) throw UsageError(fmt::format("--maxbytes {}: less than one element per rank", max_bytes));
  const std::string placement = args.choice("--placement", "both", {"torus", "steered", "both"});
  const int rings = static_cast<int>(args.u64("--rings", 0, 0, 64));
  const std::string engine = args.choice("--engine", "fast", {"fast", "reference"});

  CollectiveBenchConfig base;
  base.tenant = tenant;
  base.ops = ops;
  base.type = *type;
  base.sizes = sizes;
  base.seed = args.u64("--seed", 1);
  base.max_rings = rings;
  base.grain_words = static_cast<uint32_t>(args.u64("--grain", 1, 1, 1u << 20));
  const std::string algo = args.choice("--algo", "auto", {"auto", "ring", "chain"});
  base.algo = algo == "ring"    ? CollectiveBenchConfig::Algo::Ring
              : algo == "chain" ? CollectiveBenchConfig::Algo::Chain
                                : CollectiveBenchConfig::Algo::Auto;
  base.lane_ber = args.real("--ber", 0, 0, 1e-3);
  if (base.lane_ber >= 1e-3) throw UsageError(fmt::format("--ber {}: must be below 1e-3", base.lane_ber));
  base.both_directions = !args.has("--one-direction");
  base.engine = engine == "fast" ? sim::ServerEngine::Fast : sim::ServerEngine::Reference;
  base.calibration_file = source_root() + "/traces/calibration/mesh32.json";

  // Both maps are built and every spec checked before anything runs or is written.
  const auto configs = placement_configs(base, placement);

  fmt::print("# mxtb collective: {} ranks (XPUs {}), {}, sizes {} to {} B (x{}), pipeline grain {} word(s), seed {}, {} engine{}\n",
             tenant.size(), fmt::join(tenant, " "), to_string(*type), min_bytes, max_bytes, factor, base.grain_words, base.seed,
             engine,
             base.lane_ber > 0 ? fmt::format(", bit errors at {:g} on every tenant lane", base.lane_ber) : "");
  fmt::print("# every element of every rank checked against the host's sum (#wrong); time in emulated us\n#\n");
  std::vector<std::pair<std::string, CollectiveBenchResult>> results;
  bool ok = true;
  for (const auto& [name, c] : configs) {
    CollectiveBenchResult r;
    try {
      r = run_collective_bench(c);
    } catch (const std::invalid_argument& e) {
      throw InputError(e.what());
    }
    print_table(r, name);
    ok = ok && r.passed();
    results.emplace_back(name, std::move(r));
  }
  if (results.size() == 2) {
    fmt::print("# steered / torus busbw\n");
    const auto& t = results[0].second.rows;
    const auto& s = results[1].second.rows;
    for (size_t i = 0; i < t.size() && i < s.size(); ++i)
      fmt::print("#  {:>14} {:>11} B  {:.3f}x\n", to_string(t[i].op), t[i].size,
                 t[i].busbw_gbs > 0 ? s[i].busbw_gbs / t[i].busbw_gbs : 0.0);
  }
  nlohmann::json step = print_finetuning_step(results);
  if (args.has("--json")) {
    nlohmann::json j = {{"tool", "mxtb collective"}, {"passed", ok}};
    for (const auto& [name, r] : results) j["placements"][name] = to_json(r);
    if (!step.empty()) j["finetuning_step"] = step;
    std::ofstream f(args.str("--json"));
    if (!f) throw InputError(fmt::format("--json {}: cannot write", args.str("--json")));
    f << j.dump(2) << "\n";
    fmt::print("wrote {}\n", args.str("--json"));
  }
  if (args.has("--plot")) plot_busbw(results, args.str("--plot"));
  fmt::print("{}\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace mxtb::app
