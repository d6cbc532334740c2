// Unit tests of host/alloc: invariants on randomized inputs, DP against brute force, ILP against
// the heuristic, input validation.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "host/alloc/alloc.h"
#include "host/alloc/experiments.h"

using namespace mxtb::host::alloc;

namespace {

// The named workloads, as the program passes them (CommonOptions::workload_dir).
const std::string kWorkloads = std::string(MXTB_SOURCE_DIR) + "/traces/workloads";

const std::vector<Shape> kShapes = {parse_shape("1x1x1"), parse_shape("1x1x2"), parse_shape("1x2x2"),
                                    parse_shape("2x2x2"), parse_shape("2x2x4"), parse_shape("2x4x4"),
                                    parse_shape("4x4x4"), parse_shape("1x1x4"), parse_shape("1x4x4"),
                                    parse_shape("4x4x8"), parse_shape("4x8x8")};

// Random arrivals and departures; the checker runs after every change.
void churn(Datacenter& dc, Allocator& al, std::mt19937_64& rng, int steps, const std::vector<Shape>& shapes) {
  std::uniform_int_distribution<size_t> pick(0, shapes.size() - 1);
  int placed = 0;
  for (int i = 0; i < steps; ++i) {
    auto ids = dc.live_ids();
    if (!ids.empty() && rng() % 3 == 0) {
      dc.release(ids[rng() % ids.size()]);
    } else {
      Shape s = shapes[pick(rng)];
      if (auto p = al.place(dc, s)) {
        REQUIRE(check_slice(dc, *p) == "");
        dc.commit(std::move(*p));
        ++placed;
      }
    }
    std::string err = check_invariants(dc);
    REQUIRE_MESSAGE(err.empty(), err);
  }
  CHECK(placed > 0);
}

Slice one_chip(int g) {
  Slice s;
  s.shape = parse_shape("1x1x1");
  s.kind = SliceKind::RackTorus;
  s.rack = g / kChipsPerRack;
  s.chips = {g};
  return s;
}

}  // namespace

TEST_CASE("geometry: server links form the 2x2x4 server torus") {
  std::set<int> seen;
  for (int s = 0; s < kServersPerRack; ++s) {
    int deg = 0;
    for (int t = 0; t < kServersPerRack; ++t)
      if (server_link(s, t) >= 0) {
        ++deg;
        seen.insert(server_link(s, t));
        CHECK(server_link(t, s) == server_link(s, t));
      }
    CHECK(deg == 4);
    for (int c : server_chips(s)) CHECK(server_of_local(c) == s);
  }
  CHECK(seen.size() == kLinksPerRack);
}

TEST_CASE("logical torus: every chip of a multi-chip slice wants all 6 ports") {
  for (const auto& s : kShapes) {
    if (s.volume() == 1) continue;
    std::vector<int> ports(s.volume(), 0);
    for (const auto& e : logical_edges(s)) {
      ports[e.u] += e.wanted;
      ports[e.v] += e.wanted;
    }
    for (int p : ports) CHECK(p == kPortsPerChip);
  }
  CHECK_THROWS_AS(parse_shape("2x0x2"), std::invalid_argument);
  CHECK_THROWS_AS(parse_shape("2xx2"), std::invalid_argument);
  CHECK(shape_for_chips(7) == parse_shape("2x2x2"));
  CHECK(shape_for_chips(128) == parse_shape("4x4x8"));
}

TEST_CASE("baseline allocator keeps its invariants on random churn") {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    std::mt19937_64 rng(seed);
    Datacenter dc(6, 4);
    Allocator al({Policy::Baseline, Solver::Heuristic});
    churn(dc, al, rng, 400, kShapes);
    for (int id : dc.live_ids()) CHECK(dc.slice(id).kind != SliceKind::RackFabric);
  }
}

TEST_CASE("morphlux heuristic keeps its invariants on random churn, any fibre count") {
  for (int fibres : {1, 2, 4}) {
    std::mt19937_64 rng(100 + fibres);
    Datacenter dc(6, fibres);
    Allocator al({Policy::Morphlux, Solver::Heuristic});
    churn(dc, al, rng, 400, kShapes);
  }
}

