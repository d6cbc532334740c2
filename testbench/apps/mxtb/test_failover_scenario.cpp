#include "apps/mxtb/scenario.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

using namespace mxtb::sim;
using namespace mxtb::app;
using nlohmann::json;

namespace {
std::string error_of(const json& j) {
  try {
    parse_failover_scenario(j, "f.json");
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}
std::string file_error(const std::string& name) {
  std::string path = std::string(MXTB_SOURCE_DIR) + "/traces/scenarios/failover-bad/" + name;
  try {
    load_failover_scenario(path);
  } catch (const ScenarioError& e) {
    std::string msg = e.what();
    REQUIRE(msg.rfind(path + ": ", 0) == 0);  // names the file
    return msg.substr(path.size() + 2);
  }
  return "";
}
}  // namespace

TEST_CASE("failover scenario: the shipped default loads with what the issue describes") {
  FailoverScenario s = load_failover_scenario(std::string(MXTB_SOURCE_DIR) + "/traces/scenarios/failover-default.json");
  CHECK(s.name == "failover-default");
  CHECK(s.time_mode == "lockstep");
  CHECK(s.shape.xpus == 5);
  CHECK(s.shape.lanes_per_xpu == 4);
  CHECK(s.shape.mesh_ports == 32);
  CHECK(s.settle == SettlePreset::ThermoOptic);
  CHECK(s.tenant.xpu_of_position == std::vector<int>{0, 1, 2, 3});
  CHECK(s.spares == std::vector<int>{4});
  REQUIRE(s.failures.size() == 1);
  CHECK(s.failures[0].xpu == 2);
  REQUIRE(s.modeled.size() == 1);
  CHECK(s.modeled[0].name == "communicator_reinit");
  CHECK_FALSE(s.modeled[0].doc.empty());
  CHECK(s.failure_groups.at("power_domain").size() == 2);
  CHECK(s.state_bytes_per_xpu == 4294967296ull);
}

TEST_CASE("failover scenario: one conversion each into the emulator's and the failover job's configuration") {
  FailoverScenario s = load_failover_scenario(std::string(MXTB_SOURCE_DIR) + "/traces/scenarios/failover/host-disconnect.json");
  auto emu = emulator_config(s, "h.json", "cal.json");
  CHECK(emu.scenario == s.name);
  CHECK(emu.server.seed == s.seed);
  CHECK(emu.server.shape == s.shape);
  CHECK(emu.server.mesh.ports == s.shape.mesh_ports);
  CHECK(emu.server.mesh.settle == s.settle);
  CHECK(emu.server.clock_mhz == s.clock_mhz);
  CHECK(emu.server.traffic.max_words == s.traffic.max_words);
  CHECK(emu.settle_taus == s.settle_taus);
  CHECK(emu.time_mode == mxtb::emu::TimeMode::Lockstep);
  CHECK(emu.calibration_file == "cal.json");

  auto job = failover_run(s);
  CHECK(job.manager.shape == s.shape);
  CHECK(job.manager.tenant.xpu_of_position == s.tenant.xpu_of_position);
  CHECK(job.manager.spares == s.spares);
  CHECK(job.manager.armed_xpu == s.armed_xpu);
  CHECK(job.manager.watchdog_ns == static_cast<uint64_t>(s.watchdog_us * 1000));
  CHECK(!job.manager.decide_compute_ns);  // measured unless a replay gives it
  CHECK(job.manager.scenario == s.name);
  size_t groups = 0;
  for (const auto& [kind, list] : s.failure_groups) groups += list.size();
  CHECK(job.manager.groups.size() == groups);
  CHECK(job.failures.size() == s.failures.size());
  CHECK(job.host_disconnect == s.host_disconnect);
  CHECK(job.host_disconnect != HostDisconnect::None);
  CHECK(job.host_downtime_us == s.host_downtime_us);
  CHECK(job.failure_timeout_ns == 5'000'000);
  CHECK(job.manager.link_up_timeout_ns == 3'000'000);  // a thermo-optic mesh settles in 50 us

  // A MEMS mesh settles in 5 ms: the manager waits long enough for its circuits.
  FailoverScenario mems = parse_failover_scenario(json{{"settle", "mems"}}, "mems.json");
  CHECK(failover_run(mems).manager.link_up_timeout_ns >= 10'000'000);

  // A shape the emulator has no verilated models for is refused, naming the file.
  FailoverScenario wide = parse_failover_scenario(json{{"server", {{"xpus", 8}, {"mesh_ports", 64}}}}, "wide.json");
  CHECK_THROWS_WITH_AS(emulator_config(wide, "wide.json", "cal.json"), doctest::Contains("wide.json: $.server: "),
                       ScenarioError);
}

TEST_CASE("failover scenario: defaults, and a round trip through to_json") {
  FailoverScenario d = parse_failover_scenario(json::object(), "f.json");
  CHECK(d.time_mode == "lockstep");
  CHECK(d.failures.size() == 1);
  CHECK(d.expect_total_ns_max == 0);
  CHECK(d.expect_swap_relaunch_ns_max == 1.2e9);
  CHECK(d.state_projected_lane_gbps == 100);
  FailoverScenario r = random_failover_scenario(11);
  FailoverScenario back = parse_failover_scenario(to_json(r), "round trip");
  CHECK(to_json(back) == to_json(r));
}

TEST_CASE("failover scenario: the IPbus target is the scenario's when it names one") {
  CHECK_FALSE(parse_failover_scenario(json::object(), "f.json").ipbus_target.has_value());
  CHECK_FALSE(to_json(parse_failover_scenario(json::object(), "f.json")).contains("ipbus_target"));
  FailoverScenario cpp = parse_failover_scenario(json{{"ipbus_target", "cpp"}}, "f.json");
  REQUIRE(cpp.ipbus_target.has_value());
  CHECK(*cpp.ipbus_target == "cpp");
  CHECK(to_json(cpp).at("ipbus_target") == "cpp");
  CHECK(parse_failover_scenario(to_json(cpp), "round trip").ipbus_target == cpp.ipbus_target);
  CHECK(error_of(json{{"ipbus_target", "vhdl"}}) == "f.json: $.ipbus_target: \"vhdl\" is not one of rtl, cpp");
}

TEST_CASE("failover scenario: bad input names the file, the JSON path and the problem") {
  CHECK(error_of(json{{"setle", "mems"}}) == "f.json: $.setle: unknown field");
  CHECK(error_of(json{{"time_mode", "fast"}}) == "f.json: $.time_mode: \"fast\" is not one of lockstep, paced, free");
  CHECK(error_of(json{{"tenant", {{"xpus", {0, 1, 2}}}}}) == "f.json: $.tenant.xpus: a 2x2 torus needs 4 XPUs, got 3");
  CHECK(error_of(json{{"tenant", {{"xpus", {0, 1, 1, 3}}}}}) == "f.json: $.tenant.xpus[2]: XPU 1 is listed twice");
  CHECK(error_of(json{{"spares", {7}}}) == "f.json: $.spares[0]: must be an XPU number in [0, 4], got 7");
  CHECK(error_of(json{{"failures", {{{"at_us", 5}}}}}) == "f.json: $.failures[0].xpu: missing (the XPU that dies)");
  CHECK(error_of(json{{"failures", {{{"xpu", 2}}, {{"xpu", 2}}}}}) ==
        "f.json: $.failures[1].xpu: XPU 2 already fails in an earlier entry");
  CHECK(error_of(json{{"failure_groups", {{"power_domain", {{0, 1}, {1, 2}}}}}}) ==
        "f.json: $.failure_groups.power_domain[1]: XPU 1 is already in power_domain[0]: a power_domain holds each XPU at most once");
  CHECK(error_of(json{{"lane_faults", {{{"link", 20}, {"ber", 1e-6}}}}}) ==
        "f.json: $.lane_faults[0].link: must be in [0, 19], got 20");
  CHECK(error_of(json{{"lane_faults", {{{"link", 3}}}}}) == "f.json: $.lane_faults[0]: does nothing: give ber, dark_us and/or swap_with");
  CHECK(error_of(json{{"lane_faults", {{{"link", 3}, {"swap_with", 3}}}}}) ==
        "f.json: $.lane_faults[0].swap_with: a link cannot swap with itself");
  CHECK(error_of(json{{"armed_xpu", 4}}) == "f.json: $.armed_xpu: XPU 4 is not one of the tenant's XPUs");
  CHECK(error_of(json{{"host_disconnect", {{"at", "mid_commit"}, {"downtime_us", 100}}}}) ==
        "f.json: $.host_disconnect.downtime_us: 100 us does not outlast the watchdog (200 us): nothing would happen");
  CHECK(error_of(json{{"host_disconnect", {{"at", "later"}}}}) ==
        "f.json: $.host_disconnect.at: \"later\" is not one of before_commit, mid_commit, after_commit");
  CHECK(error_of(json{{"modeled", {{{"name", "settle"}, {"duration_ms", 1}, {"doc", "x"}}}}}) ==
        "f.json: $.modeled[0].name: \"settle\" is an emulated phase's name");
  CHECK(error_of(json{{"modeled", {{{"name", "x"}, {"doc", "y"}}}}}) ==
        "f.json: $.modeled[0].duration_ms: missing (the phase's modeled duration)");
  CHECK(error_of(json{{"server", {{"xpus", 9}}}}) == "f.json: $.server.mesh_ports: 9 XPUs x 4 lanes need at least 36 ports, got 32");
  CHECK(error_of(json{{"state_restore", {{"copy_gbytes_per_s", 0}}}}) ==
        "f.json: $.state_restore.copy_gbytes_per_s: must be in [0.1, 10000], got 0");
  // One lane rate: the emulated link layer's, from the clock; a faster SerDes only as the projection.
  CHECK(error_of(json{{"state_restore", {{"lane_gbps", 100}}}}) ==
        "f.json: $.state_restore.lane_gbps: the lanes' rate is the emulated link layer's, 64 bits a cycle of clock_mhz "
        "(10 Gb/s at 156.25 MHz), and is not set here; a faster SerDes is a projection: state_restore.projected_lane_gbps");
  CHECK(error_of(json{{"state_restore", {{"projected_lane_gbps", -1}}}}) ==
        "f.json: $.state_restore.projected_lane_gbps: must be in [0, 100000], got -1");
  // The files in traces/scenarios/failover-bad/.
  CHECK(file_error("spare-in-tenant.json") == "$.spares[1]: XPU 3 is one of the tenant's XPUs");
  CHECK(file_error("modeled-without-doc.json") ==
        "$.modeled[0].doc: missing: a modeled constant must say where its value comes from");
  CHECK(file_error("unknown-preset.json") == "$.settle: \"thermo-optic\" is not one of thermo_optic, electro_optic, mems");
  CHECK(file_error("failure-not-in-tenant.json") == "$.failures[0].xpu: XPU 5 is neither the tenant's nor a spare");
}

TEST_CASE("failover scenario: random scenarios are valid, deterministic per seed, and vary") {
  std::set<int> xpus;
  std::set<std::string> presets;
  int doubles = 0, disconnects = 0, neighbours_soon = 0, diagonal_at_once = 0, dark_at_death = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    FailoverScenario s = random_failover_scenario(seed);
    CHECK(to_json(s) == to_json(random_failover_scenario(seed)));
    CHECK(s.seed == seed);
    xpus.insert(s.failures[0].xpu);
    presets.insert(to_string(s.settle));
    doubles += s.failures.size() > 1;
    disconnects += s.host_disconnect != HostDisconnect::None;
    // A tenant lane dark as the first XPU dies (regress seed 9178).
    bool dark = false;
    for (const auto& f : s.lane_faults)
      dark |= f.link < 16 && f.dark_us > 0 && f.dark_from_us <= s.failures[0].at_us &&
              s.failures[0].at_us < f.dark_from_us + f.dark_us;
    dark_at_death += dark;
    if (s.failures.size() > 1) {
      // The class regressions must hit often: a torus neighbour dies within 60 us of the first.
      const auto& at = s.tenant.xpu_of_position;
      auto pos = [&](int x) { return static_cast<size_t>(std::find(at.begin(), at.end(), x) - at.begin()); };
      size_t apart = pos(s.failures[0].xpu) ^ pos(s.failures[1].xpu);
      double gap = s.failures[1].at_us - s.failures[0].at_us;
      neighbours_soon += (apart == 1 || apart == 2) && gap > 0 && gap <= 60;
      // And two at once across the diagonal: no XPU keeps an Active link (the counts tie).
      diagonal_at_once += apart == 3 && gap == 0;
    }
  }
  CHECK(xpus.size() == 4);
  CHECK(presets == std::set<std::string>{"electro_optic", "thermo_optic"});
  CHECK(doubles > 5);
  CHECK(neighbours_soon >= 20);
  CHECK(diagonal_at_once >= 3);
  CHECK(dark_at_death >= 10);
  CHECK(disconnects > 5);
}

