// The paper's three cases, online workload runs and the benchmark.
#include "host/alloc/experiments.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <numeric>
#include <queue>
#include <stdexcept>

#include <fmt/format.h>

namespace mxtb::host::alloc {

using nlohmann::json;

namespace {

// Candidate slices for the fragmentation index, largest first. Torus first fit: every box with
// extents in {1,2,4} (a contiguous torus needs each extent to be a ring). Aligned baseline: its
// five canonical shapes. Morphlux: any chip count n, as the most compact factorizations
// a x b x c = n (the fabric builds any logical torus).
const std::vector<Shape>& rack_shapes(const AllocOptions& o) {
  static const std::vector<Shape> base = [] {
    std::vector<Shape> v;
    for (int a : {1, 2, 4})
      for (int b : {1, 2, 4})
        for (int c : {1, 2, 4})
          if (a <= b && b <= c) v.push_back(Shape{{a, b, c}});
    std::stable_sort(v.begin(), v.end(), [](const Shape& x, const Shape& y) { return x.volume() > y.volume(); });
    return v;
  }();
  static const std::vector<Shape> aligned = {aligned_shape(64), aligned_shape(32), aligned_shape(16),
                                             aligned_shape(8), aligned_shape(4)};
  static const std::vector<Shape> fabric = [] {
    std::vector<Shape> v;
    for (int n = kChipsPerRack; n >= 1; --n) {
      std::vector<Shape> f;
      for (int a = 1; a * a * a <= n; ++a)
        for (int b = a; a * b * b <= n; ++b)
          if (n % (a * b) == 0) f.push_back(Shape{{a, b, n / (a * b)}});
      std::sort(f.begin(), f.end(), [](const Shape& x, const Shape& y) { return x.d[2] < y.d[2]; });
      if (f.size() > 2) f.resize(2);
      v.insert(v.end(), f.begin(), f.end());
    }
    return v;
  }();
  if (o.policy == Policy::Morphlux) return fabric;
  return o.baseline == BaselineMode::Aligned ? aligned : base;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}
double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}
double mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

AllocOptions alloc_options(Policy p, const CommonOptions& o, BaselineMode b = BaselineMode::TorusFirstFit,
                           FabricMode f = FabricMode::Neighbour) {
  AllocOptions a;
  a.policy = p;
  a.solver = o.solver;
  a.ilp_time_limit_ms = o.ilp_time_limit_ms;
  a.baseline = b;
  a.fabric = f;
  return a;
}

PolicyRun new_run(const AllocOptions& a) {
  PolicyRun r;
  r.alloc = a;
  return r;
}

void record_slice(PolicyRun& run, const Slice& s) {
  auto& st = run.by_size[s.requested > 0 ? s.requested : s.shape.volume()];
  double bw = slice_bandwidth(s);
  st.bw_sum += bw;
  st.ar_sum += allreduce_seconds(s.shape, bw);
  st.step_sum += step_seconds(s.shape, bw);
  st.bw_n++;
  if (s.kind == SliceKind::RackFabric) {
    const auto edges = logical_edges(s.shape);
    for (size_t i = 0; i < s.circuits.size(); ++i) {
      const auto& c = s.circuits[i];
      if (c.path.empty()) continue;
      st.circuits++;
      st.hops += c.hops();
      st.lanes += c.lanes;
      for (const auto& e : edges)
        if ((e.u == c.u && e.v == c.v) || (e.u == c.v && e.v == c.u)) st.lanes_wanted += e.wanted;
    }
  }
  run.decided_by[s.decided_by]++;
}

void sample_frag(const Datacenter& dc, PolicyRun& run, std::vector<double>* out = nullptr) {
  for (int r = 0; r < dc.racks(); ++r) {
    if (dc.rack_free(r) == 0) continue;
    double f = rack_fragmentation(dc, r, run.alloc, rack_shapes(run.alloc));
    run.rack_frag.push_back(f);
    if (out) out->push_back(f);
  }
}

void sample_blast(const Datacenter& dc, PolicyRun& run, std::mt19937_64& rng, int samples) {
  std::vector<int> used;
  for (int g = 0; g < dc.chips(); ++g)
    if (!dc.chip_free(g)) used.push_back(g);
  if (used.empty()) return;
  std::uniform_int_distribution<size_t> pick(0, used.size() - 1);
  for (int i = 0; i < samples; ++i) {
    run.blast_sum += blast_radius(dc, used[pick(rng)], run.alloc.policy);
    run.blast_n++;
  }
}

void check(const Datacenter& dc, PolicyRun& run, const CommonOptions& o) {
  if (!o.check || !run.invariant_error.empty()) return;
  run.invariant_checks++;
  run.invariant_error = check_invariants(dc);
}

// Frees random slices until at least `chips` chips are free again (or stops at the target).
void free_random(Datacenter& dc, std::mt19937_64& rng, int target_free) {
  auto ids = dc.live_ids();
  std::shuffle(ids.begin(), ids.end(), rng);
  for (int id : ids) {
    if (dc.free_chips() >= target_free) break;
    dc.release(id);
  }
}

json stats_json(const std::vector<double>& v) {
  return {{"n", v.size()}, {"mean", mean(v)}, {"median", median(v)}, {"p90", quantile(v, 0.9)},
          {"max", v.empty() ? 0.0 : *std::max_element(v.begin(), v.end())}};
}

Shape size_shape(int n) { return shape_for_chips(n); }

}  // namespace