TEST_CASE("morphlux with the integer program keeps its invariants") {
  std::mt19937_64 rng(7);
  Datacenter dc(1, 2);
  AllocOptions o{Policy::Morphlux, Solver::Ilp, 2000, 8};
  Allocator al(o);
  churn(dc, al, rng, 40, {parse_shape("1x1x2"), parse_shape("1x2x2"), parse_shape("2x2x2"), parse_shape("1x1x4")});
  CHECK(al.ilp_stats().calls > 0);
}

TEST_CASE("checker and commit reject broken slices") {
  Datacenter dc(2, 4);
  Slice bad;
  bad.shape = parse_shape("1x1x2");
  bad.kind = SliceKind::RackTorus;
  bad.rack = 0;
  bad.chips = {local_chip(0, 0, 0), local_chip(2, 2, 0)};  // not torus neighbours
  CHECK(check_slice(dc, bad) != "");
  bad.chips = {local_chip(0, 0, 0), local_chip(0, 0, 3)};  // wrap-around neighbours
  CHECK(check_slice(dc, bad) != "");  // its z link (servers 0 and 12) holds a fibre it does not list
  bad.torus_fibres = torus_fibre_links(bad.shape, bad.chips, dc.fibres());
  CHECK(bad.torus_fibres == std::vector<int>{server_link(0, 12)});
  CHECK(check_slice(dc, bad) == "");
  dc.commit(bad);
  CHECK_THROWS(dc.commit(one_chip(local_chip(0, 0, 0))));  // chip already used
}

TEST_CASE("fibre capacity: fabric_slice refuses an edge without fibre; commit refuses overbooking") {
  Datacenter dc(1, 1);
  ServerAssign a(8);
  // 2x2x2: chips with i=0 in server 0, i=1 in server 1: 4 x-edges cross one link of 1 fibre.
  for (int l = 0; l < 8; ++l) a[l] = (l % 2 == 0) ? 0 : 1;
  CHECK_THROWS_AS(fabric_slice(dc, 0, parse_shape("2x2x2"), a), std::logic_error);
  Slice s = fabric_slice(Datacenter(1, 8), 0, parse_shape("2x2x2"), a);
  CHECK_THROWS_AS(dc.commit(s), std::logic_error);
  // The heuristic and the ILP both respect a 1-fibre rack.
  RackView v = rack_view(dc, 0);
  auto h = fabric_heuristic(v, parse_shape("2x2x2"));
  REQUIRE(!h.empty());
  Slice hs = fabric_slice(dc, 0, parse_shape("2x2x2"), h);
  CHECK(check_slice(dc, hs) == "");
  dc.commit(hs);
  CHECK(check_invariants(dc) == "");
}

TEST_CASE("integer program agrees with the heuristic on small racks") {
  std::mt19937_64 rng(42);
  int compared = 0, optimal = 0;
  for (int t = 0; t < 24; ++t) {
    int fibres = 1 + static_cast<int>(rng() % 4);
    Datacenter dc(1, fibres);
    Allocator al({Policy::Morphlux, Solver::Heuristic});
    int fill_to = static_cast<int>(rng() % 56);
    while (kChipsPerRack - dc.free_chips() < fill_to) {
      auto s = al.place(dc, shape_for_chips(1 << (rng() % 4)));
      if (!s) break;
      dc.commit(std::move(*s));
    }
    for (int id : dc.live_ids())
      if (rng() % 3 == 0) dc.release(id);
    RackView v = rack_view(dc, 0);
    Shape sh = shape_for_chips(1 << (1 + rng() % 3));  // 2, 4 or 8 chips
    ServerAssign h = fabric_heuristic(v, sh);
    IlpResult r = fabric_ilp(v, sh, 5000);
    REQUIRE(r.status != IlpResult::Status::Error);
    if (!h.empty()) CHECK(r.status != IlpResult::Status::Infeasible);  // the ILP is exact for its model
    if (r.status == IlpResult::Status::Optimal) {
      ++optimal;
      Slice s = fabric_slice(dc, 0, sh, r.assign);
      CHECK(check_slice(dc, s) == "");
      CHECK(fabric_cost(sh, r.assign) == doctest::Approx(r.objective));
      if (!h.empty()) {
        ++compared;
        CHECK(r.objective <= fabric_cost(sh, h) + 1e-9);
      }
    }
  }
  CHECK(compared >= 10);
  CHECK(optimal >= 12);
}