TEST_CASE("failover scenario: a job of collectives reaches the emulator (its XPUs) and the manager (its spec)") {
  json j{{"tenant", {{"dim_x", 2}, {"dim_y", 2}, {"xpus", {3, 0, 2, 1}}}},
         {"armed_xpu", 3},
         {"collective", {{"op", "alltoall"}, {"type", "bfloat16"}, {"bytes", 32768}, {"link_loss_us", 10}, {"gap_us", 1}}}};
  FailoverScenario s = parse_failover_scenario(j, "c.json");
  REQUIRE(s.collective);
  auto emu = emulator_config(s, "c.json", "cal.json");
  CHECK(emu.job.xpus == std::vector<int>{3, 0, 2, 1, 4});  // the tenant's and the spare
  CHECK(emu.job.link_loss_cycles == 1563);                 // 10 us at 156.25 MHz
  CHECK(emu.job.gap_cycles == 157);
  auto fj = failover_run(s);
  REQUIRE(fj.manager.job);
  CHECK(fj.manager.job->spec.op == mxtb::emu::JobOp::AllToAll);
  CHECK(fj.manager.job->spec.type == mxtb::emu::JobType::Bfloat16);
  CHECK(fj.manager.job->spec.bytes == 32768);
  CHECK(to_json(parse_failover_scenario(to_json(s), "round trip")) == to_json(s));
  // Without one, the XPUs run random traffic.
  FailoverScenario plain = parse_failover_scenario(json::object(), "p.json");
  CHECK(emulator_config(plain, "p.json", "cal.json").job.xpus.empty());
  CHECK(!failover_run(plain).manager.job);

  CHECK(error_of(json{{"collective", {{"op", "broadcast"}}}}) ==
        "f.json: $.collective.op: \"broadcast\" is not one of all_reduce, reduce_scatter, all_gather, alltoall");
  CHECK(error_of(json{{"collective", {{"type", "half"}}}}) == "f.json: $.collective.type: \"half\" is not one of float, bfloat16");
  CHECK(error_of(json{{"collective", {{"bytes", 100}}}}) ==
        "f.json: $.collective.bytes: 100 bytes per rank is too small for 4 ranks: at least 256 bytes");
  CHECK(error_of(json{{"collective", {{"bytes", 0}}}}) == "f.json: $.collective.bytes: must be in [1, 67108864], got 0");
  CHECK(error_of(json{{"collective", {{"ops", "all_reduce"}}}}) == "f.json: $.collective.ops: unknown field");

  // A replayed host charge reaches the manager and survives the scenario's round trip; a bad one is named.
  FailoverScenario replay = parse_failover_scenario(json{{"host_decide_ns", 12345}}, "r.json");
  CHECK(failover_run(replay).manager.decide_compute_ns == std::optional<uint64_t>(12345));
  CHECK(parse_failover_scenario(to_json(replay), "r2.json").host_decide_ns == std::optional<uint64_t>(12345));
  CHECK(error_of(json{{"host_decide_ns", 0}}) == "f.json: $.host_decide_ns: must be in [1, 100000000], got 0");
  CHECK(error_of(json{{"host_decide_ns", 1.5}}) == "f.json: $.host_decide_ns: must be a non-negative integer, got 1.5");
  CHECK(file_error("collective-odd-torus.json") ==
        "$.collective: the tenant has no ring to run it on: no ring order for a 3 x 3 torus (both dimensions odd)");

  // Every random seed runs one, of every op and both types.
  int with = 0;
  std::set<std::string> ops, types;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    FailoverScenario r = random_failover_scenario(seed);
    if (!r.collective) continue;
    ++with;
    ops.insert(to_string(r.collective->op));
    types.insert(to_string(r.collective->type));
    CHECK(r.collective->bytes >= 4096);
    CHECK(r.collective->bytes <= 256 * 1024);
  }
  CHECK(with == 200);
  CHECK(ops.size() == 4);
  CHECK(types.size() == 2);
}

