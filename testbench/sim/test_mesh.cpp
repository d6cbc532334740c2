#include "mesh_check.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>

using namespace mxtb;
using nlohmann::json;
using sim::Verdict;

namespace {

constexpr double kHalfPi = 1.57079632679489661923;
const std::string kShippedCalibration = std::string(MXTB_SOURCE_DIR) + "/traces/calibration/mesh32.json";

std::vector<int> identity(int ports) {
  std::vector<int> p(static_cast<size_t>(ports));
  std::iota(p.begin(), p.end(), 0);
  return p;
}

std::string calibration_error(const json& j) {
  try {
    sim::parse_calibration(j, "t.json");
  } catch (const sim::MeshError& e) {
    return e.what();
  }
  return "";
}

json four_port_file() {
  json elements = json::array();
  for (int e = 0; e < 6; ++e) elements.push_back({{"element", e}, {"bar_code", 800 + e}, {"cross_code", 2600 - e}});
  return json{{"ports", 4}, {"dac_bits", 12}, {"elements", elements}};
}

}  // namespace

TEST_CASE("settle presets") {
  CHECK(sim::preset_tau_ns(sim::SettlePreset::ThermoOptic) == 10e3);
  CHECK(sim::preset_tau_ns(sim::SettlePreset::ElectroOptic) == 1.0);
  CHECK(sim::preset_tau_ns(sim::SettlePreset::Mems) == 1e6);
  CHECK(sim::settle_preset_from_string("mems") == sim::SettlePreset::Mems);
  CHECK_FALSE(sim::settle_preset_from_string("thermal"));
  sim::MeshConfig c;
  c.ports = 4;
  c.tau_ns = 250.0;
  CHECK(sim::PhotonicMesh(c).tau_ns() == 250.0);
}

TEST_CASE("switching one element: not settled early, 63% at tau, garbled while switching, lit after") {
  sim::MeshConfig c;
  c.ports = 8;  // thermo-optic by default: tau = 10 us
  sim::PhotonicMesh mesh(c);
  const double tau = mesh.tau_ns();
  REQUIRE(tau == 10e3);
  const auto& table = mesh.true_codes();
  double now = 0;
  REQUIRE(testing::realize_and_check(mesh, identity(8), table, now) == "");
  REQUIRE(mesh.settled(now, 1e-6));

  // Flip the first-stage element that inputs 0 and 1 enter: they swap outputs.
  const int element = 0;
  const double t0 = now;
  const double from = mesh.phase_rad(element, t0);
  mesh.write_dac(element, table[element].cross_code, t0);
  const double to = mesh.target_phase_rad(element);
  CHECK(to == doctest::Approx(kHalfPi));
  CHECK_FALSE(mesh.settled(t0 + 0.1 * tau, 1e-3));
  CHECK_FALSE(mesh.settled(t0 + 5 * tau, 1e-3));  // exp(-5) * pi/2 = 0.011 rad still
  CHECK((mesh.phase_rad(element, t0 + tau) - from) / (to - from) == doctest::Approx(1 - std::exp(-1.0)).epsilon(1e-9));

  const double tolerance = 1e-3;
  const double settle_at = mesh.settled_at_ns(tolerance);
  CHECK(settle_at == doctest::Approx(t0 + tau * std::log(kHalfPi / tolerance)));
  CHECK(mesh.time_to_settle_ns(t0, tolerance) == doctest::Approx(settle_at - t0));
  CHECK_FALSE(mesh.settled(settle_at - 1, tolerance));
  CHECK(mesh.settled(settle_at + 1, tolerance));

  // Which outputs inputs 0 and 1 reach before and after, by the router's own trace.
  std::vector<firmware::ElementState> states = firmware::route(mesh.topology(), identity(8)).value();
  const int out0_before = mesh.topology().trace(states, 0);
  states[element] = firmware::ElementState::Cross;
  const int out0_after = mesh.topology().trace(states, 0);
  CHECK(out0_after != out0_before);

  // Halfway (theta = pi/4 at t0 + tau ln 2) both signals split evenly: garbled.
  const auto mid = mesh.propagate(t0 + tau * std::log(2.0));
  CHECK(mid.outputs[static_cast<size_t>(out0_before)].verdict == Verdict::Garbled);
  CHECK(mid.outputs[static_cast<size_t>(out0_after)].verdict == Verdict::Garbled);
  // With input 1's laser off, input 0's old output goes dark once most of the light has left.
  mesh.set_input_lit(1, false);
  CHECK(mesh.propagate(t0 + 3 * tau).outputs[static_cast<size_t>(out0_before)].verdict == Verdict::Dark);
  mesh.set_input_lit(1, true);

  const auto after = mesh.propagate(settle_at + 1);
  CHECK(after.outputs[static_cast<size_t>(out0_after)].verdict == Verdict::Lit);
  CHECK(after.outputs[static_cast<size_t>(out0_after)].dominant_input == 0);
  CHECK(after.outputs[static_cast<size_t>(out0_before)].dominant_input == 1);
  for (const auto& r : after.outputs) CHECK(r.verdict == Verdict::Lit);
}

