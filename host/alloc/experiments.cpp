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

// Candidate slices for the fragmentation index, largest first. Baseline: every box with extents
// in {1,2,4} (a contiguous torus needs each extent to be a ring). Morphlux: any chip count n, as
// the most compact factorizations a x b x c = n (the fabric builds any logical torus).
const std::vector<Shape>& rack_shapes(Policy p) {
  static const std::vector<Shape> base = [] {
    std::vector<Shape> v;
    for (int a : {1, 2, 4})
      for (int b : {1, 2, 4})
        for (int c : {1, 2, 4})
          if (a <= b && b <= c) v.push_back(Shape{{a, b, c}});
    std::stable_sort(v.begin(), v.end(), [](const Shape& x, const Shape& y) { return x.volume() > y.volume(); });
    return v;
  }();
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
  return p == Policy::kBaseline ? base : fabric;
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

AllocOptions alloc_options(Policy p, const CommonOptions& o) {
  AllocOptions a;
  a.policy = p;
  a.solver = o.solver;
  a.ilp_time_limit_ms = o.ilp_time_limit_ms;
  return a;
}

void record_slice(PolicyRun& run, const Slice& s) {
  auto& st = run.by_size[s.shape.volume()];
  double bw = slice_bandwidth(s);
  st.bw_sum += bw;
  st.ar_sum += allreduce_seconds(s.shape, bw);
  st.step_sum += step_seconds(s.shape, bw);
  st.bw_n++;
  run.decided_by[s.decided_by]++;
}

void sample_frag(const Datacenter& dc, PolicyRun& run, std::vector<double>* out = nullptr) {
  for (int r = 0; r < dc.racks(); ++r) {
    if (dc.rack_free(r) == 0) continue;
    double f = rack_fragmentation(dc, r, run.policy, rack_shapes(run.policy));
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
    run.blast_sum += blast_radius(dc, used[pick(rng)], run.policy);
    run.blast_n++;
  }
}

void check(const Datacenter& dc, PolicyRun& run, const CommonOptions& o) {
  if (!o.check || !run.invariant_error.empty()) return;
  run.invariant_checks++;
  run.invariant_error = check_invariants(dc);
}

// Fill until `patience` consecutive requests fail (or nothing is free).
template <typename Gen>
void fill(Datacenter& dc, Allocator& al, PolicyRun& run, Gen&& next_shape, int patience) {
  int fails = 0;
  while (fails < patience && dc.free_chips() > 0) {
    Shape s = next_shape();
    if (auto p = al.place(dc, s)) {
      record_slice(run, *p);
      dc.commit(std::move(*p));
      fails = 0;
    } else {
      ++fails;
    }
  }
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
  j["policy"] = policy_name(policy);
  json sizes = json::array();
  for (const auto& [n, st] : by_size) {
    json s{{"size", n}, {"submitted", st.submitted}, {"accepted", st.accepted}, {"placed_slices", st.bw_n}};
    if (st.submitted) s["acceptance"] = static_cast<double>(st.accepted) / st.submitted;
    if (st.bw_n) {
      s["bandwidth"] = st.bw_sum / st.bw_n;
      s["allreduce_s"] = st.ar_sum / st.bw_n;
      s["step_s"] = st.step_sum / st.bw_n;
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

namespace {

// Fills with the baseline's contiguous placement, randomized (random origin start in a rack, and a
// random rack order when shuffle_racks), until `patience` requests in a row are refused.
template <typename Gen>
void fill_baseline_random(Datacenter& dc, std::mt19937_64& rng, Gen&& next_shape, int patience, bool shuffle_racks) {
  int fails = 0;
  while (fails < patience && dc.free_chips() > 0) {
    Shape s = next_shape();
    if (auto p = baseline_place_random(dc, s, rng, shuffle_racks)) {
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

}  // namespace

// ---------------------------------------------------------------------------------------------
// Case 1. One occupancy state per trial, built by the baseline's own placement (first fit over
// racks, so that multi-rack slices find free cubes; every rotation; origins scanned from a random
// start so that slices are not packed into the corner of a rack), filled until the first request
// is refused; then a fraction of the live slices, picked at random, is released. Both policies'
// fragmentation indices are measured on that same state.
json experiment_frag_tpuv4(int racks, double free_frac, int trials, const CommonOptions& o) {
  if (racks <= 0) throw std::invalid_argument(fmt::format("--racks must be positive (got {})", racks));
  if (free_frac < 0 || free_frac > 1) throw std::invalid_argument("--free must be in [0,1]");
  ShapeMix mix = load_shape_mix(workload_path("tpu_job_size.csv"));
  const int patience = 64;  // "fill": until 64 requests in a row are refused (all racks full)
  json out{{"experiment", "frag-tpuv4"}, {"racks", racks}, {"chips", racks * kChipsPerRack},
           {"free_fraction", free_frac}, {"trials", trials}, {"seed", o.seed}, {"fibres", o.fibres},
           {"state", "shared: baseline first fit over racks, random origin start, fill until 64 refusals "
                     "in a row, then release random slices; both indices measured on that state"}};
  PolicyRun runs[2];
  runs[0].policy = Policy::kBaseline;
  runs[1].policy = Policy::kMorphlux;
  std::vector<double> worst[2], mean_frag[2], util_full, util_after, frag_racks;
  std::map<int, long> free_hist;
  for (int t = 0; t < trials; ++t) {
    std::mt19937_64 rng(o.seed + static_cast<uint64_t>(t));
    Datacenter dc(racks, o.fibres);
    fill_baseline_random(dc, rng, [&] { return mix.sample(rng); }, patience, false);
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
    for (int k = 0; k < 2; ++k) {
      check(dc, runs[k], o);
      std::vector<double> f;
      sample_frag(dc, runs[k], &f);
      worst[k].push_back(f.empty() ? 0.0 : *std::max_element(f.begin(), f.end()));
      mean_frag[k].push_back(mean(f));
    }
  }
  json pol = json::array();
  for (int k = 0; k < 2; ++k) {
    json j = runs[k].to_json();
    j["worst_rack_fragmentation"] = stats_json(worst[k]);
    j["mean_rack_fragmentation"] = stats_json(mean_frag[k]);
    j["utilization_full"] = mean(util_full);
    j["utilization_after_free"] = mean(util_after);
    pol.push_back(j);
  }
  out["policies"] = pol;
  json h = json::object();
  for (auto [f, c] : free_hist) h[std::to_string(f)] = c;
  out["rack_free_histogram"] = h;  // free chips in a rack -> racks (summed over trials)
  out["partly_free_racks_mean"] = mean(frag_racks);
  double wb = pol[0]["worst_rack_fragmentation"]["mean"], wm = pol[1]["worst_rack_fragmentation"]["mean"];
  double mb = pol[0]["mean_rack_fragmentation"]["mean"], mm = pol[1]["mean_rack_fragmentation"]["mean"];
  out["worst_fragmentation_cut"] = wb > 0 ? 1.0 - wm / wb : 0.0;
  out["mean_fragmentation_cut"] = mb > 0 ? 1.0 - mm / mb : 0.0;
  return out;
}

// Case 2. One fragmented state per trial, built by the baseline's own placement (random rack
// order, every rotation, origins from a random start): random sizes from {4,8,16,32} until 64
// requests in a row are refused, optional churn rounds (release a random slice, refill), then
// random slices released until utilization <= util_after_free. Each policy then gets its own copy
// of that state and the same sequence of `probes` 32-chip requests, committed as they are accepted
// (sequential). The first probe of each trial is the independent test: one 32-chip request
// against the fragmented state.
json experiment_fragmented32(int racks, double util_after_free, int probes, int trials, int churn_rounds,
                             const CommonOptions& o) {
  if (racks <= 0) throw std::invalid_argument(fmt::format("--racks must be positive (got {})", racks));
  const std::vector<int> sizes = {4, 8, 16, 32};
  const Shape probe = size_shape(32);
  json out{{"experiment", "fragmented-32"}, {"racks", racks}, {"chips", racks * kChipsPerRack},
           {"utilization_after_free", util_after_free}, {"probes_per_trial", probes},
           {"trials", trials}, {"seed", o.seed}, {"fibres", o.fibres}, {"churn_rounds", churn_rounds},
           {"state", "shared: baseline placement, random rack order and origin start, fill until 64 "
                     "refusals in a row, release random slices down to the target utilization"},
           {"probe_mode", "sequential: each policy gets a copy of the state and the same 32-chip "
                          "requests, committed when accepted; first probe = independent test"}};
  PolicyRun runs[2];
  runs[0].policy = Policy::kBaseline;
  runs[1].policy = Policy::kMorphlux;
  long first_ok[2] = {0, 0};
  std::vector<double> util_full, util_after, box_racks, fabric_racks;
  std::map<int, long> free_hist, live_by_size;
  for (int t = 0; t < trials; ++t) {
    std::mt19937_64 rng(o.seed + static_cast<uint64_t>(t));
    Datacenter dc(racks, o.fibres);
    std::uniform_int_distribution<size_t> pick(0, sizes.size() - 1);
    auto next = [&] { return size_shape(sizes[pick(rng)]); };
    fill_baseline_random(dc, rng, next, 64, true);
    const int rounds = churn_rounds >= 0 ? churn_rounds : 4 * static_cast<int>(dc.live_ids().size());
    for (int c = 0; c < rounds; ++c) {
      auto ids = dc.live_ids();
      if (!ids.empty()) dc.release(ids[rng() % ids.size()]);
      fill_baseline_random(dc, rng, next, 4, true);
    }
    util_full.push_back(1.0 - static_cast<double>(dc.free_chips()) / dc.chips());
    free_random(dc, rng, static_cast<int>((1.0 - util_after_free) * dc.chips() + 0.5));
    util_after.push_back(1.0 - static_cast<double>(dc.free_chips()) / dc.chips());
    for (int id : dc.live_ids()) live_by_size[dc.slice(id).shape.volume()]++;
    int nb = 0, nf = 0;
    for (int r = 0; r < dc.racks(); ++r) {
      free_hist[dc.rack_free(r)]++;
      bool box = baseline_place_in_rack(dc, r, probe).has_value();
      nb += box;
      nf += box || (dc.rack_free(r) >= probe.volume() && !fabric_heuristic(rack_view(dc, r), probe).empty());
    }
    box_racks.push_back(nb);
    fabric_racks.push_back(nf);
    for (int k = 0; k < 2; ++k) {
      check(dc, runs[k], o);
      sample_frag(dc, runs[k]);
      Datacenter d = dc;
      Allocator al(alloc_options(runs[k].policy, o));
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
  for (int k = 0; k < 2; ++k) {
    json j = runs[k].to_json();
    j["first_probe_acceptance"] = trials > 0 ? static_cast<double>(first_ok[k]) / trials : 0.0;
    j["utilization_full"] = mean(util_full);
    j["utilization_probed"] = mean(util_after);
    pol.push_back(j);
  }
  out["policies"] = pol;
  json h = json::object(), ls = json::object();
  for (auto [f, c] : free_hist) h[std::to_string(f)] = c;
  for (auto [n, c] : live_by_size) ls[std::to_string(n)] = c;
  out["rack_free_histogram"] = h;             // free chips in a rack -> racks (summed over trials)
  out["live_slices_by_size"] = ls;            // surviving slices after the release (summed)
  out["racks_with_free_32_box_mean"] = mean(box_racks);
  out["racks_where_morphlux_fits_32_mean"] = mean(fabric_racks);
  out["utilization_full"] = mean(util_full);
  out["utilization_probed"] = mean(util_after);
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
enum class FileKind { kMix, kTrace };
FileKind detect_kind(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("cannot open workload file '{}'", path));
  std::string line;
  std::getline(in, line);
  std::string low = line;
  std::transform(low.begin(), low.end(), low.begin(), [](unsigned char c) { return std::tolower(c); });
  if (!low.empty() && low[0] == '#' && low.find("probability") != std::string::npos) return FileKind::kMix;
  if (!low.empty() && low[0] == '#' && low.find("arrival") != std::string::npos) return FileKind::kTrace;
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

std::vector<Job> workload_jobs(const WorkloadSpec& w, int racks, std::mt19937_64& rng, std::string* source) {
  if (w.requests == 0) throw std::invalid_argument("--requests must be positive");
  if (w.name == "tpuv4") {
    *source = "traces/workloads/tpu_job_size.csv + tpu_arrival_time.csv (synthetic arrivals)";
    return synth_jobs(load_shape_mix(workload_path("tpu_job_size.csv")), load_iat(workload_path("tpu_arrival_time.csv")),
                      w.requests, w.load, racks * kChipsPerRack, rng);
  }
  if (w.name == "philly") {
    *source = "traces/workloads/philly_trace.csv";
    return load_job_trace(workload_path("philly_trace.csv"), w.requests);
  }
  if (w.name.find('/') == std::string::npos && w.name.find('.') == std::string::npos)
    throw std::invalid_argument(fmt::format("unknown workload '{}': expected tpuv4, philly or a CSV file path", w.name));
  *source = w.name;
  if (detect_kind(w.name) == FileKind::kMix)
    return synth_jobs(load_shape_mix(w.name), load_iat(workload_path("tpu_arrival_time.csv")), w.requests, w.load,
                      racks * kChipsPerRack, rng);
  return load_job_trace(w.name, w.requests);
}

PolicyRun simulate(int racks, const std::vector<Job>& jobs, Policy p, const CommonOptions& o, int samples,
                   double* seconds) {
  auto t0 = std::chrono::steady_clock::now();
  PolicyRun run;
  run.policy = p;
  Datacenter dc(racks, o.fibres);
  Allocator al(alloc_options(p, o));
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

json run_workload(int racks, const WorkloadSpec& w, const std::vector<Policy>& policies, const CommonOptions& o) {
  if (racks <= 0) throw std::invalid_argument(fmt::format("--racks must be positive (got {})", racks));
  std::mt19937_64 rng(o.seed);
  std::string source;
  auto jobs = workload_jobs(w, racks, rng, &source);
  json out{{"experiment", "workload"}, {"workload", w.name}, {"source", source}, {"racks", racks},
           {"chips", racks * kChipsPerRack}, {"requests", jobs.size()}, {"seed", o.seed}, {"fibres", o.fibres},
           {"solver", o.solver == Solver::kAuto ? "auto" : o.solver == Solver::kIlp ? "ilp" : "heuristic"}};
  if (w.name == "tpuv4" || source == w.name) out["offered_load"] = w.load;
  json pol = json::array();
  for (Policy p : policies) {
    double secs = 0;
    PolicyRun run = simulate(racks, jobs, p, o, 50, &secs);
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
  h.solver = Solver::kHeuristic;
  h.check = false;
  json traces = json::array();
  for (std::string wl : {"tpuv4", "philly"}) {
    WorkloadSpec w{wl, requests, 0.9};
    std::string source;
    auto jobs = workload_jobs(w, racks, rng, &source);
    for (Policy p : {Policy::kBaseline, Policy::kMorphlux}) {
      double secs = 0;
      PolicyRun run = simulate(racks, jobs, p, h, 0, &secs);
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
      Allocator al({Policy::kMorphlux, Solver::kHeuristic});
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
      optimal += r.status == IlpResult::kOptimal;
      infeasible += r.status == IlpResult::kInfeasible;
      timeouts += r.status == IlpResult::kTimeout || r.status == IlpResult::kFeasibleTimeout;
      ServerAssign hs = fabric_heuristic(v, sh);
      if (r.status == IlpResult::kOptimal && !hs.empty()) {
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
             "{} trial(s), seed {}; both policies measured on the same state\n",
             j["racks"].get<int>(), j["chips"].get<int>(), 100 * j["free_fraction"].get<double>(),
             j["trials"].get<int>(), j["seed"].get<uint64_t>());
  fmt::print("{:<10} {:>9} {:>9} {:>12} {:>12} {:>12} {:>12}\n", "policy", "util", "util-free", "worst-frag",
             "worst-max", "mean-frag", "p90-frag");
  for (const auto& p : j["policies"])
    fmt::print("{:<10} {:>9} {:>9} {:>12.3f} {:>12.3f} {:>12.3f} {:>12.3f}\n", p["policy"].get<std::string>(),
               pct(p["utilization_full"]), pct(p["utilization_after_free"]),
               p["worst_rack_fragmentation"]["mean"].get<double>(), p["worst_rack_fragmentation"]["max"].get<double>(),
               p["mean_rack_fragmentation"]["mean"].get<double>(), p["fragmentation"]["p90"].get<double>());
  fmt::print("Morphlux cuts the worst-rack fragmentation index by {:.0f}% and the mean by {:.0f}%\n",
             100 * j["worst_fragmentation_cut"].get<double>(), 100 * j["mean_fragmentation_cut"].get<double>());
  fmt::print("partly free racks per trial: {:.1f}\n", j["partly_free_racks_mean"].get<double>());
  print_histogram("racks by free chips (free:racks, all trials)", j["rack_free_histogram"]);
}

void print_fragmented32(const json& j) {
  fmt::print("Case 2: {} chips, fill with 4/8/16/32-chip requests, free random slices to {:.0f}% utilization, "
             "then {} sequential 32-chip requests; {} trial(s), seed {}\n",
             j["chips"].get<int>(), 100 * j["utilization_after_free"].get<double>(), j["probes_per_trial"].get<int>(),
             j["trials"].get<int>(), j["seed"].get<uint64_t>());
  fmt::print("utilization: full {}, probed {}; racks with a free 32-chip torus box: {:.2f}, racks where "
             "Morphlux fits 32 chips: {:.2f} (of {})\n",
             pct(j["utilization_full"]), pct(j["utilization_probed"]), j["racks_with_free_32_box_mean"].get<double>(),
             j["racks_where_morphlux_fits_32_mean"].get<double>(), j["racks"].get<int>());
  fmt::print("{:<10} {:>12} {:>12} {:>12} {:>8}\n", "policy", "first-32", "all-32", "rejected", "bw-32");
  for (const auto& p : j["policies"])
    for (const auto& s : p["by_size"])
      if (s["size"] == 32)
        fmt::print("{:<10} {:>12} {:>12} {:>11.1f}% {:>8}\n", p["policy"].get<std::string>(),
                   pct(p["first_probe_acceptance"]), pct(s.value("acceptance", json())),
                   100.0 * (1.0 - s.value("acceptance", 0.0)),
                   s.contains("bandwidth") ? fmt::format("{:.3f}", s["bandwidth"].get<double>()) : "-");
  print_histogram("racks by free chips (free:racks, all trials)", j["rack_free_histogram"]);
  print_histogram("surviving slices by size (size:count, all trials)", j["live_slices_by_size"]);
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