TEST_CASE("spare sizing: dynamic program matches brute force") {
  std::mt19937_64 rng(3);
  for (int t = 0; t < 20; ++t) {
    int g = 1 + static_cast<int>(rng() % 12);
    std::vector<double> p(g);
    for (double& x : p) x = std::uniform_real_distribution<double>(0, 0.6)(rng);
    auto dp = failure_tail(p);
    auto bf = failure_tail_bruteforce(p);
    REQUIRE(dp.size() == bf.size());
    for (size_t k = 0; k < dp.size(); ++k) CHECK(dp[k] == doctest::Approx(bf[k]).epsilon(1e-9));
    CHECK(dp[0] == doctest::Approx(1.0));
    for (size_t k = 1; k < dp.size(); ++k) CHECK(dp[k] <= dp[k - 1] + 1e-12);
  }
  // The paper's three ranges at their mean probability, 64 chips, 5% target.
  CHECK(spares_needed(std::vector<double>(64, 0.005), 0.05) == 2);
  CHECK(spares_needed(std::vector<double>(64, 0.02), 0.05) == 4);
  CHECK(spares_needed(std::vector<double>(64, 0.04), 0.05) == 6);
  CHECK_THROWS(failure_tail({0.5, 1.5}));
}

TEST_CASE("fragmentation: a checkerboard rack is fragmented for the torus, not for Morphlux") {
  for (Policy p : {Policy::Baseline, Policy::Morphlux}) {
    Datacenter dc(1, 4);
    CHECK(rack_fragmentation(dc, 0, p, kShapes) == doctest::Approx(0.0));
    for (int l = 0; l < kChipsPerRack; ++l) {
      auto c = chip_coords(l);
      if ((c[0] + c[1] + c[2]) % 2 == 0) dc.commit(one_chip(l));
    }
    int largest = 0;
    double f = rack_fragmentation(dc, 0, p, {parse_shape("2x4x4"), parse_shape("2x2x4"), parse_shape("1x1x2"),
                                              parse_shape("1x1x1")},
                                  &largest);
    if (p == Policy::Baseline) {
      CHECK(largest == 1);
      CHECK(f == doctest::Approx(1.0 - 1.0 / 32));
    } else {
      CHECK(largest == 32);
      CHECK(f == doctest::Approx(0.0));
    }
  }
}

TEST_CASE("morphlux accepts every request the baseline accepts on the same state (superset)") {
  // Random occupancy states mixing contiguous torus slices (randomized baseline placement) and
  // fabric slices (Morphlux placement), then random releases; on each state every shape the
  // baseline (first fit) places must also be placed by Morphlux, and Morphlux's fragmentation
  // index of each rack must not exceed the baseline's.
  std::vector<Shape> shapes = kShapes;
  shapes.push_back(parse_shape("1x2x4"));
  shapes.push_back(parse_shape("4x4x12"));
  long accepted_base = 0, accepted_extra = 0, states = 0;
  for (int fibres : {1, 2, 4}) {
    for (uint64_t seed = 1; seed <= 60; ++seed) {
      std::mt19937_64 rng(seed * 7919 + static_cast<uint64_t>(fibres));
      Datacenter dc(4, fibres);
      Allocator fab({Policy::Morphlux, Solver::Heuristic, 100, 8});
      std::uniform_int_distribution<size_t> pick(0, 6);  // in-rack shapes
      const int steps = 20 + static_cast<int>(rng() % 60);
      for (int i = 0; i < steps; ++i) {
        Shape sh = kShapes[pick(rng)];
        std::optional<Slice> p = rng() % 2 ? baseline_place_random(dc, sh, rng) : fab.place(dc, sh);
        if (p) dc.commit(std::move(*p));
      }
      auto ids = dc.live_ids();
      std::shuffle(ids.begin(), ids.end(), rng);
      ids.resize(ids.size() * (rng() % 70) / 100);
      for (int id : ids) dc.release(id);
      REQUIRE(check_invariants(dc) == "");
      ++states;
      for (const auto& sh : shapes) {
        Allocator base({Policy::Baseline, Solver::Heuristic, 100, 8});
        Allocator mx({Policy::Morphlux, Solver::Heuristic, 100, 8});
        bool b = base.place(dc, sh).has_value();
        auto m = mx.place(dc, sh);
        if (b) {
          ++accepted_base;
          CHECK_MESSAGE(m.has_value(), "fibres ", fibres, " seed ", seed, " shape ", sh.str());
        } else if (m) {
          ++accepted_extra;
        }
        if (m) CHECK(check_slice(dc, *m) == "");
      }
      for (int r = 0; r < dc.racks(); ++r)
        CHECK(rack_fragmentation(dc, r, Policy::Morphlux, {parse_shape("2x4x4"), parse_shape("2x2x4"),
                                                              parse_shape("2x2x2"), parse_shape("1x2x2"),
                                                              parse_shape("1x1x2"), parse_shape("1x1x1")}) <=
              rack_fragmentation(dc, r, Policy::Baseline, {parse_shape("2x4x4"), parse_shape("2x2x4"),
                                                              parse_shape("2x2x2"), parse_shape("1x2x2"),
                                                              parse_shape("1x1x2"), parse_shape("1x1x1")}) + 1e-12);
    }
  }
  MESSAGE("states ", states, ": baseline accepted ", accepted_base, ", Morphlux also accepted ", accepted_extra,
          " that the baseline refused");
  CHECK(accepted_base > 0);
  CHECK(accepted_extra > 0);
}

