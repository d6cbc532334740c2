// `mxtb alloc` and `mxtb bench alloc`.
#include "apps/mxtb/commands.h"

#include <fstream>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "host/alloc/experiments.h"

namespace mxtb::host::alloc {

using nlohmann::json;

namespace {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const char* kAllocUsage =
    "usage: mxtb alloc --racks R --workload tpuv4|philly|FILE --policy baseline|morphlux|both --json FILE\n"
    "       mxtb alloc --experiment frag-tpuv4|fragmented-32|spares --json FILE\n"
    "options: --seed N (default 1)  --solver auto|ilp|heuristic  --ilp-ms N (default 100)  --fibres F (default 4)\n"
    "         --requests N  --load X  --trials N  --free F  --util U  --probes N  --churn N  --chips N  --target P\n"
    "         --plots PREFIX (default: the JSON path without .json)  --no-plots  --no-check\n"
    "         --baseline aligned|torus-first-fit|both  --morphlux server|neighbour|both\n"
    "         (experiments: both; workloads: torus-first-fit and neighbour)\n"
    "         fragmented-32: --fill aligned|torus-first-fit|both  --fill-mix 4|4/8|4/8/16/32|all\n"
    "         (default: aligned fill with each mix, and torus-first-fit fill with 4/8/16/32)\n";
const char* kBenchUsage =
    "usage: mxtb bench alloc --json FILE [--requests N (100000)] [--racks R (64)] [--ilp-instances N (30)]\n"
    "                        [--seed N] [--ilp-ms N (100)]\n";

// Parses --flag value pairs against the allowed flags.
std::map<std::string, std::string> parse_flags(const std::vector<std::string>& args,
                                               const std::map<std::string, bool>& allowed) {
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto it = allowed.find(a);
    if (it == allowed.end()) throw UsageError(fmt::format("unknown argument '{}'", a));
    if (!it->second) {
      out[a] = "1";
      continue;
    }
    if (i + 1 >= args.size()) throw UsageError(fmt::format("argument '{}' needs a value", a));
    out[a] = args[++i];
  }
  return out;
}

long parse_int(const std::map<std::string, std::string>& f, const std::string& key, long def, long lo, long hi) {
  auto it = f.find(key);
  if (it == f.end()) return def;
  size_t pos = 0;
  long v = 0;
  try {
    v = std::stol(it->second, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos == 0 || pos != it->second.size())
    throw UsageError(fmt::format("argument {} '{}' is not an integer", key, it->second));
  if (v < lo || v > hi) throw UsageError(fmt::format("argument {} {} is out of range [{}, {}]", key, v, lo, hi));
  return v;
}

double parse_double(const std::map<std::string, std::string>& f, const std::string& key, double def, double lo,
                    double hi) {
  auto it = f.find(key);
  if (it == f.end()) return def;
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(it->second, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos == 0 || pos != it->second.size())
    throw UsageError(fmt::format("argument {} '{}' is not a number", key, it->second));
  if (!(v >= lo && v <= hi)) throw UsageError(fmt::format("argument {} {} is out of range [{}, {}]", key, v, lo, hi));
  return v;
}

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

template <typename F>
int guarded(const char* usage, F&& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    fmt::print("error: {}\n{}", e.what(), usage);
    return 2;
  } catch (const std::invalid_argument& e) {
    fmt::print("error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print("error: {}\n", e.what());
    return 1;
  }
}

}  // namespace

int run_alloc_command(const std::vector<std::string>& args) {
  return guarded(kAllocUsage, [&]() -> int {
    static const std::map<std::string, bool> allowed = {
        {"--racks", true},   {"--workload", true}, {"--policy", true}, {"--json", true},     {"--experiment", true},
        {"--seed", true},    {"--solver", true},   {"--ilp-ms", true}, {"--fibres", true},   {"--requests", true},
        {"--load", true},    {"--trials", true},   {"--free", true},   {"--util", true},     {"--probes", true},
        {"--chips", true},   {"--target", true},   {"--churn", true},   {"--plots", true},  {"--no-plots", false}, {"--no-check", false},
        {"--help", false},   {"--baseline", true}, {"--morphlux", true}, {"--fill", true}, {"--fill-mix", true}};
    auto f = parse_flags(args, allowed);
    if (f.count("--help") || args.empty()) {
      fmt::print("{}", kAllocUsage);
      return args.empty() ? 2 : 0;
    }
    if (f.count("--racks")) {
      // Give negative racks their own message before the range check.
      long r = parse_int(f, "--racks", 64, -1000000, 1000000);
      if (r <= 0) throw UsageError(fmt::format("argument --racks {} must be a positive number of racks", r));
    }
    if (!f.count("--json")) throw UsageError("argument --json FILE is required");
    const std::string json_path = f["--json"];
    CommonOptions o;
    o.seed = static_cast<uint64_t>(parse_int(f, "--seed", 1, 0, 1L << 62));
    o.fibres = static_cast<int>(parse_int(f, "--fibres", 4, 1, 64));
    o.ilp_time_limit_ms = static_cast<int>(parse_int(f, "--ilp-ms", 100, 1, 600000));
    o.check = !f.count("--no-check");
    std::string solver = f.count("--solver") ? f["--solver"] : "auto";
    if (solver == "auto") o.solver = Solver::kAuto;
    else if (solver == "ilp") o.solver = Solver::kIlp;
    else if (solver == "heuristic") o.solver = Solver::kHeuristic;
    else throw UsageError(fmt::format("argument --solver '{}': expected auto, ilp or heuristic", solver));
    const int trials = static_cast<int>(parse_int(f, "--trials", -1, 1, 100000));
    // Allocator modes and fill specs (docs/alloc.md): experiments compare both modes of each
    // policy by default, workloads run today's torus first fit and neighbour fabric.
    const bool experiment = f.count("--experiment") > 0;
    auto modes = [&](const char* flag, const char* both_default, auto parse) {
      using Mode = decltype(parse(std::string()));
      std::string v = f.count(flag) ? f[flag] : (experiment ? "both" : both_default);
      try {
        if (v == "both") return std::vector<Mode>{parse(std::string(flag) == "--baseline" ? "aligned" : "server"),
                                                   parse(std::string(flag) == "--baseline" ? "torus-first-fit" : "neighbour")};
        return std::vector<Mode>{parse(v)};
      } catch (const std::invalid_argument& e) {
        throw UsageError(fmt::format("argument {}: {} (or both)", flag, e.what()));
      }
    };
    o.baselines = modes("--baseline", "torus-first-fit", parse_baseline_mode);
    o.fabrics = modes("--morphlux", "neighbour", parse_fabric_mode);
    std::vector<FillSpec> fills;
    {
      const std::vector<std::vector<int>> all_mixes = {{4}, {4, 8}, {4, 8, 16, 32}};
      std::vector<std::vector<int>> mixes;
      if (f.count("--fill-mix") && f["--fill-mix"] != "all") {
        try {
          mixes = {parse_fill_mix(f["--fill-mix"])};
        } catch (const std::invalid_argument& e) {
          throw UsageError(fmt::format("argument --fill-mix: {} (or all)", e.what()));
        }
      } else {
        mixes = all_mixes;
      }
      std::vector<BaselineMode> fill_modes;
      const std::string fv = f.count("--fill") ? f["--fill"] : "default";
      if (fv == "both" || fv == "default") fill_modes = {BaselineMode::kAligned, BaselineMode::kTorusFirstFit};
      else if (fv == "aligned" || fv == "torus-first-fit") fill_modes = {parse_baseline_mode(fv)};
      else throw UsageError(fmt::format("argument --fill '{}': expected aligned, torus-first-fit or both", fv));
      for (BaselineMode m : fill_modes)
        for (const auto& mix : mixes)
          // By default the torus-first-fit fill (mxtb's earlier variant) only with today's mix.
          if (!(fv == "default" && !f.count("--fill-mix") && m == BaselineMode::kTorusFirstFit && mix.size() != 4))
            fills.push_back({m, mix});
      if (!experiment || (f.count("--experiment") && f["--experiment"] != "fragmented-32"))
        for (const char* k : {"--fill", "--fill-mix"})
          if (f.count(k)) throw UsageError(fmt::format("argument {} applies to --experiment fragmented-32 only", k));
    }
    json result;
    if (f.count("--experiment")) {
      for (const char* k : {"--workload", "--policy", "--requests", "--load"})
        if (f.count(k)) throw UsageError(fmt::format("argument {} does not apply to --experiment", k));
      const std::string ex = f["--experiment"];
      if (ex == "frag-tpuv4") {
        int racks = static_cast<int>(parse_int(f, "--racks", 64, 1, 100000));
        result = experiment_frag_tpuv4(racks, parse_double(f, "--free", 0.2, 0, 1), trials > 0 ? trials : 5, o);
        print_frag_tpuv4(result);
      } else if (ex == "fragmented-32") {
        int racks = static_cast<int>(parse_int(f, "--racks", 16, 1, 100000));
        result = experiment_fragmented32(racks, parse_double(f, "--util", 0.3, 0, 1),
                                         static_cast<int>(parse_int(f, "--probes", 8, 1, 100000)),
                                         trials > 0 ? trials : 100,
                                         static_cast<int>(parse_int(f, "--churn", 0, -1, 100000000)), fills, o);
        print_fragmented32(result);
      } else if (ex == "spares") {
        result = experiment_spares(static_cast<int>(parse_int(f, "--chips", 64, 1, 1 << 20)),
                                   parse_double(f, "--target", 0.05, 1e-12, 0.999999), trials > 0 ? trials : 1000,
                                   o.seed);
        print_spares(result);
      } else {
        throw UsageError(fmt::format("argument --experiment '{}': expected frag-tpuv4, fragmented-32 or spares", ex));
      }
    } else {
      if (!f.count("--workload")) throw UsageError("argument --workload (tpuv4, philly or FILE) or --experiment is required");
      int racks = static_cast<int>(parse_int(f, "--racks", 64, 1, 100000));
      std::string pol = f.count("--policy") ? f["--policy"] : "both";
      std::vector<Policy> policies;
      if (pol == "baseline") policies = {Policy::kBaseline};
      else if (pol == "morphlux") policies = {Policy::kMorphlux};
      else if (pol == "both") policies = {Policy::kBaseline, Policy::kMorphlux};
      else throw UsageError(fmt::format("argument --policy '{}': expected baseline, morphlux or both", pol));
      WorkloadSpec w;
      w.name = f["--workload"];
      w.requests = static_cast<size_t>(parse_int(f, "--requests", 5000, 1, 10000000));
      w.load = parse_double(f, "--load", 0.9, 0.01, 100);
      result = run_workload(racks, w, allocators_for(policies, o), o);
      print_workload(result);
    }
    write_json(result, json_path);
    if (!f.count("--no-plots")) {
      std::string prefix = f.count("--plots") ? f["--plots"] : default_prefix(json_path);
      for (const auto& p : plot_results(result, prefix)) fmt::print("wrote {}\n", p);
    }
    std::vector<json> all = result.value("policies", json::array()).get<std::vector<json>>();
    for (const auto& st : result.value("states", json::array()))
      for (const auto& p : st.value("policies", json::array())) all.push_back(p);
    for (const auto& p : all)
      if (!p["invariants"]["ok"].get<bool>()) {
        fmt::print("error: invariant violated: {}\n", p["invariants"]["error"].get<std::string>());
        return 1;
      }
    return 0;
  });
}

int run_alloc_bench(const std::vector<std::string>& args) {
  return guarded(kBenchUsage, [&]() -> int {
    static const std::map<std::string, bool> allowed = {{"--json", true},          {"--requests", true},
                                                        {"--racks", true},         {"--ilp-instances", true},
                                                        {"--seed", true},          {"--ilp-ms", true},
                                                        {"--help", false}};
    auto f = parse_flags(args, allowed);
    if (f.count("--help")) {
      fmt::print("{}", kBenchUsage);
      return 0;
    }
    if (!f.count("--json")) throw UsageError("argument --json FILE is required");
    CommonOptions o;
    o.seed = static_cast<uint64_t>(parse_int(f, "--seed", 1, 0, 1L << 62));
    o.ilp_time_limit_ms = static_cast<int>(parse_int(f, "--ilp-ms", 100, 1, 600000));
    auto j = run_bench(static_cast<size_t>(parse_int(f, "--requests", 100000, 1, 100000000)),
                       static_cast<int>(parse_int(f, "--racks", 64, 1, 100000)),
                       static_cast<int>(parse_int(f, "--ilp-instances", 30, 1, 100000)), o);
    print_bench(j);
    write_json(j, f["--json"]);
    return 0;
  });
}

}  // namespace mxtb::host::alloc

namespace mxtb::app {

int cmd_alloc(const ArgList& args) { return host::alloc::run_alloc_command(args); }
int cmd_bench_alloc(const ArgList& args) { return host::alloc::run_alloc_bench(args); }

}  // namespace mxtb::app
