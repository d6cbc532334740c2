// `mxtb alloc` and `mxtb bench alloc`: datacenter allocation, torus baselines against Morphlux
// (host/alloc/, docs/alloc.md).
#include "apps/mxtb/args.h"
#include "apps/mxtb/commands.h"

#include "host/alloc/experiments.h"

#include <fmt/format.h>

#include <fstream>
#include <stdexcept>

namespace mxtb::app {

using nlohmann::json;
namespace alloc = host::alloc;

namespace {

void write_json(const json& j, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error(fmt::format("cannot write JSON file '{}'", path));
  out << j.dump(2) << "\n";
  if (!out) throw std::runtime_error(fmt::format("error writing JSON file '{}'", path));
  fmt::print("wrote {}\n", path);
}

std::string default_prefix(const std::string& json_path) {
  if (json_path.size() > 5 && json_path.compare(json_path.size() - 5, 5, ".json") == 0)
    return json_path.substr(0, json_path.size() - 5);
  return json_path;
}

// The library reports a bad name or value it was handed (a workload, a fill mix) as
// std::invalid_argument: on the command line that is a usage error.
template <class F>
auto usage_checked(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

alloc::CommonOptions common_options(const Args& args) {
  alloc::CommonOptions o;
  o.seed = args.u64("--seed", 1, 0, uint64_t{1} << 62);
  o.ilp_time_limit_ms = static_cast<int>(args.u64("--ilp-ms", 100, 1, 600000));
  o.workload_dir = source_root() + "/traces/workloads";
  return o;
}

}  // namespace

int cmd_alloc(const ArgList& argv) {
  Args args(argv, {"--racks", "--workload", "--policy", "--json", "--experiment", "--seed", "--solver", "--ilp-ms", "--fibres",
                   "--requests", "--load", "--trials", "--free", "--util", "--probes", "--chips", "--target", "--churn",
                   "--plots", "--baseline", "--morphlux", "--fill", "--fill-mix"},
            {"--no-plots", "--no-check"});
  if (argv.empty()) throw UsageError("give --workload or --experiment, and --json FILE");
  const int64_t racks_given = args.i64("--racks", 1, INT64_MIN, INT64_MAX);
  if (racks_given <= 0) throw UsageError(fmt::format("--racks {} must be a positive number of racks", racks_given));
  if (!args.has("--json")) throw UsageError("--json FILE is required");
  const std::string json_path = args.str("--json");
  alloc::CommonOptions o = common_options(args);
  o.fibres = static_cast<int>(args.u64("--fibres", 4, 1, 64));
  o.check = !args.has("--no-check");
  const std::string solver = args.choice("--solver", "auto", {"auto", "ilp", "heuristic"});
  o.solver = solver == "auto" ? alloc::Solver::Auto : solver == "ilp" ? alloc::Solver::Ilp : alloc::Solver::Heuristic;
  const int trials = static_cast<int>(args.u64("--trials", 0, 1, 100000));
  // Allocator modes and fill specs (docs/alloc.md): experiments compare both modes of each
  // policy by default, workloads run the torus first fit and the neighbour fabric.
  const bool experiment = args.has("--experiment");
  auto modes = [&](const std::string& flag, const char* workload_default, const char* first, const char* second,
                   auto parse) {
    using Mode = decltype(parse(std::string()));
    std::string v = args.str(flag, experiment ? "both" : workload_default);
    if (v == "both") return std::vector<Mode>{parse(first), parse(second)};
    try {
      return std::vector<Mode>{parse(v)};
    } catch (const std::invalid_argument& e) {
      throw UsageError(fmt::format("{}: {} (or both)", flag, e.what()));
    }
  };
  o.baselines = modes("--baseline", "torus-first-fit", "aligned", "torus-first-fit", alloc::parse_baseline_mode);
  o.fabrics = modes("--morphlux", "neighbour", "server", "neighbour", alloc::parse_fabric_mode);
  std::vector<alloc::FillSpec> fills;
  {
    std::vector<std::vector<int>> mixes = {{4}, {4, 8}, {4, 8, 16, 32}};
    if (args.has("--fill-mix") && args.str("--fill-mix") != "all") {
      try {
        mixes = {alloc::parse_fill_mix(args.str("--fill-mix"))};
      } catch (const std::invalid_argument& e) {
        throw UsageError(fmt::format("--fill-mix: {} (or all)", e.what()));
      }
    }
    const std::string fv = args.choice("--fill", "default", {"default", "aligned", "torus-first-fit", "both"});
    std::vector<alloc::BaselineMode> fill_modes = {alloc::BaselineMode::Aligned, alloc::BaselineMode::TorusFirstFit};
    if (fv == "aligned" || fv == "torus-first-fit") fill_modes = {alloc::parse_baseline_mode(fv)};
    for (alloc::BaselineMode m : fill_modes)
      for (const auto& mix : mixes)
        // By default the torus-first-fit fill (mxtb's earlier variant) only with the full mix.
        if (!(fv == "default" && !args.has("--fill-mix") && m == alloc::BaselineMode::TorusFirstFit && mix.size() != 4))
          fills.push_back({m, mix});
    if (args.str("--experiment") != "fragmented-32")
      for (const char* k : {"--fill", "--fill-mix"})
        if (args.has(k)) throw UsageError(fmt::format("{} applies to --experiment fragmented-32 only", k));
  }
  json result;
  if (experiment) {
    for (const char* k : {"--workload", "--policy", "--requests", "--load"})
      if (args.has(k)) throw UsageError(fmt::format("{} does not apply to --experiment", k));
    const std::string ex = args.choice("--experiment", "", {"frag-tpuv4", "fragmented-32", "spares"});
    if (ex == "frag-tpuv4") {
      const int racks = static_cast<int>(args.u64("--racks", 64, 1, 100000));
      result = usage_checked([&] {
        return alloc::experiment_frag_tpuv4(racks, args.real("--free", 0.2, 0, 1), trials > 0 ? trials : 5, o);
      });
      alloc::print_frag_tpuv4(result);
    } else if (ex == "fragmented-32") {
      const int racks = static_cast<int>(args.u64("--racks", 16, 1, 100000));
      result = usage_checked([&] {
        return alloc::experiment_fragmented32(racks, args.real("--util", 0.3, 0, 1),
                                              static_cast<int>(args.u64("--probes", 8, 1, 100000)), trials > 0 ? trials : 100,
                                              static_cast<int>(args.i64("--churn", 0, -1, 100000000)), fills, o);
      });
      alloc::print_fragmented32(result);
    } else {
      result = usage_checked([&] {
        return alloc::experiment_spares(static_cast<int>(args.u64("--chips", 64, 1, 1 << 20)),
                                        args.real("--target", 0.05, 1e-12, 0.999999), trials > 0 ? trials : 1000, o.seed);
      });
      alloc::print_spares(result);
    }
  } else {
    if (!args.has("--workload")) throw UsageError("--workload (tpuv4, philly or FILE) or --experiment is required");
    const int racks = static_cast<int>(args.u64("--racks", 64, 1, 100000));
    const std::string pol = args.choice("--policy", "both", {"baseline", "morphlux", "both"});
    std::vector<alloc::Policy> policies;
    if (pol != "morphlux") policies.push_back(alloc::Policy::Baseline);
    if (pol != "baseline") policies.push_back(alloc::Policy::Morphlux);
    alloc::WorkloadSpec w;
    w.name = args.str("--workload");
    w.requests = static_cast<size_t>(args.u64("--requests", 5000, 1, 10000000));
    w.load = args.real("--load", 0.9, 0.01, 100);
    result = usage_checked([&] { return alloc::run_workload(racks, w, alloc::allocators_for(policies, o), o); });
    alloc::print_workload(result);
  }
  write_json(result, json_path);
  if (!args.has("--no-plots")) {
    const std::string prefix = args.str("--plots", default_prefix(json_path));
    for (const auto& p : alloc::plot_results(result, prefix)) fmt::print("wrote {}\n", p);
  }
  std::vector<json> all = result.value("policies", json::array()).get<std::vector<json>>();
  for (const auto& st : result.value("states", json::array()))
    for (const auto& p : st.value("policies", json::array())) all.push_back(p);
  for (const auto& p : all)
    if (!p["invariants"]["ok"].get<bool>())
      throw std::runtime_error(fmt::format("invariant violated: {}", p["invariants"]["error"].get<std::string>()));
  return 0;
}

int cmd_bench_alloc(const ArgList& argv) {
  Args args(argv, {"--json", "--requests", "--racks", "--ilp-instances", "--seed", "--ilp-ms"}, {});
  if (!args.has("--json")) throw UsageError("--json FILE is required");
  alloc::CommonOptions o = common_options(args);
  auto j = alloc::run_bench(args.u64("--requests", 100000, 1, 100000000), static_cast<int>(args.u64("--racks", 64, 1, 100000)),
                            static_cast<int>(args.u64("--ilp-instances", 30, 1, 100000)), o);
  alloc::print_bench(j);
  write_json(j, args.str("--json"));
  return 0;
}

}  // namespace mxtb::app
