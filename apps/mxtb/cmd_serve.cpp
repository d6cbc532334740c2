// `mxtb serve`: runs a load under each policy, prints the figures side by side with the goals'
// PASS/FAIL lines, writes JSON and a TTFT CDF plot (host/serve/, docs/serve.md).
#include "apps/mxtb/args.h"
#include "apps/mxtb/commands.h"
#include "apps/mxtb/plot.h"

#include "host/fabric/board.h"
#include "host/fabric/client.h"
#include "host/fabric/emulator_process.h"
#include "host/serve/fabric_ipbus.h"
#include "host/serve/serve.h"
#include "host/serve/study.h"
#include "protocol/board_map.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <unistd.h>

namespace mxtb::app {

using nlohmann::json;
using namespace host::serve;
namespace fabric = host::fabric;

namespace {

bool plot_ttft_cdf(const std::vector<RunResult>& runs, const std::string& svg) {
  std::vector<PlotSeries> series;
  for (const auto& r : runs) {
    auto v = r.ttft_s;
    std::sort(v.begin(), v.end());
    PlotSeries s{r.policy, {}};
    for (size_t i = 0; i < v.size(); ++i) s.points.emplace_back(std::max(v[i], 1e-4), static_cast<double>(i + 1) / v.size());
    if (v.empty()) s.points.emplace_back(1, 0);
    series.push_back(std::move(s));
  }
  return plot_series(svg,
                     "set logscale x\nset xlabel 'time to first token (s)'\nset ylabel 'CDF over requests'\n"
                     "set yrange [0:1.02]\nset key bottom right\nset grid",
                     series, "steps lw 2");
}

}  // namespace

int cmd_serve(const ArgList& argv) {
  Args args(argv, ArgSpec{{"--trace", "--scale", "--json", "--plot", "--model", "--device", "--kv-gib", "--slice", "--seed",
                           "--real-bytes-per-token", "--max-wait", "--requests", "--fabric", "--fabric-preset", "--burst",
                           "--bursts", "--rate", "--duration", "--paging-budget", "--repick"},
                          {"--no-overload"},
                          {"--policy"},
                          false});
  try {
    if (!args.has("--trace"))
      throw UsageError("--trace FILE|azure-code|azure-conv|chat-burst|synthetic-burst|long-prompt is required");
    const std::string trace = args.str("--trace");
    const bool file = trace != "synthetic-burst" && trace != "long-prompt" && trace != "chat-burst";
    const std::string path = trace == "azure-code"   ? mxtb::app::source_root() + "/traces/azure/AzureLLMInferenceTrace_code.csv"
                             : trace == "azure-conv" ? mxtb::app::source_root() + "/traces/azure/AzureLLMInferenceTrace_conv.csv"
                                                     : trace;
    std::vector<Policy> policies;
    for (const auto& p : args.list("--policy").empty()
                             ? std::vector<std::string>{"fcfs", "vllm-0.3", "recompute", "aqua-host", "aqua-fabric", "aqua"}
                             : args.list("--policy"))
      policies.push_back(policy_by_name(p));

    ServeConfig cfg;
    cfg.model = args.str("--model", cfg.model);
    cfg.device = args.str("--device", cfg.device);
    model_by_name(cfg.model);
    device_by_name(cfg.device);
    cfg.kv_pool_gib = args.real("--kv-gib", trace == "long-prompt" ? 4 : trace == "chat-burst" ? 2 : 8, 0.01, 4096);
    cfg.slice_steps = static_cast<uint64_t>(args.real("--slice", 16, 1, 1e6));
    cfg.max_wait_s = args.real("--max-wait", 5, 0.001, 1e6);
    cfg.real_bytes_per_token = static_cast<uint32_t>(args.real("--real-bytes-per-token", 64, 8, 4096));
    if (cfg.real_bytes_per_token % 8 != 0)
      throw UsageError(fmt::format("--real-bytes-per-token {} is not a multiple of 8", cfg.real_bytes_per_token));
    const uint64_t seed = static_cast<uint64_t>(args.real("--seed", 1, 0, 1e15));
    const std::string fabric_kind = args.choice("--fabric", "emulator", {"emulator", "static"});
    const std::string preset = args.choice("--fabric-preset", "thermo_optic", {"thermo_optic", "electro_optic", "mems"});
    if (args.has("--fabric-preset") && fabric_kind != "emulator")
      throw UsageError("--fabric-preset needs --fabric emulator");
    // The load (docs/serve.md): a background the stronger baseline sustains, bursts on top of it,
    // and the sustained overload beside it.
    LoadSpec spec;
    spec.trace = file ? "file" : trace;
    spec.path = path;
    spec.seed = seed;
    spec.chat_rate_per_s = args.real("--rate", 1, 1e-6, 1e6);
    spec.chat_duration_s = args.real("--duration", 120, 1, 1e6);
    spec.burst.requests = static_cast<size_t>(args.real("--burst", trace == "chat-burst" ? 400 : 200, 0, 1e7));
    spec.burst.count = static_cast<int>(args.real("--bursts", 1, 1, 1000));
    spec.max_requests = static_cast<size_t>(args.u64("--requests", 0, 1, 1'000'000'000));
    cfg.paging_budget = args.real("--paging-budget", cfg.paging_budget, 0, 1);
    cfg.repick_steps = static_cast<uint64_t>(args.real("--repick", static_cast<double>(cfg.repick_steps), 1, 1e6));
    for (const char* k : {"--rate", "--duration"})
      if (args.has(k) && trace != "chat-burst") throw UsageError(fmt::format("{} applies to --trace chat-burst", k));
    const std::string scale_arg = args.str("--scale", spec.has_background() ? "auto" : "1");

    json out;
    double scale = 1, overload_scale = 0;
    if (scale_arg == "auto") {
      if (!spec.has_background()) throw UsageError("--scale auto needs a trace file or chat-burst");
      OperatingPoint op = find_operating_point(spec, cfg);
      out["operating_point_sweep"] = op.sweep;
      scale = op.sustained;
      if (!args.has("--no-overload")) overload_scale = op.overload;
    } else {
      scale = args.real("--scale", 1, 1e-6, 1e6);
    }
    auto reqs = with_bursts(spec, background(spec, scale));
    CostModel cost(model_by_name(cfg.model), device_by_name(cfg.device));
    double block_bytes = static_cast<double>(cfg.block_tokens) * static_cast<double>(cost.model().kv_bytes_per_token());
    uint64_t pool_blocks = static_cast<uint64_t>(cfg.kv_pool_gib * 1073741824.0 / block_bytes);
    const size_t burst_reqs = static_cast<size_t>(std::count_if(reqs.begin(), reqs.end(), [](const Request& r) { return r.in_burst; }));
    fmt::print("scenario {}{}: {} requests ({} in {} burst(s) of 1 s on top), scale {}; {} on {}; KV pool {} GiB = {} "
               "blocks of {} tokens ({} KiB/token, {} B/token moved)\n",
               trace, file ? " (" + path + ")" : "", reqs.size(), burst_reqs, burst_reqs ? spec.burst.count : 0, scale,
               cfg.model, cfg.device, cfg.kv_pool_gib, pool_blocks, cfg.block_tokens,
               cost.model().kv_bytes_per_token() / 1024, cfg.real_bytes_per_token);
    // The fabric: the emulated server (mxtb sim as a child, over IPbus), or constants.
    std::unique_ptr<fabric::EmulatorProcess> emu;
    std::unique_ptr<fabric::Client> client;
    std::unique_ptr<fabric::Board> board;
    std::unique_ptr<EmulatorFabricLinks> links;
    json fabric_json;
    double base_delay_s = 0;
    if (fabric_kind == "emulator") {
      const std::string log =
          (std::filesystem::temp_directory_path() / fmt::format("mxtb-serve-emulator-{}.log", ::getpid())).string();
      emu = std::make_unique<fabric::EmulatorProcess>(fabric::self_executable(),
                                                     std::vector<std::string>{"--preset", preset, "--time-mode", "lockstep"},
                                                     log);
      fabric::ClientOptions copts;
      copts.describe = protocol::describe;
      client = std::make_unique<fabric::Client>(emu->target(), copts);
      board = std::make_unique<fabric::Board>(*client);
      EmulatorFabricConfig ec;
      ec.lane_gbps = cfg.fabric.lane_gbps;
      ec.modeled_per_circuit = cfg.fabric.base_circuits;
      links = std::make_unique<EmulatorFabricLinks>(*board, ec);
      base_delay_s = links->place_base();
      int base = links->emulated_circuits(cfg.pager_xpu, cfg.peer_xpu);
      fmt::print("fabric: emulator (mxtb sim --preset {}, {}, log {}); base map placed and Active in {:.1f} us of "
                 "emulator time; XPU {}-{}: {} emulated circuit(s) x {} modeled lanes x {} Gb/s, up to {} more "
                 "emulated circuits on demand, each move's delay measured; host: PCIe {} GB/s x {}\n\n",
                 preset, emu->target(), log, base_delay_s * 1e6, cfg.pager_xpu, cfg.peer_xpu, base,
                 ec.modeled_per_circuit, cfg.fabric.lane_gbps, ec.shape.lanes_per_xpu - base, cfg.pcie_bytes_s / 1e9,
                 cfg.pcie_efficiency);
      fabric_json = {{"kind", "emulator"},
                     {"preset", preset},
                     {"base_map", EmulatorFabricLinks::base_map(ec.shape)},
                     {"base_emulated_circuits", base},
                     {"modeled_per_circuit", ec.modeled_per_circuit},
                     {"base_placement_us", base_delay_s * 1e6}};
    } else {
      fmt::print("fabric: static, {} circuits x {} Gb/s between XPU {} and {}, up to {} more on demand ({} us each "
                 "move); host: PCIe {} GB/s x {}\n\n",
                 cfg.fabric.base_circuits, cfg.fabric.lane_gbps, cfg.pager_xpu, cfg.peer_xpu,
                 cfg.fabric.max_extra_circuits, cfg.fabric.reconfig_s * 1e6, cfg.pcie_bytes_s / 1e9,
                 cfg.pcie_efficiency);
      fabric_json = {{"kind", "static"}};
    }
    auto run_all = [&](const std::vector<Request>& load) {
      std::vector<RunResult> rs;
      for (Policy p : policies) {
        rs.push_back(simulate(load, p, cfg, nullptr, links.get()));
        // Each run gives its circuits back at its end; the next one must start from the base map.
        if (links && links->port_map() != EmulatorFabricLinks::base_map(EmulatorFabricConfig{}.shape))
          throw std::runtime_error(fmt::format("the {} run left extra circuits placed", policy_name(p)));
      }
      return rs;
    };
    std::vector<RunResult> runs = run_all(reqs);
    print_table(runs);
    fmt::print("\n");
    bool invariants_ok = true;
    json pol = json::array();
    for (const auto& r : runs) {
      for (const auto& s : r.seqs)
        if (s.rejected) {
          fmt::print("note: {} rejected request {}: {}\n", r.policy, s.id, s.reject_reason);
          break;
        }
      if (r.violations.empty()) {
        fmt::print("PASS invariants {}: KV never overcommitted ({} of {} blocks at most), every resumed sequence's "
                   "bytes verified ({} page-ins), all {} admitted requests complete with their token counts, "
                   "longest wait {}\n",
                   r.policy, r.max_blocks_used, r.pool_blocks, r.page_ins,
                   r.seqs.size() - static_cast<size_t>(std::count_if(r.seqs.begin(), r.seqs.end(),
                                                                     [](const SeqRecord& s) { return s.rejected; })),
                   secs(r.to_json()["longest_wait_s"]));
      } else {
        invariants_ok = false;
        fmt::print("FAIL invariants {}: {} violations, first: {}\n", r.policy, r.violations.size(), r.violations[0]);
      }
      pol.push_back(r.to_json());
    }
    for (const auto& r : runs) {
      if (r.reconfig_delays_s.empty()) {
        fmt::print("reconfigurations {}: 0\n", r.policy);
        continue;
      }
      fmt::print("reconfigurations {}: {}, delay {} min/median/max {:.1f}/{:.1f}/{:.1f} us\n", r.policy,
                 r.reconfigurations, links ? "measured in the emulator" : "(constant)",
                 1e6 * *std::min_element(r.reconfig_delays_s.begin(), r.reconfig_delays_s.end()),
                 1e6 * percentile(r.reconfig_delays_s, 50),
                 1e6 * *std::max_element(r.reconfig_delays_s.begin(), r.reconfig_delays_s.end()));
    }
    json goals = serve_goals(trace == "long-prompt" ? "long-prompt" : "burst", runs, cfg, reqs);
    out["scenario"] = {{"trace", trace},     {"path", file ? path : ""},  {"scale", scale},
                       {"requests", reqs.size()}, {"burst_requests", burst_reqs}, {"bursts", spec.burst.count},
                       {"offered_tok_s", offered_tok_s(reqs)}, {"seed", seed}};
    if (trace == "chat-burst")
      out["scenario"]["chat"] = {{"rate_per_s_at_scale_1", spec.chat_rate_per_s}, {"duration_s", spec.chat_duration_s},
                                 {"mean_prompt_published", ChatLengths::kMeanPrompt},
                                 {"mean_output_published", ChatLengths::kMeanOutput}, {"sigma", ChatLengths::kSigma}};
    // The sustained overload: the first scale the stronger baseline does not keep up with, no
    // bursts; reported beside the operating point, not used as it.
    if (overload_scale > 0) {
      auto heavy = background(spec, overload_scale);
      fmt::print("\nsustained overload: {} requests at scale {} (offered {:.1f} tok/s), no bursts\n", heavy.size(),
                 overload_scale, offered_tok_s(heavy));
      auto over = run_all(heavy);
      print_table(over);
      json opol = json::array();
      for (const auto& r : over) {
        if (!r.violations.empty()) {
          invariants_ok = false;
          fmt::print("FAIL invariants {} (overload): {} violations, first: {}\n", r.policy, r.violations.size(),
                     r.violations[0]);
        }
        opol.push_back(r.to_json());
      }
      json og = serve_goals("overload", over, cfg, heavy);
      for (auto& g : og) goals.push_back(g);
      out["overload"] = {{"scale", overload_scale}, {"requests", heavy.size()},
                         {"offered_tok_s", offered_tok_s(heavy)}, {"policies", opol}};
    }
    out["config"] = {{"model", cfg.model},
                     {"device", cfg.device},
                     {"kv_bytes_per_token", cost.model().kv_bytes_per_token()},
                     {"kv_pool_gib", cfg.kv_pool_gib},
                     {"block_tokens", cfg.block_tokens},
                     {"real_bytes_per_token", cfg.real_bytes_per_token},
                     {"max_batched_tokens", cfg.max_batched_tokens},
                     {"max_paddings", cfg.max_paddings},
                     {"watermark", cfg.watermark},
                     {"repick_steps", cfg.repick_steps},
                     {"paging_budget", cfg.paging_budget},
                     {"paging_credit_cap_s", cfg.paging_credit_cap_s},
                     {"peer_tier_gib", cfg.peer_tier_gib},
                     {"host_tier_gib", cfg.host_tier_gib},
                     {"slice_steps", cfg.slice_steps},
                     {"max_wait_s", cfg.max_wait_s},
                     {"pcie_bytes_s", cfg.pcie_bytes_s},
                     {"pcie_efficiency", cfg.pcie_efficiency},
                     {"fabric",
                      {{"base_circuits", cfg.fabric.base_circuits},
                       {"max_extra_circuits", cfg.fabric.max_extra_circuits},
                       {"lane_gbps", cfg.fabric.lane_gbps},
                       {"link_efficiency", cfg.fabric.link_efficiency},
                       {"reconfig_s", cfg.fabric.reconfig_s}}}};
    out["fabric"] = fabric_json;
    out["policies"] = pol;
    out["goals"] = goals;
    out["invariants_ok"] = invariants_ok;
    if (args.has("--json")) {
      std::ofstream f(args.str("--json"));
      if (!(f << out.dump(2) << "\n")) throw std::runtime_error(fmt::format("cannot write JSON file '{}'", args.str("--json")));
      fmt::print("wrote {}\n", args.str("--json"));
    }
    if (args.has("--plot")) plot_ttft_cdf(runs, args.str("--plot"));
    return invariants_ok ? 0 : 1;
  } catch (const host::serve::InputError& e) {
    throw InputError(e.what());  // a name or a file the serving model refused: bad input, exit 2
  }
}

}  // namespace mxtb::app