json PolicyRun::to_json() const {
  json j;
  j["policy"] = allocator_label(alloc);
  j["mode"] = alloc.policy == Policy::Baseline ? baseline_mode_name(alloc.baseline) : fabric_mode_name(alloc.fabric);
  json sizes = json::array();
  for (const auto& [n, st] : by_size) {
    json s{{"size", n}, {"submitted", st.submitted}, {"accepted", st.accepted}, {"placed_slices", st.bw_n}};
    if (st.submitted) s["acceptance"] = static_cast<double>(st.accepted) / st.submitted;
    if (st.bw_n) {
      s["bandwidth"] = st.bw_sum / st.bw_n;
      s["allreduce_s"] = st.ar_sum / st.bw_n;
      s["step_s"] = st.step_sum / st.bw_n;
    }
    if (st.circuits) {
      s["fabric_circuits"] = st.circuits;
      s["mean_hops"] = static_cast<double>(st.hops) / st.circuits;
      s["lanes_granted_share"] = st.lanes_wanted ? static_cast<double>(st.lanes) / st.lanes_wanted : 0.0;
    }
    sizes.push_back(s);
  }
  j["by_size"] = sizes;
  j["fragmentation"] = stats_json(rack_frag);
  j["fragmentation_samples"] = rack_frag;
  j["blast_radius_mean"] = blast_n ? blast_sum / blast_n : 0.0;
  j["decided_by"] = decided_by;
  j["ilp"] = {{"calls", ilp.calls}, {"optimal", ilp.optimal}, {"infeasible", ilp.infeasible},
              {"timeouts", ilp.timeouts}, {"skipped_large", ilp.skipped_large},
              {"median_ms", median(ilp.solve_ms)}};
  j["invariants"] = {{"checks", invariant_checks}, {"ok", invariant_error.empty()}, {"error", invariant_error}};
  return j;
}

std::vector<AllocOptions> allocators_for(const std::vector<Policy>& policies, const CommonOptions& o) {
  std::vector<AllocOptions> out;
  for (Policy p : policies) {
    if (p == Policy::Baseline)
      for (BaselineMode b : o.baselines) out.push_back(alloc_options(p, o, b));
    else
      for (FabricMode f : o.fabrics) out.push_back(alloc_options(p, o, BaselineMode::TorusFirstFit, f));
  }
  return out;
}

std::string FillSpec::name() const {
  std::string m;
  for (size_t i = 0; i < mix.size(); ++i) m += (i ? "/" : "") + std::to_string(mix[i]);
  return fmt::format("{} {}", baseline_mode_name(fill), m);
}

std::vector<int> parse_fill_mix(const std::string& s) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t slash = s.find('/', pos);
    std::string tok = s.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
    if (tok != "4" && tok != "8" && tok != "16" && tok != "32")
      throw std::invalid_argument(fmt::format("fill mix '{}': sizes must be 4, 8, 16 or 32 separated by '/'", s));
    int n = std::stoi(tok);
    if (std::find(out.begin(), out.end(), n) != out.end())
      throw std::invalid_argument(fmt::format("fill mix '{}': size {} listed twice", s, n));
    out.push_back(n);
    if (slash == std::string::npos) break;
    pos = slash + 1;
  }
  return out;
}