TEST_CASE("morphlux falls back to the contiguous box when the fabric has no fibre for it") {
  // fibres = 1: a fabric layout of a 4x4x4 slice needs 4 fibres on some links; the native torus
  // links of an empty rack still carry it as a contiguous box.
  Datacenter dc(1, 1);
  Allocator mx({Policy::Morphlux, Solver::Heuristic, 100, 8});
  auto s = mx.place(dc, parse_shape("4x4x4"));
  REQUIRE(s.has_value());
  CHECK(s->kind == SliceKind::RackTorus);
  CHECK(s->decided_by == "torus-box");
  CHECK(check_slice(dc, *s) == "");
}

TEST_CASE("bandwidth, all-reduce model and blast radius") {
  Datacenter b(2, 4), m(2, 4);
  Allocator ab({Policy::Baseline, Solver::Heuristic}), am({Policy::Morphlux, Solver::Heuristic});
  auto sb = ab.place(b, parse_shape("1x1x4"));
  auto sm = am.place(m, parse_shape("1x1x4"));
  REQUIRE(sb);
  REQUIRE(sm);
  CHECK(slice_bandwidth(*sb) == doctest::Approx(1.0 / 3));  // one of three dimensions
  CHECK(slice_bandwidth(*sm) == doctest::Approx(1.0));      // the fabric lights all 6 ports
  CHECK(slice_bandwidth(*ab.place(b, parse_shape("4x4x4"))) == doctest::Approx(1.0));
  CHECK(slice_bandwidth(*ab.place(b, parse_shape("2x2x4"))) == doctest::Approx(4.0 / 6));
  Shape s = parse_shape("1x1x4");
  CHECK(allreduce_seconds(s, 1.0) < allreduce_seconds(s, 1.0 / 3));
  CHECK(allreduce_seconds(parse_shape("1x1x1"), 0.5) == 0.0);
  CHECK(step_seconds(s, 1.0 / 3) / step_seconds(s, 1.0) > 1.0);
  int gb = sb->chips[0], gm = sm->chips[0];
  b.commit(*sb);
  m.commit(*sm);
  CHECK(blast_radius(b, gb, Policy::Baseline) == 4);
  CHECK(blast_radius(m, gm, Policy::Morphlux) == 1);  // a free chip of the rack takes over
}