TEST_CASE("electro-optic elements settle in nanoseconds, MEMS in milliseconds") {
  for (auto [preset, tau] : {std::pair{sim::SettlePreset::ElectroOptic, 1.0}, std::pair{sim::SettlePreset::Mems, 1e6}}) {
    sim::MeshConfig c;
    c.ports = 4;
    c.settle = preset;
    sim::PhotonicMesh mesh(c);
    mesh.write_dac(3, mesh.true_codes()[3].cross_code, 100.0);
    const double expected = 100.0 + tau * std::log(std::abs(mesh.target_phase_rad(3) - mesh.phase_of_code(3, 0)) / 1e-3);
    CHECK(mesh.settled_at_ns(1e-3) == doctest::Approx(expected));
  }
}

TEST_CASE("nominal codes leave outputs garbled; the calibration file makes all lit") {
  sim::PhotonicMesh mesh(sim::MeshConfig{});  // 32 ports, default seed: the shipped file's mesh
  const sim::MeshCalibration cal = sim::load_calibration(kShippedCalibration);
  const auto nominal = firmware::nominal_calibration(mesh.elements());
  std::mt19937_64 rng(3);
  double now = 0;
  int garbled_nominal = 0;
  for (int round = 0; round < 20; ++round) {
    std::vector<int> perm = identity(32);
    std::shuffle(perm.begin(), perm.end(), rng);
    CHECK(testing::realize_and_check(mesh, perm, cal.elements, now) == "");
    CHECK(testing::realize_and_check(mesh, perm, nominal, now) != "");
    for (const auto& r : mesh.propagate(now).outputs) garbled_nominal += r.verdict == Verdict::Garbled;
  }
  MESSAGE("outputs garbled with nominal codes: " << garbled_nominal << " of " << 20 * 32);
  CHECK(garbled_nominal > 20);
}

TEST_CASE("the shipped calibration file holds the default seed's element codes") {
  const sim::MeshCalibration cal = sim::load_calibration(kShippedCalibration);
  CHECK(cal.ports == 32);
  CHECK(cal.elements == sim::draw_true_codes(32, sim::MeshConfig{}.seed));
  // Elements differ: that is why there is a file.
  CHECK(cal.elements[0] != cal.elements[1]);
}