namespace {

// One randomized placement of the state-building baseline: aligned (canonical shapes at random
// aligned positions) or torus first fit (every rotation, origins from a random start). Racks in
// random order when shuffle_racks, else first fit (so that multi-rack slices still find cubes).
std::optional<Slice> random_place(const Datacenter& dc, const Shape& shape, BaselineMode b, std::mt19937_64& rng,
                                  bool shuffle_racks) {
  if (shape.volume() > kChipsPerRack) return place_multirack(dc, shape);
  if (b == BaselineMode::TorusFirstFit) return baseline_place_random(dc, shape, rng, shuffle_racks);
  if (shuffle_racks) return aligned_place_random(dc, shape.volume(), rng);
  std::uniform_int_distribution<int> start(0, kServersPerRack - 1);
  for (int r = 0; r < dc.racks(); ++r)
    if (auto s = aligned_place_in_rack(dc, r, shape.volume(), start(rng))) return s;
  return std::nullopt;
}

// Fills with a baseline's randomized placement until `patience` requests in a row are refused.
template <typename Gen>
void fill_random(Datacenter& dc, std::mt19937_64& rng, Gen&& next_shape, int patience, BaselineMode b,
                 bool shuffle_racks) {
  int fails = 0;
  while (fails < patience && dc.free_chips() > 0) {
    Shape s = next_shape();
    if (auto p = random_place(dc, s, b, rng, shuffle_racks)) {
      dc.commit(std::move(*p));
      fails = 0;
    } else {
      ++fails;
    }
  }
}

void merge_ilp(PolicyRun& run, const IlpStats& s) {
  run.ilp.calls += s.calls;
  run.ilp.optimal += s.optimal;
  run.ilp.infeasible += s.infeasible;
  run.ilp.timeouts += s.timeouts;
  run.ilp.skipped_large += s.skipped_large;
  run.ilp.solve_ms.insert(run.ilp.solve_ms.end(), s.solve_ms.begin(), s.solve_ms.end());
}

// The state builder's own allocator first, then the other baselines, then Morphlux's modes.
std::vector<AllocOptions> measured_on(BaselineMode state, const CommonOptions& o) {
  std::vector<AllocOptions> out{alloc_options(Policy::Baseline, o, state)};
  for (BaselineMode b : o.baselines)
    if (b != state) out.push_back(alloc_options(Policy::Baseline, o, b));
  for (FabricMode f : o.fabrics) out.push_back(alloc_options(Policy::Morphlux, o, BaselineMode::TorusFirstFit, f));
  return out;
}

std::string mode_list(const CommonOptions& o) {
  std::string s;
  for (BaselineMode b : o.baselines) s += std::string(s.empty() ? "" : ", ") + "baseline(" + baseline_mode_name(b) + ")";
  for (FabricMode f : o.fabrics) s += std::string(s.empty() ? "" : ", ") + "morphlux(" + fabric_mode_name(f) + ")";
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Case 1. One occupancy state per trial and per baseline mode, built by that baseline's own
// placement (first fit over racks, so that multi-rack slices find free cubes; origins or aligned
// positions scanned from a random start so that slices are not packed into the corner of a rack),
// filled until 64 requests in a row are refused; then a fraction of the live slices, picked at
// random, is released. Every allocator's fragmentation index is measured on that same state.
json experiment_frag_tpuv4(int racks, double free_frac, int trials, const CommonOptions& o) {
  if (racks <= 0) throw std::invalid_argument(fmt::format("--racks must be positive (got {})", racks));
  if (free_frac < 0 || free_frac > 1) throw std::invalid_argument("--free must be in [0,1]");
  if (o.baselines.empty()) throw std::invalid_argument("frag-tpuv4 needs at least one baseline mode");
  ShapeMix mix = load_shape_mix(workload_path(o.workload_dir, "tpu_job_size.csv"));
  const int patience = 64;  // "fill": until 64 requests in a row are refused (all racks full)
  json out{{"experiment", "frag-tpuv4"}, {"racks", racks}, {"chips", racks * kChipsPerRack},
           {"free_fraction", free_frac}, {"trials", trials}, {"seed", o.seed}, {"fibres", o.fibres},
           {"allocators", mode_list(o)},
           {"state", "one per baseline mode: that baseline's placement, first fit over racks, random origin "
                     "(or aligned position) start, fill until 64 refusals in a row, then release random slices; "
                     "every allocator's index measured on that state"},
           {"paper_worst_rack_fragmentation", 0.7}};
  json pol = json::array(), states = json::array();
  for (BaselineMode state : o.baselines) {
    auto allocs = measured_on(state, o);
    std::vector<PolicyRun> runs;
    for (const auto& a : allocs) runs.push_back(new_run(a));
    std::vector<std::vector<double>> worst(runs.size()), mean_frag(runs.size());
    std::vector<double> util_full, util_after, frag_racks;
    std::map<int, long> free_hist;
    for (int t = 0; t < trials; ++t) {
      std::mt19937_64 rng(o.seed + static_cast<uint64_t>(t));
      Datacenter dc(racks, o.fibres);
      fill_random(dc, rng, [&] { return mix.sample(rng); }, patience, state, false);
      util_full.push_back(1.0 - static_cast<double>(dc.free_chips()) / dc.chips());
      auto ids = dc.live_ids();
      std::shuffle(ids.begin(), ids.end(), rng);
      ids.resize(static_cast<size_t>(free_frac * static_cast<double>(ids.size()) + 0.5));
      for (int id : ids) dc.release(id);
      util_after.push_back(1.0 - static_cast<double>(dc.free_chips()) / dc.chips());
      int partial = 0;
      for (int r = 0; r < dc.racks(); ++r) {
        free_hist[dc.rack_free(r)]++;
        partial += dc.rack_free(r) > 0 && dc.rack_free(r) < kChipsPerRack;
      }
      frag_racks.push_back(partial);
      for (size_t k = 0; k < runs.size(); ++k) {
        check(dc, runs[k], o);
        std::vector<double> f;
        sample_frag(dc, runs[k], &f);
        worst[k].push_back(f.empty() ? 0.0 : *std::max_element(f.begin(), f.end()));
        mean_frag[k].push_back(mean(f));
      }
    }
    json h = json::object();
    for (auto [f, c] : free_hist) h[std::to_string(f)] = c;
    json st{{"fill", baseline_mode_name(state)}, {"rack_free_histogram", h},
            {"partly_free_racks_mean", mean(frag_racks)}, {"utilization_full", mean(util_full)},
            {"utilization_after_free", mean(util_after)}};
    json sp = json::array();
    for (size_t k = 0; k < runs.size(); ++k) {
      json j = runs[k].to_json();
      j["state"] = baseline_mode_name(state);
      j["worst_rack_fragmentation"] = stats_json(worst[k]);
      j["mean_rack_fragmentation"] = stats_json(mean_frag[k]);
      j["utilization_full"] = mean(util_full);
      j["utilization_after_free"] = mean(util_after);
      sp.push_back(j);
      pol.push_back(j);
    }
    // Cut of the worst-rack and mean index by each Morphlux mode against the state's baseline.
    double wb = sp[0]["worst_rack_fragmentation"]["mean"], mb = sp[0]["mean_rack_fragmentation"]["mean"];
    json cuts = json::object();
    for (const auto& j : sp)
      if (j["policy"].get<std::string>().rfind("morphlux", 0) == 0)
        cuts[j["policy"].get<std::string>()] = {
            {"worst", wb > 0 ? 1.0 - j["worst_rack_fragmentation"]["mean"].get<double>() / wb : 0.0},
            {"mean", mb > 0 ? 1.0 - j["mean_rack_fragmentation"]["mean"].get<double>() / mb : 0.0}};
    st["fragmentation_cut"] = cuts;
    states.push_back(st);
  }
  out["policies"] = pol;
  out["states"] = states;
  return out;
}

// Case 2. For each fill spec, one fragmented state per trial, built by the fill baseline's
// randomized placement (random rack order; torus first fit: every rotation, origins from a random
// start; aligned: canonical shapes at random aligned positions), sizes drawn uniformly from the
// mix until 64 requests in a row are refused, optional churn rounds (release a random slice,
// refill), then random slices released until utilization <= util_after_free. Each allocator then
// gets its own copy of that state and the same sequence of `probes` 32-chip requests, committed as
// they are accepted (sequential). The first probe of each trial is the independent test.
// Long: the experiment's protocol as the comment above gives it (fill, churn, release, the same probes
// for every allocator, the summary), in one place so that it can be read against the paper's.
json experiment_fragmented32(int racks, double util_after_free, int probes, int trials, int churn_rounds,
                             const std::vector<FillSpec>& fills, const CommonOptions& o) {
  if (racks <= 0) throw std::invalid_argument(fmt::format("--racks must be positive (got {})", racks));
  if (fills.empty()) throw std::invalid_argument("fragmented-32 needs at least one fill spec");
  const Shape probe = size_shape(32);
  json out{{"experiment", "fragmented-32"}, {"racks", racks}, {"chips", racks * kChipsPerRack},
           {"utilization_after_free", util_after_free}, {"probes_per_trial", probes},
           {"trials", trials}, {"seed", o.seed}, {"fibres", o.fibres}, {"churn_rounds", churn_rounds},
           {"allocators", mode_list(o)},
           {"state", "per fill spec: the fill baseline's randomized placement, random rack order, fill until 64 "
                     "refusals in a row, release random slices down to the target utilization"},
           {"probe_mode", "sequential: each allocator gets a copy of the state and the same 32-chip "
                          "requests, committed when accepted; first probe = independent test"},
           {"paper", {{"baseline_rejected", 0.75}, {"morphlux_rejected", 0.0}, {"worst_rack_fragmentation", 0.7}}}};
  json states = json::array();
  for (const FillSpec& fs : fills) {
    if (fs.mix.empty()) throw std::invalid_argument("fill mix is empty");
    std::vector<AllocOptions> allocs;
    for (BaselineMode b : o.baselines) allocs.push_back(alloc_options(Policy::Baseline, o, b));
    for (FabricMode f : o.fabrics) allocs.push_back(alloc_options(Policy::Morphlux, o, BaselineMode::TorusFirstFit, f));
    std::vector<PolicyRun> runs;
    for (const auto& a : allocs) runs.push_back(new_run(a));
    std::vector<long> first_ok(runs.size(), 0);
    std::vector<std::vector<double>> worst(runs.size());
    std::vector<double> util_full, util_after, box_racks, aligned_racks, server_racks;
    std::map<int, long> free_hist, live_by_size;
    for (int t = 0; t < trials; ++t) {
      std::mt19937_64 rng(o.seed + static_cast<uint64_t>(t));
      Datacenter dc(racks, o.fibres);
      std::uniform_int_distribution<size_t> pick(0, fs.mix.size() - 1);
      auto next = [&] { return size_shape(fs.mix[pick(rng)]); };
      fill_random(dc, rng, next, 64, fs.fill, true);
      const int rounds = churn_rounds >= 0 ? churn_rounds : 4 * static_cast<int>(dc.live_ids().size());
      for (int c = 0; c < rounds; ++c) {
        auto ids = dc.live_ids();
        if (!ids.empty()) dc.release(ids[rng() % ids.size()]);
        fill_random(dc, rng, next, 4, fs.fill, true);
      }
      util_full.push_back(1.0 - static_cast<double>(dc.free_chips()) / dc.chips());
      free_random(dc, rng, static_cast<int>((1.0 - util_after_free) * dc.chips() + 0.5));
      util_after.push_back(1.0 - static_cast<double>(dc.free_chips()) / dc.chips());
      for (int id : dc.live_ids()) live_by_size[dc.slice(id).requested]++;
      int nb = 0, na = 0, ns = 0;
      for (int r = 0; r < dc.racks(); ++r) {
        free_hist[dc.rack_free(r)]++;
        nb += baseline_place_in_rack(dc, r, probe).has_value();
        na += aligned_place_in_rack(dc, r, 32).has_value();
        ns += server_place_in_rack(dc, r, probe).has_value();
      }
      box_racks.push_back(nb);
      aligned_racks.push_back(na);
      server_racks.push_back(ns);
      for (size_t k = 0; k < runs.size(); ++k) {
        check(dc, runs[k], o);
        std::vector<double> f;
        sample_frag(dc, runs[k], &f);
        worst[k].push_back(f.empty() ? 0.0 : *std::max_element(f.begin(), f.end()));
        Datacenter d = dc;
        Allocator al(runs[k].alloc);
        for (int i = 0; i < probes; ++i) {
          auto& st = runs[k].by_size[32];
          st.submitted++;
          if (auto s = al.place(d, probe)) {
            st.accepted++;
            first_ok[k] += i == 0;
            record_slice(runs[k], *s);
            d.commit(std::move(*s));
          }
        }
        check(d, runs[k], o);
        merge_ilp(runs[k], al.ilp_stats());
      }
    }
    json pol = json::array();
    for (size_t k = 0; k < runs.size(); ++k) {
      json j = runs[k].to_json();
      const auto& st = runs[k].by_size[32];
      j["first_probe_acceptance"] = trials > 0 ? static_cast<double>(first_ok[k]) / trials : 0.0;
      j["rejected"] = st.submitted ? 1.0 - static_cast<double>(st.accepted) / st.submitted : 0.0;
      j["worst_rack_fragmentation"] = stats_json(worst[k]);
      pol.push_back(j);
    }
    json h = json::object(), ls = json::object();
    for (auto [f, c] : free_hist) h[std::to_string(f)] = c;
    for (auto [n, c] : live_by_size) ls[std::to_string(n)] = c;
    states.push_back({{"fill", baseline_mode_name(fs.fill)},
                      {"mix", fs.mix},
                      {"name", fs.name()},
                      {"policies", pol},
                      {"rack_free_histogram", h},        // free chips in a rack -> racks (summed over trials)
                      {"live_slices_by_size", ls},       // surviving slices after the release (summed)
                      {"racks_with_free_32_box_mean", mean(box_racks)},
                      {"racks_with_aligned_32_mean", mean(aligned_racks)},
                      {"racks_where_server_morphlux_fits_32_mean", mean(server_racks)},
                      {"utilization_full", mean(util_full)},
                      {"utilization_probed", mean(util_after)}});
  }
  out["states"] = states;
  // Which fill mix matches the paper's figure: the aligned fill whose aligned-baseline rejection is
  // closest to 75 %; the goals are judged on the paper's protocol (aligned fill of 4-chip slices).
  const json* closest = nullptr;
  double closest_gap = 2;
  const json* paper = nullptr;
  for (const auto& st : states) {
    if (st["fill"] != "aligned") continue;
    if (st["mix"] == json::array({4})) paper = &st;
    for (const auto& p : st["policies"])
      if (p["policy"] == "baseline(aligned)") {
        double gap = std::abs(p["rejected"].get<double>() - 0.75);
        if (gap < closest_gap) {
          closest_gap = gap;
          closest = &st;
        }
      }
  }
  if (closest) out["closest_to_paper"] = (*closest)["name"];
  json goals = json::array();
  if (paper) {
    for (const auto& p : (*paper)["policies"]) {
      const std::string name = p["policy"];
      const double rej = p["rejected"];
      if (name == "baseline(aligned)")
        goals.push_back({{"goal", "aligned-baseline-rejects-75"}, {"met", std::abs(rej - 0.75) <= 0.10 + 1e-12},
                         {"value", rej}, {"target", "0.75 +- 0.10"}, {"state", (*paper)["name"]}});
      if (name == "morphlux(server)")
        goals.push_back({{"goal", "morphlux-server-rejects-at-most-5"}, {"met", rej <= 0.05 + 1e-12},
                         {"value", rej}, {"target", "<= 0.05"}, {"state", (*paper)["name"]}});
    }
  }
  out["goals"] = goals;
  return out;
}


json experiment_spares(int chips, double target, int trials, uint64_t seed) {
  if (chips <= 0 || chips % kChipsPerServer)
    throw std::invalid_argument(fmt::format("--chips must be a positive multiple of {} (got {})", kChipsPerServer, chips));
  if (target <= 0 || target >= 1) throw std::invalid_argument("--target must be in (0,1)");
  struct Range {
    double lo, hi;
  };
  const std::vector<Range> ranges = {{0.0, 0.01}, {0.01, 0.03}, {0.03, 0.05}};
  json out{{"experiment", "spares"}, {"chips", chips}, {"servers", chips / kChipsPerServer},
           {"target", target}, {"trials", trials}, {"seed", seed}};
  json rows = json::array();
  std::mt19937_64 rng(seed);
  for (const auto& rg : ranges) {
    std::vector<double> chip_sp, server_sp;
    std::map<int, int> chip_hist, server_hist;
    for (int t = 0; t < trials; ++t) {
      std::uniform_real_distribution<double> u(rg.lo, rg.hi);
      std::vector<double> p(chips);
      for (double& x : p) x = u(rng);
      std::vector<double> ps(chips / kChipsPerServer, 1.0);
      for (int i = 0; i < chips; ++i) ps[i / kChipsPerServer] *= 1 - p[i];
      for (double& x : ps) x = 1 - x;
      int kc = spares_needed(p, target), ks = spares_needed(ps, target);
      chip_sp.push_back(kc);
      server_sp.push_back(ks);
      chip_hist[kc]++;
      server_hist[ks]++;
    }
    double mid = 0.5 * (rg.lo + rg.hi);
    std::vector<double> pm(chips, mid);
    auto tail = failure_tail(pm);
    json hc = json::object(), hs = json::object();
    for (auto [k, c] : chip_hist) hc[std::to_string(k)] = c;
    for (auto [k, c] : server_hist) hs[std::to_string(k)] = c;
    long le4 = std::count_if(chip_sp.begin(), chip_sp.end(), [](double k) { return k <= 4; });
    long le2 = std::count_if(server_sp.begin(), server_sp.end(), [](double k) { return k <= 2; });
    json tj = json::array();
    for (size_t k = 0; k < std::min<size_t>(tail.size(), 10); ++k) tj.push_back(tail[k]);
    rows.push_back({{"range", {rg.lo, rg.hi}},
                    {"spare_chips_at_mean_p", spares_needed(pm, target)},
                    {"tail_at_mean_p", tj},
                    {"spare_chips", stats_json(chip_sp)},
                    {"spare_servers", stats_json(server_sp)},
                    {"spare_chips_histogram", hc},
                    {"spare_servers_histogram", hs},
                    {"fraction_chips_le_4", static_cast<double>(le4) / trials},
                    {"fraction_servers_le_2", static_cast<double>(le2) / trials}});
  }
  out["rows"] = rows;
  return out;
}

// ---------------------------------------------------------------------------------------------
namespace {
enum class FileKind { Mix, Trace };
FileKind detect_kind(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("cannot open workload file '{}'", path));
  std::string line;
  std::getline(in, line);
  std::string low = line;
  std::transform(low.begin(), low.end(), low.begin(), [](unsigned char c) { return std::tolower(c); });
  if (!low.empty() && low[0] == '#' && low.find("probability") != std::string::npos) return FileKind::Mix;
  if (!low.empty() && low[0] == '#' && low.find("arrival") != std::string::npos) return FileKind::Trace;
  throw std::runtime_error(fmt::format(
      "workload file '{}': cannot tell its format from the first line '{}': expected a header "
      "'# slice id, topology, slice shape, slice size, duration (sec), probability (%)' (shape mix) or "
      "'#job id,arrival time (sec),topology,shape,size,duration (sec)' (job trace)",
      path, line));
}

std::vector<Job> synth_jobs(const ShapeMix& mix, const IatMix& iat, size_t n, double load, int chips,
                            std::mt19937_64& rng) {
  double mean_size = 0;
  for (size_t i = 0; i < mix.shapes.size(); ++i) mean_size += mix.weight[i] * mix.shapes[i].volume();
  double mean_dur = load * chips * iat.mean() / mean_size;
  std::exponential_distribution<double> dur(1.0 / mean_dur);
  std::vector<Job> jobs;
  double t = 0;
  for (size_t i = 0; i < n; ++i) {
    t += iat.sample(rng);
    Job j;
    j.arrival = t;
    j.duration = dur(rng);
    j.shape = mix.sample(rng);
    j.size = j.shape.volume();
    jobs.push_back(j);
  }
  return jobs;
}

std::vector<Job> workload_jobs(const WorkloadSpec& w, const std::string& dir, int racks, std::mt19937_64& rng,
                               std::string* source) {
  if (w.requests == 0) throw std::invalid_argument("--requests must be positive");
  if (w.name == "tpuv4") {
    *source = "traces/workloads/tpu_job_size.csv + tpu_arrival_time.csv (synthetic arrivals)";
    return synth_jobs(load_shape_mix(workload_path(dir, "tpu_job_size.csv")), load_iat(workload_path(dir, "tpu_arrival_time.csv")),
                      w.requests, w.load, racks * kChipsPerRack, rng);
  }
  if (w.name == "philly") {
    *source = "traces/workloads/philly_trace.csv";
    return load_job_trace(workload_path(dir, "philly_trace.csv"), w.requests);
  }
  if (w.name.find('/') == std::string::npos && w.name.find('.') == std::string::npos)
    throw std::invalid_argument(fmt::format("unknown workload '{}': expected tpuv4, philly or a CSV file path", w.name));
  *source = w.name;
  if (detect_kind(w.name) == FileKind::Mix)
    return synth_jobs(load_shape_mix(w.name), load_iat(workload_path(dir, "tpu_arrival_time.csv")), w.requests, w.load,
                      racks * kChipsPerRack, rng);
  return load_job_trace(w.name, w.requests);
}

PolicyRun simulate(int racks, const std::vector<Job>& jobs, const AllocOptions& a, const CommonOptions& o,
                   int samples, double* seconds) {
  auto t0 = std::chrono::steady_clock::now();
  PolicyRun run = new_run(a);
  Datacenter dc(racks, o.fibres);
  Allocator al(a);
  std::mt19937_64 rng(o.seed ^ 0x9e3779b97f4a7c15ULL);
  using Dep = std::pair<double, int>;
  std::priority_queue<Dep, std::vector<Dep>, std::greater<Dep>> deps;
  const size_t every = samples > 0 ? std::max<size_t>(1, jobs.size() / samples) : 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    while (!deps.empty() && deps.top().first <= j.arrival) {
      dc.release(deps.top().second);
      deps.pop();
    }
    auto& st = run.by_size[j.shape.volume()];
    st.submitted++;
    if (auto s = al.place(dc, j.shape)) {
      st.accepted++;
      record_slice(run, *s);
      int id = dc.commit(std::move(*s));
      deps.push({j.arrival + j.duration, id});
    }
    if (every && (i + 1) % every == 0) {
      check(dc, run, o);
      sample_frag(dc, run);
      sample_blast(dc, run, rng, 64);
    }
  }
  check(dc, run, o);
  run.ilp = al.ilp_stats();
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return run;
}
}  // namespace