TEST_CASE("workload files: malformed rows are reported with file and line") {
  const std::string path = "alloc_test_bad_mix.csv";
  {
    std::ofstream f(path);
    f << "# slice id, topology, slice shape, slice size, duration (sec), probability (%)\n"
      << "0,T3D_NT,1x1x1,1,0,2.1\n"
      << "1,T3D_NT,1x2x2,5,0,6.7\n";
  }
  try {
    load_shape_mix(path);
    FAIL("no error");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find(path + ":3") != std::string::npos);
  }
  {
    std::ofstream f(path);
    f << "#job id,arrival time (sec),topology,shape,size,duration (sec)\n0,0.0,CLOS,1,abc,10\n";
  }
  CHECK_THROWS_WITH_AS(load_job_trace(path, 10), doctest::Contains("size 'abc'"), std::runtime_error);
  std::remove(path.c_str());
  auto mix = load_shape_mix(workload_path(kWorkloads, "tpu_job_size.csv"));
  double sum = 0;
  for (double w : mix.weight) sum += w;
  CHECK(sum == doctest::Approx(1.0));
  CHECK(mix.shapes.size() == 30);
  CHECK(load_job_trace(workload_path(kWorkloads, "philly_trace.csv"), 100).size() == 100);
  // The library does not look for the repository: without the folder it says what is missing.
  CHECK_THROWS_WITH_AS(workload_path("", "philly_trace.csv"), doctest::Contains("CommonOptions::workload_dir"),
                       std::invalid_argument);
}

TEST_CASE("experiments are reproducible for a seed and record it") {
  CommonOptions o;
  o.seed = 9;
  const std::vector<FillSpec> fills = {{BaselineMode::Aligned, {4}}, {BaselineMode::TorusFirstFit, {4, 8, 16, 32}}};
  auto a = experiment_fragmented32(4, 0.3, 4, 2, -1, fills, o);
  auto b = experiment_fragmented32(4, 0.3, 4, 2, -1, fills, o);
  CHECK(a == b);
  CHECK(a["seed"] == 9);
  REQUIRE(a["states"].size() == 2);
  for (const auto& st : a["states"]) {
    REQUIRE(st["policies"].size() == 4);
    for (const auto& p : st["policies"]) CHECK(p["invariants"]["ok"].get<bool>());
    // The per-rack free-chip histogram covers every rack of every trial.
    long racks = 0;
    for (const auto& [k, v] : st["rack_free_histogram"].items()) racks += v.get<long>();
    CHECK(racks == 4 * 2);
    // On the shared state the independent (first) probe is a superset test: each Morphlux mode
    // accepts whenever a baseline does (the torus-box fallback covers both baselines' boxes).
    double best_base = 0;
    for (const auto& p : st["policies"])
      if (p["policy"].get<std::string>().rfind("baseline", 0) == 0)
        best_base = std::max(best_base, p["first_probe_acceptance"].get<double>());
    for (const auto& p : st["policies"])
      if (p["policy"].get<std::string>().rfind("morphlux", 0) == 0)
        CHECK(p["first_probe_acceptance"].get<double>() >= best_base);
  }
  CHECK(a["goals"].size() == 2);
  o.workload_dir = kWorkloads;
  auto c = experiment_frag_tpuv4(8, 0.2, 2, o);
  REQUIRE(c["states"].size() == 2);
  // Per state: the state's own baseline comes first; Morphlux's index never exceeds it.
  std::map<std::string, double> base_worst;
  for (const auto& p : c["policies"]) {
    const std::string state = p["state"];
    if (!base_worst.count(state)) {
      CHECK(p["policy"] == "baseline(" + state + ")");
      base_worst[state] = p["worst_rack_fragmentation"]["mean"];
    } else if (p["policy"].get<std::string>().rfind("morphlux", 0) == 0) {
      CHECK(p["worst_rack_fragmentation"]["mean"].get<double>() <= base_worst[state] + 1e-12);
    }
  }
}