TEST_CASE("calibration files: round trip and named errors") {
  const sim::MeshCalibration cal = sim::parse_calibration(four_port_file(), "t.json");
  CHECK(cal.ports == 4);
  CHECK(cal.elements[5].bar_code == 805);
  CHECK(sim::parse_calibration(json::parse(sim::calibration_to_text(cal, "x")), "u.json").elements == cal.elements);

  json j = four_port_file();
  j["elements"][0].erase("cross_code");
  CHECK(calibration_error(j) == "t.json: $.elements[0].cross_code: missing");
  j = four_port_file();
  j["elements"][1]["bar_code"] = 4096;
  CHECK(calibration_error(j) == "t.json: $.elements[1].bar_code: must be in [0, 4095], got 4096");
  j = four_port_file();
  j["elements"][2]["cross_code"] = -1;
  CHECK(calibration_error(j) == "t.json: $.elements[2].cross_code: must be in [0, 4095], got -1");
  j = four_port_file();
  j["elements"].erase(5);
  CHECK(calibration_error(j) == "t.json: $.elements: has 5 entries, a 4-port mesh has 6 elements");
  j = four_port_file();
  j.erase("elements");
  CHECK(calibration_error(j) == "t.json: $.elements: missing");
  j = four_port_file();
  j["ports"] = 12;
  CHECK(calibration_error(j) == "t.json: $.ports: port count 12 is not a power of two");
  j = four_port_file();
  j["dac_bits"] = 10;
  CHECK(calibration_error(j) == "t.json: $.dac_bits: must be in [12, 12], got 10");
  j = four_port_file();
  j["elements"][3]["element"] = 4;
  CHECK(calibration_error(j) == "t.json: $.elements[3].element: must be in [3, 3], got 4");
  j = four_port_file();
  j["elements"][3]["bar"] = 4;
  CHECK(calibration_error(j) == "t.json: $.elements[3].bar: unknown field");
  j = four_port_file();
  j["elements"][4]["bar_code"] = 2596;
  CHECK(calibration_error(j) == "t.json: $.elements[4]: bar_code and cross_code must differ");

  CHECK_THROWS_WITH_AS(sim::load_calibration("no/such/file.json"), "no/such/file.json: cannot open calibration file",
                       sim::MeshError);
  const std::string broken = "mesh-test-broken.json";
  std::ofstream(broken) << "{\"ports\": 4,";
  CHECK_THROWS_AS(sim::load_calibration(broken), sim::MeshError);
  std::remove(broken.c_str());

  // The firmware's own check of a table it is handed.
  CHECK(firmware::check_calibration(6, cal.elements) == "");
  CHECK(firmware::check_calibration(7, cal.elements) == "calibration table has 6 elements, the mesh has 7");
  auto bad = cal.elements;
  bad[2].cross_code = 5000;
  CHECK(firmware::check_calibration(6, bad) ==
        "calibration of element 2: code out of the 12-bit DAC range (bar 802, cross 5000)");
  CHECK_FALSE(firmware::dac_codes(std::vector<firmware::ElementState>(6), bad));
  auto codes = firmware::dac_codes({firmware::ElementState::Bar, firmware::ElementState::Cross,
                                    firmware::ElementState::Bar, firmware::ElementState::Bar,
                                    firmware::ElementState::Bar, firmware::ElementState::Cross},
                                   cal.elements);
  REQUIRE(codes);
  CHECK(codes.value() == std::vector<uint16_t>{800, 2599, 802, 803, 804, 2595});
}

TEST_CASE("monitor photodiode and its code") {
  sim::PhotonicMesh mesh(sim::MeshConfig{});
  double now = 0;
  std::vector<int> perm = identity(32);
  perm[5] = firmware::kUnused;
  perm[6] = 5;
  perm[7] = firmware::kUnused;
  mesh.set_input_lit(5, false);
  mesh.set_input_lit(7, false);
  REQUIRE(testing::realize_and_check(mesh, perm, mesh.true_codes(), now) == "");
  // A lit output: the laser less 9 elements' insertion loss, a little less what leaks away.
  CHECK(mesh.monitor_dbm(5, now) == doctest::Approx(-9 * 0.15).epsilon(0.03));
  CHECK(mesh.monitor_code(5, now) == sim::monitor_code_from_dbm(mesh.monitor_dbm(5, now)));
  CHECK(mesh.monitor_code(5, now) / 100.0 == doctest::Approx(-1.35).epsilon(0.03));
  // An output whose input is dark sees only the other paths' leaks (about -22 dBm): dark.
  const auto light = mesh.propagate(now);
  int dark_outputs = 0;
  for (const auto& r : light.outputs)
    if (r.verdict == Verdict::Dark) {
      ++dark_outputs;
      CHECK(r.total_dbm < sim::MeshConfig{}.sensitivity_dbm);
    }
  CHECK(dark_outputs == 2);
  CHECK(sim::monitor_code_from_dbm(-1.354) == -135);
  CHECK(sim::monitor_code_from_dbm(-400.0) == INT16_MIN);
  CHECK(sim::monitor_code_from_dbm(-HUGE_VAL) == INT16_MIN);
  CHECK(sim::monitor_code_from_dbm(400.0) == INT16_MAX);
  CHECK(std::isinf(sim::dbm_from_monitor_code(INT16_MIN)));
  CHECK(sim::dbm_from_monitor_code(-135) == doctest::Approx(-1.35));
}