json run_workload(int racks, const WorkloadSpec& w, const std::vector<AllocOptions>& allocators,
                  const CommonOptions& o) {
  if (racks <= 0) throw std::invalid_argument(fmt::format("--racks must be positive (got {})", racks));
  std::mt19937_64 rng(o.seed);
  std::string source;
  auto jobs = workload_jobs(w, o.workload_dir, racks, rng, &source);
  json out{{"experiment", "workload"}, {"workload", w.name}, {"source", source}, {"racks", racks},
           {"chips", racks * kChipsPerRack}, {"requests", jobs.size()}, {"seed", o.seed}, {"fibres", o.fibres},
           {"solver", o.solver == Solver::Auto ? "auto" : o.solver == Solver::Ilp ? "ilp" : "heuristic"}};
  if (w.name == "tpuv4" || source == w.name) out["offered_load"] = w.load;
  json pol = json::array();
  for (const AllocOptions& a : allocators) {
    double secs = 0;
    PolicyRun run = simulate(racks, jobs, a, o, 50, &secs);
    json j = run.to_json();
    j["wall_s"] = secs;
    pol.push_back(j);
  }
  out["policies"] = pol;
  return out;
}

json run_bench(size_t requests, int racks, int ilp_instances, const CommonOptions& o) {
  json out{{"benchmark", "alloc"}, {"requests", requests}, {"racks", racks}, {"chips", racks * kChipsPerRack},
           {"seed", o.seed}, {"fibres", o.fibres}};
  std::mt19937_64 rng(o.seed);
  CommonOptions h = o;
  h.solver = Solver::Heuristic;
  h.check = false;
  json traces = json::array();
  for (std::string wl : {"tpuv4", "philly"}) {
    WorkloadSpec w{wl, requests, 0.9};
    std::string source;
    auto jobs = workload_jobs(w, o.workload_dir, racks, rng, &source);
    for (Policy p : {Policy::Baseline, Policy::Morphlux}) {
      double secs = 0;
      PolicyRun run = simulate(racks, jobs, alloc_options(p, h), h, 0, &secs);
      long acc = 0, sub = 0;
      for (auto& [n, st] : run.by_size) {
        acc += st.accepted;
        sub += st.submitted;
      }
      traces.push_back({{"workload", wl}, {"policy", policy_name(p)}, {"requests", jobs.size()},
                        {"wall_s", secs}, {"accepted", acc}, {"submitted", sub}, {"target_s", 30.0},
                        {"requests_per_s", jobs.size() / std::max(secs, 1e-9)}});
      fmt::print("  {:<7} {:<9} {} requests in {:.2f} s\n", wl, policy_name(p), jobs.size(), secs);
    }
  }
  out["trace_runs"] = traces;
  // Integer program on random partly used racks.
  json ilp = json::array();
  for (int n : {2, 4, 8, 16}) {
    std::vector<double> ms;
    int optimal = 0, infeasible = 0, timeouts = 0, agree = 0, both = 0;
    for (int t = 0; t < ilp_instances; ++t) {
      Datacenter dc(1, o.fibres);
      Allocator al({Policy::Morphlux, Solver::Heuristic});
      int fill_to = std::uniform_int_distribution<int>(0, 48)(rng);
      while (kChipsPerRack - dc.free_chips() < fill_to) {
        auto s = al.place(dc, shape_for_chips(1 << std::uniform_int_distribution<int>(0, 4)(rng)));
        if (!s) break;
        dc.commit(std::move(*s));
      }
      for (int id : dc.live_ids())
        if (rng() % 3 == 0) dc.release(id);
      RackView v = rack_view(dc, 0);
      Shape sh = shape_for_chips(n);
      IlpResult r = fabric_ilp(v, sh, o.ilp_time_limit_ms * 5);
      ms.push_back(r.ms);
      optimal += r.status == IlpResult::Status::Optimal;
      infeasible += r.status == IlpResult::Status::Infeasible;
      timeouts += r.status == IlpResult::Status::Timeout || r.status == IlpResult::Status::FeasibleTimeout;
      ServerAssign hs = fabric_heuristic(v, sh);
      if (r.status == IlpResult::Status::Optimal && !hs.empty()) {
        ++both;
        agree += r.objective <= fabric_cost(sh, hs) + 1e-9;
      }
    }
    long under = std::count_if(ms.begin(), ms.end(), [&](double x) { return x < 100.0; });
    ilp.push_back({{"slice_chips", n}, {"instances", ilp_instances}, {"time_limit_ms", o.ilp_time_limit_ms * 5},
                   {"median_ms", median(ms)}, {"p90_ms", quantile(ms, 0.9)},
                   {"max_ms", ms.empty() ? 0.0 : *std::max_element(ms.begin(), ms.end())},
                   {"fraction_under_100ms", ilp_instances ? static_cast<double>(under) / ilp_instances : 0.0},
                   {"optimal", optimal}, {"infeasible", infeasible}, {"timeouts", timeouts},
                   {"ilp_not_worse_than_heuristic", agree}, {"both_solved", both}});
    fmt::print("  ILP {:>2}-chip slices: median {:.1f} ms over {} racks\n", n, median(ms), ilp_instances);
  }
  out["ilp"] = ilp;
  return out;
}