TEST_CASE("aligned baseline: canonical shapes at aligned origins only") {
  CHECK(aligned_shape(1) == parse_shape("2x2x1"));
  CHECK(aligned_shape(4) == parse_shape("2x2x1"));
  CHECK(aligned_shape(5) == parse_shape("2x2x2"));
  CHECK(aligned_shape(16) == parse_shape("2x2x4"));
  CHECK(aligned_shape(32) == parse_shape("2x4x4"));
  CHECK(aligned_shape(64) == parse_shape("4x4x4"));
  CHECK_THROWS_AS(aligned_shape(65), std::invalid_argument);
  // Positions in an empty rack: 16 servers for 4 chips, 2 half-racks for 32.
  for (auto [n, positions] : std::vector<std::pair<int, int>>{{4, 16}, {8, 8}, {16, 4}, {32, 2}, {64, 1}}) {
    Datacenter dc(1, 4);
    int placed = 0;
    while (auto s = aligned_place_in_rack(dc, 0, n)) {
      CHECK(check_slice(dc, *s) == "");
      CHECK(s->requested == n);
      dc.commit(std::move(*s));
      ++placed;
    }
    CHECK(placed == positions);
    CHECK(check_invariants(dc) == "");
  }
  // A 4-chip aligned slice is exactly one server.
  Datacenter dc(1, 4);
  auto s = aligned_place_in_rack(dc, 0, 4, 5);
  REQUIRE(s);
  std::set<int> servers;
  for (int g : s->chips) servers.insert(server_of_local(g % kChipsPerRack));
  CHECK(servers.size() == 1);
  // One used server in each x-half blocks both aligned 2x4x4 positions; torus first fit still
  // finds a z-slab (rotations, wrap-around) and Morphlux 8 free servers.
  Datacenter h(1, 4);
  h.commit(*aligned_place_in_rack(h, 0, 4, 0));   // server 0: x-half 0, z = 0
  h.commit(*aligned_place_in_rack(h, 0, 4, 3));   // server 3: x-half 1, z = 0
  CHECK_FALSE(aligned_place_in_rack(h, 0, 32).has_value());
  CHECK(baseline_place_in_rack(h, 0, parse_shape("2x4x4")).has_value());
  auto m = server_place_in_rack(h, 0, parse_shape("2x4x4"));
  REQUIRE(m);
  CHECK(check_slice(h, *m) == "");
  Allocator aligned({Policy::Baseline, Solver::Heuristic, 100, 8, BaselineMode::Aligned});
  CHECK_FALSE(aligned.place(h, parse_shape("2x4x4")).has_value());
  CHECK(allocator_label(AllocOptions{Policy::Baseline, Solver::Heuristic, 100, 8, BaselineMode::Aligned}) ==
        "baseline(aligned)");
}

TEST_CASE("contiguous slices hold the fibres of their native torus links") {
  Datacenter dc(1, 4);
  // 2x2x2 at z = 0..1 spans servers 0 and 4 (z neighbours): its z ring is 4 physical links.
  auto s = aligned_place_in_rack(dc, 0, 8, 0);
  REQUIRE(s);
  const int k = server_link(0, 4);
  REQUIRE(k >= 0);
  CHECK(std::count(s->torus_fibres.begin(), s->torus_fibres.end(), k) == 4);
  CHECK(s->torus_fibres.size() == 4);
  dc.commit(*s);
  CHECK(dc.link_residual(0, k) == 0);
  CHECK(check_invariants(dc) == "");
  // A slice inside one server holds none; a 4x4x4 holds every link's 4 fibres.
  CHECK(aligned_place_in_rack(dc, 0, 4)->torus_fibres.empty());
  Datacenter e(1, 4);
  auto cube = baseline_place_in_rack(e, 0, parse_shape("4x4x4"));
  REQUIRE(cube);
  CHECK(cube->torus_fibres.size() == static_cast<size_t>(4 * kLinksPerRack));
  // A slice that lies about its fibres is caught.
  Slice bad = *aligned_place_in_rack(e, 0, 8, 0);
  bad.torus_fibres.pop_back();
  CHECK(check_slice(e, bad) != "");
  // release gives them back.
  dc.release(0);
  CHECK(dc.link_residual(0, k) == 4);
}