TEST_CASE("light from a fibre: its power and the crosstalk it brings count at the far receiver") {
  sim::PhotonicMesh mesh(sim::MeshConfig{});
  double now = 0;
  std::vector<int> perm = identity(32);
  REQUIRE(testing::realize_and_check(mesh, perm, mesh.true_codes(), now) == "");
  // Only input 25 is lit, so every watt of crosstalk at output 25 is what the fibre brings.
  for (int p = 0; p < 32; ++p)
    if (p != 25) mesh.set_input_lit(p, false);
  const auto lasers = mesh.propagate(now).outputs[25];
  REQUIRE(lasers.verdict == Verdict::Lit);
  // Input 25 fed from a fibre 6 dB below the laser: the output drops 6 dB, still lit.
  mesh.set_input_light(25, -6.0, -std::numeric_limits<double>::infinity());
  const auto weak = mesh.propagate(now).outputs[25];
  CHECK(weak.dominant_input == 25);
  CHECK(weak.signal_dbm == doctest::Approx(lasers.signal_dbm - 6.0).epsilon(1e-9));
  CHECK(weak.verdict == Verdict::Lit);
  // Crosstalk that came with it travels with it: 15 dB below its signal leaves too little margin
  // (the limit is 20 dB) and the output is garbled, though no other input here adds any.
  mesh.set_input_light(25, -6.0, -21.0);
  const auto mixed = mesh.propagate(now).outputs[25];
  CHECK(mixed.dominant_input == 25);
  CHECK(mixed.sxr_db < 16.0);
  CHECK(mixed.verdict == Verdict::Garbled);
  CHECK(mixed.total_dbm > weak.total_dbm);
  // Below the receiver's sensitivity: dark; no light at all: the input is unlit.
  mesh.set_input_light(25, -30.0, -std::numeric_limits<double>::infinity());
  CHECK(mesh.propagate(now).outputs[25].verdict == Verdict::Dark);
  mesh.set_input_light(25, -std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity());
  CHECK_FALSE(mesh.input_lit(25));
  // A laser again: exactly the laser's light, nothing carried.
  mesh.set_input_lit(25, true);
  CHECK(mesh.propagate(now).outputs[25].signal_dbm == lasers.signal_dbm);
  CHECK(mesh.propagate(now).outputs[25].crosstalk_dbm == lasers.crosstalk_dbm);
  CHECK_THROWS_AS(mesh.set_input_light(25, std::nan(""), 0), sim::MeshError);
}

TEST_CASE("blocks through an output: lit carries the word, garbled noise, dark no signal") {
  std::mt19937_64 rng(1);
  const sim::Raw66 word = sim::Raw66::block(1, 0x0123456789ABCDEFull);
  auto lit = sim::receive_block(Verdict::Lit, word, rng);
  CHECK(lit.signal_detect);
  CHECK(lit.raw == word);
  auto garbled = sim::receive_block(Verdict::Garbled, word, rng);
  CHECK(garbled.signal_detect);
  CHECK(garbled.raw != word);
  CHECK(garbled.raw.hi < 4);
  auto dark = sim::receive_block(Verdict::Dark, word, rng);
  CHECK_FALSE(dark.signal_detect);
}

TEST_CASE("elements differ, and the same seed gives the same mesh") {
  const auto a = sim::draw_true_codes(32, 1), b = sim::draw_true_codes(32, 1), c = sim::draw_true_codes(32, 2);
  CHECK(a == b);
  CHECK(a != c);
  for (const auto& e : a) {
    CHECK(e.bar_code >= 740);
    CHECK(e.bar_code <= 860);
    CHECK(e.cross_code >= 2450);
    CHECK(e.cross_code <= 2750);
  }
}

TEST_CASE("bad mesh use is rejected with named errors") {
  sim::MeshConfig c;
  c.ports = 4;
  sim::PhotonicMesh mesh(c);
  CHECK_THROWS_WITH_AS(mesh.write_dac(6, 100, 0), "mesh: element 6 does not exist (0..5)", sim::MeshError);
  CHECK_THROWS_WITH_AS(mesh.write_dac(0, 4096, 0), "mesh: element 0: DAC code 4096 exceeds 12 bits", sim::MeshError);
  CHECK_THROWS_WITH_AS(mesh.set_input_lit(4, false), "mesh: port 4 does not exist (0..3)", sim::MeshError);
  c.true_codes.resize(5);
  CHECK_THROWS_WITH_AS(sim::PhotonicMesh{c}, "mesh: 5 true codes given, a 4-port mesh has 6 elements", sim::MeshError);
}