// ---------------------------------------------------------------------------------------------
namespace {
std::string pct(const json& v) { return v.is_number() ? fmt::format("{:5.1f}%", 100.0 * v.get<double>()) : "    -"; }
}  // namespace

namespace {
void print_histogram(const char* what, const json& h) {
  fmt::print("{}:", what);
  for (const auto& [k, v] : h.items()) fmt::print(" {}:{}", k, v.get<long>());
  fmt::print("\n");
}
}  // namespace

void print_frag_tpuv4(const json& j) {
  fmt::print("Case 1: fill {} racks ({} chips) from the TPU v4 mix, free {:.0f}% of the slices at random, "
             "{} trial(s), seed {}; one state per baseline mode, every allocator measured on it\n",
             j["racks"].get<int>(), j["chips"].get<int>(), 100 * j["free_fraction"].get<double>(),
             j["trials"].get<int>(), j["seed"].get<uint64_t>());
  fmt::print("{:<17} {:<26} {:>7} {:>9} {:>11} {:>10} {:>10} {:>9}\n", "state (fill)", "allocator", "util",
             "util-free", "worst-frag", "worst-max", "mean-frag", "p90-frag");
  for (const auto& p : j["policies"])
    fmt::print("{:<17} {:<26} {:>7} {:>9} {:>11.3f} {:>10.3f} {:>10.3f} {:>9.3f}\n", p["state"].get<std::string>(),
               p["policy"].get<std::string>(), pct(p["utilization_full"]), pct(p["utilization_after_free"]),
               p["worst_rack_fragmentation"]["mean"].get<double>(), p["worst_rack_fragmentation"]["max"].get<double>(),
               p["mean_rack_fragmentation"]["mean"].get<double>(), p["fragmentation"]["p90"].get<double>());
  for (const auto& st : j["states"]) {
    for (const auto& [name, cut] : st["fragmentation_cut"].items())
      fmt::print("{} state: {} cuts the worst-rack fragmentation index by {:.0f}% and the mean by {:.0f}%\n",
                 st["fill"].get<std::string>(), name, 100 * cut["worst"].get<double>(), 100 * cut["mean"].get<double>());
    fmt::print("{} state: partly free racks per trial {:.1f}; ", st["fill"].get<std::string>(),
               st["partly_free_racks_mean"].get<double>());
    print_histogram("racks by free chips (free:racks, all trials)", st["rack_free_histogram"]);
  }
  for (const auto& p : j["policies"])
    if (p["policy"] == "baseline(aligned)" && p["state"] == "aligned")
      fmt::print("worst-rack fragmentation of the aligned baseline: {:.3f} (mean over trials; max {:.3f}) against "
                 "the paper's ~0.7\n",
                 p["worst_rack_fragmentation"]["mean"].get<double>(), p["worst_rack_fragmentation"]["max"].get<double>());
}

