// The link pair under SystemC must be the same simulation as the plain loop, cycle for cycle:
// faults applied by the SystemC fault injector land on the same cycles as in the loop, and a
// seed gives the same run every time (lockstep determinism starts here).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "sim/link/link_pair.h"
#include "sim/link/link_pair_sc.h"
#include "sim/common/sc_runner.h"
#include "apps/mxtb/scenario.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace mxtb::sim;
using namespace mxtb::app;

namespace {
LinkPairConfig scenario() {
  // Faults of every kind at odd cycles, so a batch boundary that slipped by one would show.
  auto cfg = parse_link_pair_scenario(nlohmann::json::parse(R"({
    "name": "harness-equivalence", "seed": 5, "traffic_cycles": 60000,
    "lanes": {"both": {"latency_cycles": 9, "bit_offset": 3, "ber": 1e-5}},
    "faults": [{"at": 10001, "kind": "dark", "lane": "ab", "cycles": 333},
               {"at": 20003, "kind": "ber", "lane": "ba", "value": 5e-5},
               {"at": 30007, "kind": "retrain", "endpoint": "b"},
               {"at": 40009, "kind": "disable", "endpoint": "a"},
               {"at": 41011, "kind": "enable", "endpoint": "a"}]})"), "test");
  return cfg;
}

nlohmann::json run_loop(const LinkPairConfig& cfg) {
  LinkPair pair(cfg);
  pair.run();
  return to_json(pair.result());
}
}  // namespace

TEST_CASE("the same seed gives the same run, and SystemC batching changes nothing") {
  LinkPairConfig cfg = scenario();
  nlohmann::json loop1 = run_loop(cfg);
  nlohmann::json loop2 = run_loop(cfg);
  CHECK(loop1 == loop2);
  CHECK(loop1["passed"] == true);
  REQUIRE(loop1["transitions"].size() > 14);  // the faults really moved the link

  nlohmann::json sc;
  uint64_t batches = 0;
  int rc = run_under_systemc([&] {
    LinkPair pair(cfg, {}, /*apply_actions_itself=*/false);
    LinkPairSc harness("pair", pair, 1000);
    FaultInjector injector("faults", pair);
    sc_core::sc_start();
    sc = to_json(pair.result());
    batches = harness.batches();
    CHECK(injector.applied() == cfg.actions.size());
    return 0;
  });
  REQUIRE(rc == 0);
  CHECK(batches > 0);
  CHECK(batches < loop1["cycles"].get<uint64_t>() / 100);  // it really batched
  CHECK(sc == loop1);

  set_seed(cfg, 6);
  CHECK(run_loop(cfg) != loop1);  // and a different seed is a different run
}