TEST_CASE("morphlux at server granularity: whole free servers, multi-hop circuits, fibres per hop") {
  // Used servers everywhere but 0, 3, 12, 15 (not neighbours of each other except by hops).
  Datacenter dc(1, 4);
  for (int sv = 0; sv < kServersPerRack; ++sv) {
    if (sv == 0 || sv == 3 || sv == 9 || sv == 14) continue;
    dc.commit(*aligned_place_in_rack(dc, 0, 4, sv));
  }
  auto s = server_place_in_rack(dc, 0, parse_shape("2x2x4"));
  REQUIRE(s);
  CHECK(check_slice(dc, *s) == "");
  std::set<int> servers;
  for (int g : s->chips) servers.insert(server_of_local(g % kChipsPerRack));
  CHECK(servers == std::set<int>{0, 3, 9, 14});
  int multi = 0;
  for (const auto& c : s->circuits) {
    if (c.path.empty()) continue;
    int su = server_of_local(s->chips[c.u] % kChipsPerRack), sv = server_of_local(s->chips[c.v] % kChipsPerRack);
    CHECK(c.hops() >= server_distance(su, sv));
    multi += c.hops() > 1;
    CHECK(c.lanes >= 1);
  }
  CHECK(multi > 0);
  const int id = dc.commit(*s);
  CHECK(check_invariants(dc) == "");
  // Every hop of every circuit holds a fibre.
  std::map<int, int> held;
  for (const auto& c : dc.slice(id).circuits)
    for (int k : c.path) held[k]++;
  for (auto [k, n] : held) CHECK(dc.link_residual(0, k) == 4 - n);
  // With one fibre per link the same layout cannot route every circuit.
  Datacenter thin(1, 1);
  for (int sv = 0; sv < kServersPerRack; ++sv)
    if (sv != 0 && sv != 3 && sv != 9 && sv != 14) thin.commit(*aligned_place_in_rack(thin, 0, 4, sv));
  CHECK_FALSE(server_place_in_rack(thin, 0, parse_shape("2x2x4")).has_value());
  // Too few wholly free servers.
  CHECK_FALSE(server_place_in_rack(dc, 0, parse_shape("2x2x2")).has_value());
  // A slice of at most 4 chips goes into one server, best fit.
  Datacenter one(1, 4);
  one.commit(one_chip(local_chip(0, 0, 2)));
  auto small = server_place_in_rack(one, 0, parse_shape("1x1x3"));
  REQUIRE(small);
  for (int g : small->chips) CHECK(server_of_local(g % kChipsPerRack) == server_of_local(local_chip(0, 0, 2)));
  for (const auto& c : small->circuits) CHECK(c.path.empty());
}

TEST_CASE("morphlux server mode keeps its invariants on random churn and is a superset of both baselines") {
  for (int fibres : {1, 2, 4}) {
    std::mt19937_64 rng(500 + fibres);
    Datacenter dc(4, fibres);
    Allocator al({Policy::Morphlux, Solver::Heuristic, 100, 8, BaselineMode::TorusFirstFit, FabricMode::Server});
    churn(dc, al, rng, 300, kShapes);
    for (const auto& sh : kShapes) {
      Allocator mx({Policy::Morphlux, Solver::Heuristic, 100, 8, BaselineMode::TorusFirstFit, FabricMode::Server});
      Allocator tff({Policy::Baseline, Solver::Heuristic});
      Allocator al2({Policy::Baseline, Solver::Heuristic, 100, 8, BaselineMode::Aligned});
      bool m = mx.place(dc, sh).has_value();
      if (tff.place(dc, sh)) CHECK(m);
      if (sh.volume() <= kChipsPerRack && al2.place(dc, sh)) {
        // The aligned baseline rounds up to a canonical shape: its box is a torus-first-fit box.
        Allocator mx2({Policy::Morphlux, Solver::Heuristic, 100, 8, BaselineMode::TorusFirstFit, FabricMode::Server});
        CHECK(mx2.place(dc, aligned_shape(sh.volume())).has_value());
      }
    }
  }
}

TEST_CASE("the paper's fragmented-32 protocol: aligned fill of one-server slices") {
  // Qualitative, on fixed seeds: the aligned baseline rejects most 32-chip requests, Morphlux at
  // server granularity almost none, torus first fit in between (the figures are the command's).
  CommonOptions o;
  o.seed = 3;
  o.check = true;
  auto r = experiment_fragmented32(16, 0.3, 8, 4, 0, {{BaselineMode::Aligned, {4}}}, o);
  std::map<std::string, double> rej;
  for (const auto& p : r["states"][0]["policies"]) rej[p["policy"]] = p["rejected"];
  CHECK(rej.at("baseline(aligned)") > 0.4);
  CHECK(rej.at("morphlux(server)") < rej.at("baseline(aligned)"));
  CHECK(rej.at("baseline(torus-first-fit)") <= rej.at("baseline(aligned)"));
  CHECK(rej.at("morphlux(server)") <= rej.at("baseline(torus-first-fit)"));
  CHECK(r["closest_to_paper"] == "aligned 4");
  CHECK_THROWS_AS(parse_fill_mix("4/5"), std::invalid_argument);
  CHECK_THROWS_AS(parse_fill_mix("4/4"), std::invalid_argument);
  CHECK(parse_fill_mix("4/8/16/32") == std::vector<int>{4, 8, 16, 32});
}