void print_fragmented32(const json& j) {
  fmt::print("Case 2: {} chips, fill, free random slices to {:.0f}% utilization, then {} sequential 32-chip "
             "requests; {} trial(s) per fill, seed {}\n",
             j["chips"].get<int>(), 100 * j["utilization_after_free"].get<double>(), j["probes_per_trial"].get<int>(),
             j["trials"].get<int>(), j["seed"].get<uint64_t>());
  fmt::print("{:<28} {:<26} {:>9} {:>9} {:>9} {:>7} {:>6} {:>6} {:>11}\n", "fill (placement, sizes)", "allocator",
             "first-32", "all-32", "rejected", "bw-32", "hops", "lanes", "worst-frag");
  for (const auto& st : j["states"]) {
    for (const auto& p : st["policies"])
      for (const auto& s : p["by_size"])
        if (s["size"] == 32)
          fmt::print("{:<28} {:<26} {:>9} {:>9} {:>8.1f}% {:>7} {:>6} {:>6} {:>11.3f}\n", st["name"].get<std::string>(),
                     p["policy"].get<std::string>(), pct(p["first_probe_acceptance"]), pct(s.value("acceptance", json())),
                     100.0 * p["rejected"].get<double>(),
                     s.contains("bandwidth") ? fmt::format("{:.3f}", s["bandwidth"].get<double>()) : "-",
                     s.contains("mean_hops") ? fmt::format("{:.2f}", s["mean_hops"].get<double>()) : "-",
                     s.contains("lanes_granted_share") ? fmt::format("{:.2f}", s["lanes_granted_share"].get<double>())
                                                       : "-",
                     p["worst_rack_fragmentation"]["mean"].get<double>());
  }
  for (const auto& st : j["states"]) {
    fmt::print("{}: utilization full {}, probed {}; racks (of {}) with a free 32-chip box {:.2f}, an aligned 2x4x4 "
               "{:.2f}, room for Morphlux's 8 servers {:.2f}\n",
               st["name"].get<std::string>(), pct(st["utilization_full"]), pct(st["utilization_probed"]),
               j["racks"].get<int>(), st["racks_with_free_32_box_mean"].get<double>(),
               st["racks_with_aligned_32_mean"].get<double>(),
               st["racks_where_server_morphlux_fits_32_mean"].get<double>());
    print_histogram("  surviving slices by size (size:count, all trials)", st["live_slices_by_size"]);
  }
  if (j.contains("closest_to_paper"))
    fmt::print("the paper's ~75% rejection by the aligned baseline is closest to the fill '{}'\n",
               j["closest_to_paper"].get<std::string>());
  for (const auto& g : j["goals"])
    fmt::print("{} goal {}: {:.1f}% rejected on '{}' (goal {}; paper: baseline ~75%, Morphlux 0%)\n",
               g["met"].get<bool>() ? "PASS" : "FAIL", g["goal"].get<std::string>(), 100 * g["value"].get<double>(),
               g["state"].get<std::string>(), g["target"].get<std::string>());
}

void print_spares(const json& j) {
  fmt::print("Case 3: spares for {} chips ({} servers) at a {:.0f}% risk target, {} draws, seed {}\n",
             j["chips"].get<int>(), j["servers"].get<int>(), 100 * j["target"].get<double>(), j["trials"].get<int>(),
             j["seed"].get<uint64_t>());
  fmt::print("{:<12} {:>11} {:>12} {:>12} {:>10} {:>13} {:>12}\n", "p per chip", "chips@mean", "chips-median",
             "chips-p90", "<=4 chips", "servers-med", "<=2 servers");
  for (const auto& r : j["rows"])
    fmt::print("U({:.0f},{:.0f}%)    {:>11} {:>12.0f} {:>12.0f} {:>10} {:>13.0f} {:>12}\n",
               100 * r["range"][0].get<double>(), 100 * r["range"][1].get<double>(),
               r["spare_chips_at_mean_p"].get<int>(), r["spare_chips"]["median"].get<double>(),
               r["spare_chips"]["p90"].get<double>(), pct(r["fraction_chips_le_4"]),
               r["spare_servers"]["median"].get<double>(), pct(r["fraction_servers_le_2"]));
}

void print_workload(const json& j) {
  fmt::print("Workload {} on {} racks ({} chips), {} requests, seed {}\n", j["workload"].get<std::string>(),
             j["racks"].get<int>(), j["chips"].get<int>(), j["requests"].get<size_t>(), j["seed"].get<uint64_t>());
  for (const auto& p : j["policies"]) {
    fmt::print("{}: mean rack fragmentation {:.3f} (max {:.3f}), blast radius {:.1f} chips, {:.2f} s, invariants {}\n",
               p["policy"].get<std::string>(), p["fragmentation"]["mean"].get<double>(),
               p["fragmentation"]["max"].get<double>(), p["blast_radius_mean"].get<double>(), p["wall_s"].get<double>(),
               p["invariants"]["ok"].get<bool>() ? "ok" : p["invariants"]["error"].get<std::string>());
    fmt::print("  {:>6} {:>9} {:>9} {:>11} {:>10} {:>9}\n", "size", "submitted", "accepted", "acceptance", "bandwidth",
               "step s");
    for (const auto& s : p["by_size"])
      fmt::print("  {:>6} {:>9} {:>9} {:>11} {:>10} {:>9}\n", s["size"].get<int>(), s["submitted"].get<long>(),
                 s["accepted"].get<long>(), pct(s.value("acceptance", json())),
                 s.contains("bandwidth") ? fmt::format("{:.3f}", s["bandwidth"].get<double>()) : "-",
                 s.contains("step_s") ? fmt::format("{:.4f}", s["step_s"].get<double>()) : "-");
  }
}

void print_bench(const json& j) {
  fmt::print("Benchmark: {} requests on {} chips\n", j["requests"].get<size_t>(), j["chips"].get<int>());
  for (const auto& t : j["trace_runs"])
    fmt::print("  {:<7} {:<9} {:>7} requests {:>7.2f} s ({:.0f} req/s; target < 30 s)\n",
               t["workload"].get<std::string>(), t["policy"].get<std::string>(), t["requests"].get<size_t>(),
               t["wall_s"].get<double>(), t["requests_per_s"].get<double>());
  for (const auto& r : j["ilp"])
    fmt::print("  ILP {:>2}-chip slice in a rack: median {:6.1f} ms, p90 {:6.1f} ms, {:>3} optimal, {:>3} infeasible, "
               "{:>3} timeouts ({} ms limit), {:.0f}% under 100 ms\n",
               r["slice_chips"].get<int>(), r["median_ms"].get<double>(), r["p90_ms"].get<double>(),
               r["optimal"].get<int>(), r["infeasible"].get<int>(), r["timeouts"].get<int>(),
               r["time_limit_ms"].get<int>(), 100 * r["fraction_under_100ms"].get<double>());
}

}  // namespace mxtb::host::alloc
