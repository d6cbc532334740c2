#include "apps/mxtb/scenario.h"

#include "protocol/rack_map.h"
#include "host/failover/rack_tenants.h"
#include "sim/collective/tenant_job.h"
#include "sim/common/json_file.h"
#include "sim/server/server_sim.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <set>

namespace mxtb::app {

using namespace mxtb::sim;  // the link pair's and the emulator's configuration types

using nlohmann::json;

namespace {

// Field access that names the file and the JSON path in every error, and rejects unknown keys
// (a misspelt key silently ignored is a scenario that does not test what it says).
class Fields {
 public:
  Fields(const json& j, std::string source, std::string path)
      : j_(j), source_(std::move(source)), path_(std::move(path)) {
    if (!j_.is_object()) fail("", "must be an object");
  }

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    std::string where = key.empty() ? path_ : path_ + "." + key;
    throw ScenarioError(fmt::format("{}: {}: {}", source_, where, what));
  }

  bool has(const char* key) {
    seen_.insert(key);
    return j_.contains(key);
  }

  template <class T>
  T uint(const char* key, T def, T min = 0, T max = std::numeric_limits<T>::max()) {
    if (!has(key)) return def;
    const json& v = j_.at(key);
    if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0))
      fail(key, fmt::format("must be a non-negative integer, got {}", v.dump()));
    uint64_t x = v.get<uint64_t>();
    if (x < min || x > max) fail(key, fmt::format("must be in [{}, {}], got {}", min, max, x));
    return static_cast<T>(x);
  }

  int small_int(const char* key, int def, int min, int max) {
    return static_cast<int>(uint<uint32_t>(key, static_cast<uint32_t>(def), static_cast<uint32_t>(min), static_cast<uint32_t>(max)));
  }

  double real(const char* key, double def, double min, double max) {
    if (!has(key)) return def;
    const json& v = j_.at(key);
    if (!v.is_number()) fail(key, fmt::format("must be a number, got {}", v.dump()));
    double x = v.get<double>();
    if (!(x >= min && x <= max)) fail(key, fmt::format("must be in [{}, {}], got {}", min, max, x));
    return x;
  }

  bool boolean(const char* key, bool def) {
    if (!has(key)) return def;
    if (!j_.at(key).is_boolean()) fail(key, fmt::format("must be true or false, got {}", j_.at(key).dump()));
    return j_.at(key).get<bool>();
  }

  std::string str(const char* key, const std::string& def) {
    if (!has(key)) return def;
    if (!j_.at(key).is_string()) fail(key, fmt::format("must be a string, got {}", j_.at(key).dump()));
    return j_.at(key).get<std::string>();
  }

  std::string choice(const char* key, const std::string& def, std::initializer_list<const char*> options) {
    std::string s = str(key, def);
    for (const char* o : options)
      if (s == o) return s;
    std::string list;
    for (const char* o : options) list += fmt::format("{}{}", list.empty() ? "" : ", ", o);
    fail(key, fmt::format("\"{}\" is not one of {}", s, list));
  }

  Fields sub(const char* key) {
    seen_.insert(key);
    return Fields(j_.at(key), source_, path_ + "." + key);
  }

  const json& raw(const char* key) {
    seen_.insert(key);
    return j_.at(key);
  }

  std::string path(const std::string& key) const { return path_ + "." + key; }
  const std::string& source() const { return source_; }

  void finish() const {
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (!seen_.count(it.key())) fail(it.key(), "unknown field");
  }

 private:
  const json& j_;
  std::string source_, path_;
  std::set<std::string> seen_;
};

template <class Enum>
Enum parse_enum(Fields& f, const char* key, std::optional<Enum> (*from)(uint64_t), int count) {
  std::string name = f.str(key, "");
  for (int i = 0; i < 256 && count > 0; ++i) {
    if (auto v = from(static_cast<uint64_t>(i))) {
      --count;
      if (link::to_string(*v) == name) return *v;
    }
  }
  f.fail(key, fmt::format("\"{}\" is not a known name", name));
}

EndpointIdentity parse_identity(Fields f, EndpointIdentity def) {
  EndpointIdentity id{f.uint<uint16_t>("xpu", def.xpu), f.uint<uint8_t>("lane", def.lane)};
  f.finish();
  return id;
}

LaneChannelConfig parse_lane(Fields f, LaneChannelConfig c) {
  c.latency_cycles = f.uint<uint32_t>("latency_cycles", c.latency_cycles, 1, 1u << 20);
  c.bit_offset = f.uint<uint32_t>("bit_offset", c.bit_offset, 0, 65);
  c.ber = f.real("ber", c.ber, 0.0, 0.01);
  c.erasure_rate = f.real("erasure_rate", c.erasure_rate, 0.0, 0.1);
  f.finish();
  return c;
}

TrafficConfig parse_traffic(Fields f, TrafficConfig t) {
  t.load = f.real("load", t.load, 0.0, 1.0);
  t.min_words = f.uint<uint32_t>("min_words", t.min_words, 1, 4096);
  t.max_words = f.uint<uint32_t>("max_words", t.max_words, 1, 4096);
  if (t.max_words < t.min_words) f.fail("max_words", fmt::format("must be >= min_words ({})", t.min_words));
  t.rx_ready = f.real("rx_ready", t.rx_ready, 0.01, 1.0);
  t.max_messages = f.uint<uint64_t>("max_messages", t.max_messages);
  f.finish();
  return t;
}

// A block with optional "both", "ab" and "ba" entries: "both" first, then each direction's own.
template <class T>
void per_direction(Fields f, T (*parse)(Fields, T), T& ab, T& ba) {
  if (f.has("both")) ab = ba = parse(f.sub("both"), ab);
  if (f.has("ab")) ab = parse(f.sub("ab"), ab);
  if (f.has("ba")) ba = parse(f.sub("ba"), ba);
  f.finish();
}

int parse_lane_sel(Fields& f) {
  std::string s = f.choice("lane", "both", {"ab", "ba", "both"});
  return s == "ab" ? 0 : s == "ba" ? 1 : 2;
}

void parse_fault(Fields f, std::vector<LinkAction>& out) {
  using K = LinkAction::Kind;
  LinkAction a;
  a.cycle = f.uint<uint64_t>("at", 0);
  if (!f.has("at")) f.fail("at", "missing (the cycle at which the fault happens)");
  std::string kind = f.choice("kind", "", {"dark", "ber", "swap_peer", "move_peer", "disable", "enable", "retrain"});
  if (kind == "dark") {
    a.lane = parse_lane_sel(f);
    uint64_t cycles = f.uint<uint64_t>("cycles", 0, 1);
    if (!f.has("cycles")) f.fail("cycles", "missing (how long the lane stays dark)");
    a.kind = K::DarkOn;
    out.push_back(a);
    a.kind = K::DarkOff;
    a.cycle += cycles;
    out.push_back(a);
  } else if (kind == "ber") {
    a.lane = parse_lane_sel(f);
    a.kind = K::SetBer;
    if (!f.has("value")) f.fail("value", "missing (the new bit error rate)");
    a.value = f.real("value", 0, 0.0, 0.01);
    out.push_back(a);
  } else if (kind == "swap_peer") {
    // The optical switch moves A's lane from B to the impostor: dark while it settles.
    uint64_t settle = f.uint<uint64_t>("settle_cycles", 200, 1);
    out.push_back(LinkAction{a.cycle, K::DarkOn, 2, 'a', 0});
    out.push_back(LinkAction{a.cycle, K::SwapPeer, 2, 'a', 0});
    out.push_back(LinkAction{a.cycle + settle, K::DarkOff, 2, 'a', 0});
  } else if (kind == "move_peer") {
    // The controller re-points A's lane (bandwidth steering): to C ("c", the impostor's identity,
    // now expected) or back to B; dark while the switch settles.
    if (!f.has("to")) f.fail("to", "missing (the new peer: \"b\" or \"c\")");
    char to = f.choice("to", "", {"b", "c"})[0];
    uint64_t settle = f.uint<uint64_t>("settle_cycles", 200, 1);
    out.push_back(LinkAction{a.cycle, K::DarkOn, 2, 'a', 0});
    out.push_back(LinkAction{a.cycle, K::MovePeer, 2, to, 0});
    out.push_back(LinkAction{a.cycle + settle, K::DarkOff, 2, 'a', 0});
  } else {
    a.kind = kind == "disable" ? K::Disable : kind == "enable" ? K::Enable : K::Retrain;
    a.endpoint = f.choice("endpoint", "a", {"a", "b"})[0];
    out.push_back(a);
  }
  f.finish();
}

}  // namespace

LinkPairConfig parse_link_pair_scenario(const json& j, const std::string& source) {
  Fields f(j, source, "$");
  LinkPairConfig c;
  c.name = f.str("name", c.name);
  c.seed = f.uint<uint64_t>("seed", c.seed);
  c.clock_mhz = f.real("clock_mhz", c.clock_mhz, 1.0, 2000.0);
  c.traffic_cycles = f.uint<uint64_t>("traffic_cycles", c.traffic_cycles, 1);
  c.drain_cycles = f.uint<uint64_t>("drain_cycles", c.drain_cycles, kDrainCheckCycles);
  c.check_peer = f.boolean("check_peer", c.check_peer);
  if (f.has("endpoints")) {
    Fields e = f.sub("endpoints");
    if (e.has("a")) c.a = parse_identity(e.sub("a"), c.a);
    if (e.has("b")) c.b = parse_identity(e.sub("b"), c.b);
    if (e.has("impostor")) c.impostor = parse_identity(e.sub("impostor"), c.impostor);
    e.finish();
  }
  if (f.has("lanes")) per_direction(f.sub("lanes"), parse_lane, c.ab, c.ba);
  if (f.has("traffic")) per_direction(f.sub("traffic"), parse_traffic, c.traffic_ab, c.traffic_ba);
  if (f.has("faults")) {
    const json& arr = f.raw("faults");
    if (!arr.is_array()) f.fail("faults", "must be an array");
    for (size_t i = 0; i < arr.size(); ++i)
      parse_fault(Fields(arr[i], source, fmt::format("$.faults[{}]", i)), c.actions);
  }
  if (f.has("expect")) {
    Fields e = f.sub("expect");
    if (e.has("state_a")) c.expect_state_a = parse_enum<link::LinkState>(e, "state_a", link::to_link_state, 9);
    if (e.has("state_b")) c.expect_state_b = parse_enum<link::LinkState>(e, "state_b", link::to_link_state, 9);
    if (e.has("reason_a")) c.expect_reason_a = parse_enum<link::Reason>(e, "reason_a", link::to_reason, 15);
    c.expect_all_delivered = e.boolean("all_delivered", c.expect_all_delivered);
    e.finish();
  }
  f.finish();
  set_seed(c, c.seed);
  return c;
}

void set_seed(LinkPairConfig& cfg, uint64_t seed) {
  cfg.seed = seed;
  // One stream per channel, so the two directions see independent errors.
  cfg.ab.seed = seed * 0x9E3779B97F4A7C15ull + 11;
  cfg.ba.seed = seed * 0x9E3779B97F4A7C15ull + 23;
}

LinkPairConfig load_link_pair_scenario(const std::string& path) {
  return parse_link_pair_scenario(read_json_file<ScenarioError>(path, "scenario file"), path);
}

LinkPairConfig random_link_pair_scenario(uint64_t seed) {
  std::mt19937_64 rng(seed * 7919 + 17);
  auto uni = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  // Up to 3e-5: links that should stay up. Bit error rates near the error-rate monitor's
  // threshold (about 1e-4) retrain on purpose; traces/scenarios/link/noisy.json covers those.
  const double bers[] = {0.0, 1e-6, 1e-5, 3e-5};
  json j;
  j["name"] = fmt::format("random-{}", seed);
  j["seed"] = seed;
  j["traffic_cycles"] = uni(60000, 150000);
  j["drain_cycles"] = 200000;
  for (const char* dir : {"ab", "ba"}) {
    j["lanes"][dir] = {{"latency_cycles", uni(1, 64)},
                       {"bit_offset", uni(0, 65)},
                       {"ber", bers[uni(0, 3)]},
                       {"erasure_rate", chance(0.3) ? 1e-4 : 0.0}};
    uint64_t lo = uni(1, 8);
    j["traffic"][dir] = {{"load", chance(0.5) ? 1.0 : 0.3},
                         {"min_words", lo},
                         {"max_words", lo + uni(0, 40)},
                         {"rx_ready", chance(0.3) ? 0.5 : 1.0}};
  }
  json faults = json::array();
  uint64_t tc = j["traffic_cycles"].get<uint64_t>();
  for (uint64_t n = uni(0, 3); n > 0; --n) {
    const char* lanes[] = {"ab", "ba", "both"};
    faults.push_back({{"at", uni(20000, tc - 1)}, {"kind", "dark"}, {"lane", lanes[uni(0, 2)]},
                      {"cycles", uni(10, 5000)}});
  }
  if (chance(0.2)) faults.push_back({{"at", uni(20000, tc - 1)}, {"kind", "retrain"}, {"endpoint", chance(0.5) ? "a" : "b"}});
  // Drawn last, so the draws above stay as they were for every seed: one run in three steers A's
  // lane to a third XPU (C) and back, once or twice, as bandwidth steering does; the last return
  // leaves at least 20,000 cycles of traffic for the scoreboards to check after it.
  if (chance(1.0 / 3)) {
    uint64_t t = 20000;
    const uint64_t trips = uni(1, 2), last = tc - 20000;
    for (uint64_t n = 0; n < trips && t < last && (last - t) / (trips - n) >= 4000; ++n) {
      const uint64_t span = (last - t) / (trips - n);
      const uint64_t away = uni(t, t + span / 2), back = uni(away + 2000, t + span);
      faults.push_back({{"at", away}, {"kind", "move_peer"}, {"to", "c"}, {"settle_cycles", uni(50, 2000)}});
      faults.push_back({{"at", back}, {"kind", "move_peer"}, {"to", "b"}, {"settle_cycles", uni(50, 2000)}});
      t = back + 2000;
    }
  }
  j["faults"] = faults;
  return parse_link_pair_scenario(j, fmt::format("random scenario (seed {})", seed));
}

namespace {
// The servers of a rack file as drawn (its "rack" section), every server the default's.
protocol::RackShape rack_shape_of(const json& rack_file) {
  protocol::RackShape shape;
  shape.servers_x = rack_file.at("rack").at("servers_x").get<int>();
  shape.servers_y = rack_file.at("rack").at("servers_y").get<int>();
  return shape;
}
}  // namespace

RackSeedPlan rack_seed_plan(uint64_t seed, const std::string& racks_dir) {
  std::mt19937_64 rng(seed * 104729 + 71);
  auto uni = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  auto real = [&]() { return std::uniform_real_distribution<double>(0, 1)(rng); };
  auto chance = [&](double p) { return real() < p; };
  RackSeedPlan p;
  // Two servers (one spare each) most of the time; four servers (a 4x4 tenant) one seed in four.
  p.base = chance(0.25) ? "rack-2x2.json" : "rack-2x1.json";
  const std::string path = racks_dir + "/" + p.base;
  p.scenario = read_json_file<ScenarioError>(path, "rack file");
  p.scenario["name"] = fmt::format("rack-random-{}", seed);
  p.scenario["seed"] = seed;
  const int servers = p.scenario.at("rack").at("servers_x").get<int>() * p.scenario.at("rack").at("servers_y").get<int>();
  // Up to one death more than the rack has spares: the last may find none left.
  const int deaths = static_cast<int>(uni(1, static_cast<uint64_t>(servers) + 1));
  for (int i = 0; i < deaths; ++i) {
    p.pick.push_back(real());
    p.gap_ns.push_back(uni(1, 30) * 1000);
  }
  if (chance(0.3)) {
    p.second_during = static_cast<int>(uni(0, static_cast<uint64_t>(deaths - 1)));
    p.second_step = static_cast<int>(uni(0, 4));
    p.second_board = real();
    p.second_xpu = real();
    p.second_delay_ns = uni(0, 20) * 1000;
  }
  if (chance(0.2)) {
    // A fibre of the wiring, cut once the tenant's lanes are up, during the failovers or before them.
    const auto fibres = static_cast<int>(protocol::torus_wiring(rack_shape_of(p.scenario)).size());
    p.cut_fibre = static_cast<int>(uni(0, static_cast<uint64_t>(fibres - 1)));
    p.cut_at_us = static_cast<double>(uni(200, 600));
    p.scenario["faults"] = json::array({{{"kind", "fibre_cut"}, {"fibre", p.cut_fibre}, {"at_us", p.cut_at_us}}});
  }
  // A board that stops answering, one seed in eight, not in one whose transaction sees a second
  // death (the rules could not tell which of the two the outcome answers).
  if (chance(0.125) && p.second_during < 0) {
    p.silent_during = static_cast<int>(uni(0, static_cast<uint64_t>(deaths - 1)));
    p.silent_step = static_cast<int>(uni(1, 3));
    // Within the client's 3 s; past it; past it, the host's 4 s of asking again and its last try.
    const uint64_t kind = uni(0, 2);
    p.silent_ms = kind == 0 ? uni(300, 1500) : kind == 1 ? uni(4000, 7000) : uni(13000, 15000);
  }
  if (chance(0.75)) {
    p.job = true;
    p.job_op = static_cast<int>(uni(0, 3));
    p.job_bf16 = chance(0.5);
    p.job_bytes = static_cast<uint32_t>(uint64_t{4096} << uni(0, 4));
  }
  if (chance(1.0 / 3)) {
    p.lane_fault = chance(0.5) ? RackSeedPlan::LaneFault::Dark : RackSeedPlan::LaneFault::Ber;
    p.lane_xpu = real();
    p.lane = static_cast<int>(uni(0, 3));
    p.lane_at_us = static_cast<double>(uni(0, 600));
    p.lane_dark_us = static_cast<double>(uni(1, 15));
    p.lane_ber = std::pow(10.0, -7.0 + 2.0 * real());
  }
  // Its own stream: every other draw of every seed is what it was before the baseline existed (the
  // offset also keeps the seeds the directed tests pin, 12 26 257 3070 4036, off it).
  std::mt19937_64 baseline(seed * 7919 + 14);
  if (std::uniform_int_distribution<int>(0, 5)(baseline) == 0) {
    p.migrate = true;
    const protocol::RackPlacement torus = protocol::whole_rack_placement(rack_shape_of(p.scenario));
    const bool halve_y = torus.dim_y % 2 == 0 && std::uniform_int_distribution<int>(0, 1)(baseline) == 0;
    p.slice_dx = halve_y ? torus.dim_x : torus.dim_x / 2;
    p.slice_dy = halve_y ? torus.dim_y / 2 : torus.dim_y;
    p.slice_x0 = std::uniform_int_distribution<int>(0, torus.dim_x - 1)(baseline);
    p.slice_y0 = std::uniform_int_distribution<int>(0, torus.dim_y - 1)(baseline);
    p.pick.resize(1);
    p.gap_ns.resize(1);
    p.second_during = p.silent_during = p.cut_fibre = -1;
    p.scenario.erase("faults");
    p.lane_fault = RackSeedPlan::LaneFault::None;
    if (!p.job) {
      p.job = true;
      p.job_op = std::uniform_int_distribution<int>(0, 3)(baseline);
      p.job_bf16 = std::uniform_int_distribution<int>(0, 1)(baseline) == 1;
      p.job_bytes = static_cast<uint32_t>(uint64_t{4096} << std::uniform_int_distribution<int>(0, 4)(baseline));
    }
  }
  std::mt19937_64 several(seed * 7919 + 16);  // offset 16 keeps the pinned seeds (3 12 26 257 3070 4036) off it
  if (!p.migrate && std::uniform_int_distribution<int>(0, 4)(several) == 0) {
    const protocol::RackShape shape = rack_shape_of(p.scenario);
    static const char* const kTwoServers[] = {"2x2,2x2"};
    static const char* const kFourServers[] = {"2x2,2x2,2x2", "4x2,2x2", "2x2,4x2", "2x2,2x2"};
    p.tenants = shape.servers() == 2 ? kTwoServers[0] : kFourServers[std::uniform_int_distribution<int>(0, 3)(several)];
    const auto placed = host::failover::place_rack_tenants(shape, protocol::torus_wiring(shape), host::failover::parse_tenant_shapes(p.tenants));
    json tenants = json::array();
    for (const auto& t : placed.tenants) tenants.push_back(rack_placement_json(t));
    p.scenario["tenants"] = tenants;
    p.cut_fibre = -1;
    p.scenario.erase("faults");
  }
  return p;
}

// ---- Failover scenarios ----

namespace {

// The names of the phases the manager measures (docs/failover.md): a modeled phase may not take
// one, or the report could not tell them apart.
const char* const kReservedPhases[] = {"detect",   "host_detect", "host_decide", "isolate", "host_away", "reconcile",
                                       "firmware", "program",     "settle",      "verify",  "reconfigure", "train",
                                       "confirm",  "state_restore", "first_collective", "rearm",
                                       "collective_abort", "communicator_reform", "hot_spare_reform", "ranks_abort"};

std::vector<int> parse_xpu_list(const json& v, const Fields& f, const std::string& key, int xpus) {
  if (!v.is_array()) f.fail(key, fmt::format("must be an array of XPU numbers, got {}", v.dump()));
  std::vector<int> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const json& x = v[i];
    std::string where = fmt::format("{}[{}]", key, i);
    if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= xpus)
      f.fail(where, fmt::format("must be an XPU number in [0, {}], got {}", xpus - 1, x.dump()));
    int n = x.get<int>();
    for (int seen : out)
      if (seen == n) f.fail(where, fmt::format("XPU {} is listed twice", n));
    out.push_back(n);
  }
  return out;
}

const json& array_field(Fields& f, const char* key) {
  const json& arr = f.raw(key);
  if (!arr.is_array()) f.fail(key, fmt::format("must be an array, got {}", arr.dump()));
  return arr;
}

// The sections of a failover scenario that take more than a line, each read as parse_failover_scenario
// meets it (the order fixes which error a file with several gets).

void parse_failure_groups(Fields& f, int xpus, FailoverScenario& s) {
  Fields g = f.sub("failure_groups");
  const json& obj = f.raw("failure_groups");
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string kind = it.key();
    g.has(kind.c_str());
    if (!it->is_array()) g.fail(kind, fmt::format("must be an array of XPU groups, got {}", it->dump()));
    std::vector<int> owner(static_cast<size_t>(xpus), -1);
    for (size_t i = 0; i < it->size(); ++i) {
      std::string key = fmt::format("{}[{}]", kind, i);
      std::vector<int> group = parse_xpu_list((*it)[i], g, key, xpus);
      if (group.empty()) g.fail(key, "must not be empty");
      for (int x : group) {
        if (owner[static_cast<size_t>(x)] >= 0)
          g.fail(key, fmt::format("XPU {} is already in {}[{}]: a {} holds each XPU at most once", x, kind,
                                  owner[static_cast<size_t>(x)], kind));
        owner[static_cast<size_t>(x)] = static_cast<int>(i);
      }
      s.failure_groups[kind].push_back(group);
    }
  }
  g.finish();
}

void parse_lane_faults(Fields& f, const std::string& source, int links, FailoverScenario& s) {
  const json& arr = array_field(f, "lane_faults");
  for (size_t i = 0; i < arr.size(); ++i) {
    Fields e(arr[i], source, fmt::format("$.lane_faults[{}]", i));
    if (!e.has("link")) e.fail("link", "missing (link = xpu * lanes_per_xpu + lane)");
    ScheduledLaneFault l;
    l.link = e.small_int("link", 0, 0, links - 1);
    l.ber = e.real("ber", 0, 0.0, 0.01);
    l.dark_from_us = e.real("dark_from_us", 0, 0.0, 1e7);
    l.dark_us = e.real("dark_us", 0, 0.0, 1e7);
    if (e.has("dark_from_us") && !e.has("dark_us")) e.fail("dark_us", "missing (how long the lane stays dark)");
    if (e.has("swap_with")) {
      l.swap_with = e.small_int("swap_with", 0, 0, links - 1);
      if (l.swap_with == l.link) e.fail("swap_with", "a link cannot swap with itself");
    }
    l.swap_from_us = e.real("swap_from_us", 0, 0.0, 1e7);
    if (e.has("swap_from_us") && l.swap_with < 0) e.fail("swap_with", "missing (which link's fibre it swaps with)");
    if (l.ber == 0 && l.dark_us == 0 && l.swap_with < 0) e.fail("", "does nothing: give ber, dark_us and/or swap_with");
    e.finish();
    s.lane_faults.push_back(l);
  }
}

void parse_host_disconnect(Fields& f, FailoverScenario& s) {
  Fields h = f.sub("host_disconnect");
  std::string at = h.choice("at", "", {"before_commit", "mid_commit", "after_commit"});
  s.host_disconnect = at == "before_commit" ? HostDisconnect::BeforeCommit
                      : at == "mid_commit"  ? HostDisconnect::MidCommit
                                            : HostDisconnect::AfterCommit;
  s.host_downtime_us = h.real("downtime_us", s.host_downtime_us, 1.0, 1e5);
  h.finish();
}

// The state restore's section; its time follows the lanes' rate, which the clock declares.
void parse_state_restore(Fields& f, FailoverScenario& s) {
  Fields r = f.sub("state_restore");
  s.state_bytes_per_xpu = r.uint<uint64_t>("bytes_per_xpu", s.state_bytes_per_xpu, 0, uint64_t{1} << 40);
  s.state_copy_gbytes_per_s = r.real("copy_gbytes_per_s", s.state_copy_gbytes_per_s, 0.1, 10000.0);
  if (r.has("lane_gbps"))
    r.fail("lane_gbps", fmt::format("the lanes' rate is the emulated link layer's, {} bits a cycle of clock_mhz ({} Gb/s "
                                    "at {} MHz), and is not set here; a faster SerDes is a projection: "
                                    "state_restore.projected_lane_gbps",
                                    protocol::kLaneWordBits, protocol::lane_gbps(s.clock_mhz), s.clock_mhz));
  s.state_projected_lane_gbps = r.real("projected_lane_gbps", s.state_projected_lane_gbps, 0.0, 100000.0);
  s.state_real_bytes_max = r.uint<uint64_t>("real_bytes_max", s.state_real_bytes_max, 0, uint64_t{1} << 34);
  r.finish();
}

void parse_modeled(Fields& f, const std::string& source, FailoverScenario& s) {
  const json& arr = array_field(f, "modeled");
  for (size_t i = 0; i < arr.size(); ++i) {
    Fields e(arr[i], source, fmt::format("$.modeled[{}]", i));
    ModeledPhase m;
    m.name = e.str("name", "");
    if (m.name.empty()) e.fail("name", "missing or empty");
    for (const char* r : kReservedPhases)
      if (m.name == r) e.fail("name", fmt::format("\"{}\" is an emulated phase's name", m.name));
    for (const auto& earlier : s.modeled)
      if (earlier.name == m.name) e.fail("name", fmt::format("\"{}\" is already modeled", m.name));
    if (!e.has("duration_ms")) e.fail("duration_ms", "missing (the phase's modeled duration)");
    m.duration_ms = e.real("duration_ms", 0, 0.0, 60000.0);
    m.doc = e.str("doc", "");
    if (m.doc.empty()) e.fail("doc", "missing: a modeled constant must say where its value comes from");
    e.finish();
    s.modeled.push_back(m);
  }
}

void parse_collective(Fields& f, FailoverScenario& s) {
  Fields c = f.sub("collective");
  FailoverScenario::Collective job;
  const std::string op = c.str("op", sim::to_string(job.op));
  if (auto o = sim::collective_op_from_string(op)) job.op = *o;
  else c.fail("op", fmt::format("\"{}\" is not one of all_reduce, reduce_scatter, all_gather, alltoall", op));
  const std::string type = c.str("type", sim::to_string(job.type));
  if (auto t = sim::data_type_from_string(type)) job.type = *t;
  else c.fail("type", fmt::format("\"{}\" is not one of float, bfloat16", type));
  job.bytes = c.uint<uint64_t>("bytes", job.bytes, 1, 64ull << 20);
  job.link_loss_us = c.real("link_loss_us", job.link_loss_us, 1.0, 1e5);
  job.gap_us = c.real("gap_us", job.gap_us, 0.0, 1e5);
  c.finish();
  try {
    protocol::ring_positions(s.tenant);
  } catch (const protocol::FabricMapError& e) {
    f.fail("collective", fmt::format("the tenant has no ring to run it on: {}", e.what()));
  }
  if (s.tenant.xpu_of_position.size() > 8 || s.shape.xpus > 15)
    f.fail("collective", "JOB_RING holds 8 XPUs numbered 0..14: this tenant or server does not fit it");
  // The job's own check, on the tenant's ring, with the XPUs it would run on.
  sim::TenantJobConfig jc;
  jc.xpus = s.tenant.xpu_of_position;
  sim::TenantJobSpec spec;
  spec.op = job.op;
  spec.type = job.type;
  spec.bytes = job.bytes;
  if (std::string why = sim::TenantJob(jc, s.shape).check(protocol::ring_xpus(s.tenant), spec); !why.empty())
    c.fail("bytes", why);
  s.collective = job;
}

}  // namespace

FailoverScenario parse_failover_scenario(const json& j, const std::string& source) {
  Fields f(j, source, "$");
  FailoverScenario s;
  s.name = f.str("name", s.name);
  s.seed = f.uint<uint64_t>("seed", s.seed);
  s.time_mode = f.choice("time_mode", s.time_mode, {"lockstep", "paced", "free"});
  if (f.has("ipbus_target")) s.ipbus_target = f.choice("ipbus_target", "rtl", {"rtl", "cpp"});
  if (f.has("server")) {
    Fields v = f.sub("server");
    s.shape.xpus = v.small_int("xpus", s.shape.xpus, 2, 64);
    s.shape.lanes_per_xpu = v.small_int("lanes_per_xpu", s.shape.lanes_per_xpu, 4, 16);
    s.shape.mesh_ports = v.small_int("mesh_ports", s.shape.mesh_ports, 4, 1024);
    s.clock_mhz = v.real("clock_mhz", s.clock_mhz, 1.0, 2000.0);
    if (s.shape.xpus * s.shape.lanes_per_xpu > s.shape.mesh_ports)
      v.fail("mesh_ports", fmt::format("{} XPUs x {} lanes need at least {} ports, got {}", s.shape.xpus,
                                       s.shape.lanes_per_xpu, s.shape.xpus * s.shape.lanes_per_xpu, s.shape.mesh_ports));
    v.finish();
  }
  const int xpus = s.shape.xpus;
  const int links = xpus * s.shape.lanes_per_xpu;
  s.settle = *settle_preset_from_string(f.choice("settle", to_string(s.settle), {"thermo_optic", "electro_optic", "mems"}));
  s.settle_taus = f.real("settle_taus", s.settle_taus, 1.0, 20.0);
  if (f.has("tenant")) {
    Fields t = f.sub("tenant");
    s.tenant.dim_x = t.small_int("dim_x", s.tenant.dim_x, 1, 16);
    s.tenant.dim_y = t.small_int("dim_y", s.tenant.dim_y, 1, 16);
    if (t.has("xpus")) s.tenant.xpu_of_position = parse_xpu_list(t.raw("xpus"), t, "xpus", xpus);
    if (static_cast<int>(s.tenant.xpu_of_position.size()) != s.tenant.dim_x * s.tenant.dim_y)
      t.fail("xpus", fmt::format("a {}x{} torus needs {} XPUs, got {}", s.tenant.dim_x, s.tenant.dim_y,
                                 s.tenant.dim_x * s.tenant.dim_y, s.tenant.xpu_of_position.size()));
    t.finish();
  }
  auto in_tenant = [&](int x) {
    for (int t : s.tenant.xpu_of_position)
      if (t == x) return true;
    return false;
  };
  if (f.has("spares")) s.spares = parse_xpu_list(f.raw("spares"), f, "spares", xpus);
  for (size_t i = 0; i < s.spares.size(); ++i)
    if (in_tenant(s.spares[i]))
      f.fail(fmt::format("spares[{}]", i), fmt::format("XPU {} is one of the tenant's XPUs", s.spares[i]));
  if (f.has("armed_xpu") && !f.raw("armed_xpu").is_null()) {  // null: nothing pre-armed
    int a = f.small_int("armed_xpu", 0, 0, xpus - 1);
    if (!in_tenant(a)) f.fail("armed_xpu", fmt::format("XPU {} is not one of the tenant's XPUs", a));
    s.armed_xpu = a;
  }
  auto is_spare = [&](int x) {
    for (int sp : s.spares)
      if (sp == x) return true;
    return false;
  };
  if (f.has("failure_groups")) parse_failure_groups(f, xpus, s);
  if (f.has("failures")) {
    const json& arr = array_field(f, "failures");
    s.failures.clear();
    for (size_t i = 0; i < arr.size(); ++i) {
      Fields e(arr[i], source, fmt::format("$.failures[{}]", i));
      if (!e.has("xpu")) e.fail("xpu", "missing (the XPU that dies)");
      XpuFailure x;
      x.xpu = e.small_int("xpu", 0, 0, xpus - 1);
      if (!in_tenant(x.xpu) && !is_spare(x.xpu)) e.fail("xpu", fmt::format("XPU {} is neither the tenant's nor a spare", x.xpu));
      for (const auto& earlier : s.failures)
        if (earlier.xpu == x.xpu) e.fail("xpu", fmt::format("XPU {} already fails in an earlier entry", x.xpu));
      x.at_us = e.real("at_us", x.at_us, 0.0, 1e7);
      e.finish();
      s.failures.push_back(x);
    }
  }
  if (f.has("lane_faults")) parse_lane_faults(f, source, links, s);
  if (f.has("host_disconnect")) parse_host_disconnect(f, s);
  s.watchdog_us = f.real("watchdog_us", s.watchdog_us, 0.0, 1e6);
  s.host_decide_extra_us = f.real("host_decide_extra_us", s.host_decide_extra_us, 0.0, 1e5);
  if (f.has("host_decide_ns")) s.host_decide_ns = static_cast<uint64_t>(f.uint<uint64_t>("host_decide_ns", 1, 1, 100'000'000));
  if (s.host_disconnect != HostDisconnect::None && (s.watchdog_us == 0 || s.host_downtime_us <= s.watchdog_us))
    f.fail("host_disconnect.downtime_us", fmt::format("{} us does not outlast the watchdog ({} us): nothing would happen",
                                                      s.host_downtime_us, s.watchdog_us));
  if (f.has("traffic")) s.traffic = parse_traffic(f.sub("traffic"), s.traffic);
  if (f.has("modeled")) parse_modeled(f, source, s);
  if (f.has("state_restore")) parse_state_restore(f, s);
  if (f.has("collective")) parse_collective(f, s);
  s.limit_us = f.real("limit_us", s.limit_us, 0.0, 1e7);
  if (f.has("expect")) {
    Fields e = f.sub("expect");
    s.expect_hardware_ns_max = e.real("hardware_ns_max", s.expect_hardware_ns_max, 0.0, 1e12);
    s.expect_total_ns_max = e.real("total_ns_max", s.expect_total_ns_max, 0.0, 1e12);
    s.expect_swap_relaunch_ns_max = e.real("swap_relaunch_ns_max", s.expect_swap_relaunch_ns_max, 0.0, 1e12);
    e.finish();
  }
  f.finish();
  return s;
}

FailoverScenario load_failover_scenario(const std::string& path) {
  return parse_failover_scenario(read_json_file<ScenarioError>(path, "scenario file"), path);
}

json to_json(const FailoverScenario& s) {
  json groups = json::object();
  for (const auto& [kind, list] : s.failure_groups) groups[kind] = list;
  json failures = json::array();
  for (const auto& x : s.failures) failures.push_back({{"xpu", x.xpu}, {"at_us", x.at_us}});
  json lanes = json::array();
  for (const auto& l : s.lane_faults) {
    json e{{"link", l.link}};
    if (l.ber > 0) e["ber"] = l.ber;
    if (l.swap_with >= 0) {
      e["swap_with"] = l.swap_with;
      e["swap_from_us"] = l.swap_from_us;
    }
    if (l.dark_us > 0) {
      e["dark_from_us"] = l.dark_from_us;
      e["dark_us"] = l.dark_us;
    }
    lanes.push_back(e);
  }
  json modeled = json::array();
  for (const auto& m : s.modeled) modeled.push_back({{"name", m.name}, {"duration_ms", m.duration_ms}, {"doc", m.doc}});
  json armed = s.armed_xpu ? json(*s.armed_xpu) : json(nullptr);
  json j{{"name", s.name},
         {"armed_xpu", armed},
         {"seed", s.seed},
         {"time_mode", s.time_mode},
         {"server", {{"xpus", s.shape.xpus}, {"lanes_per_xpu", s.shape.lanes_per_xpu},
                     {"mesh_ports", s.shape.mesh_ports}, {"clock_mhz", s.clock_mhz}}},
         {"settle", to_string(s.settle)},
         {"settle_taus", s.settle_taus},
         {"tenant", {{"dim_x", s.tenant.dim_x}, {"dim_y", s.tenant.dim_y}, {"xpus", s.tenant.xpu_of_position}}},
         {"spares", s.spares},
         {"failure_groups", groups},
         {"failures", failures},
         {"lane_faults", lanes},
         {"traffic", {{"load", s.traffic.load}, {"min_words", s.traffic.min_words}, {"max_words", s.traffic.max_words},
                      {"rx_ready", s.traffic.rx_ready}, {"max_messages", s.traffic.max_messages}}},
         {"modeled", modeled},
         {"state_restore", {{"bytes_per_xpu", s.state_bytes_per_xpu}, {"copy_gbytes_per_s", s.state_copy_gbytes_per_s},
                            {"projected_lane_gbps", s.state_projected_lane_gbps}, {"real_bytes_max", s.state_real_bytes_max}}},
         {"limit_us", s.limit_us},
         {"expect", {{"hardware_ns_max", s.expect_hardware_ns_max}, {"total_ns_max", s.expect_total_ns_max},
                     {"swap_relaunch_ns_max", s.expect_swap_relaunch_ns_max}}}};
  if (s.host_disconnect != HostDisconnect::None)
    j["host_disconnect"] = {{"at", to_string(s.host_disconnect)}, {"downtime_us", s.host_downtime_us}};
  j["watchdog_us"] = s.watchdog_us;
  if (s.collective)
    j["collective"] = {{"op", sim::to_string(s.collective->op)}, {"type", sim::to_string(s.collective->type)},
                       {"bytes", s.collective->bytes}, {"link_loss_us", s.collective->link_loss_us},
                       {"gap_us", s.collective->gap_us}};
  if (s.host_decide_extra_us > 0) j["host_decide_extra_us"] = s.host_decide_extra_us;
  if (s.host_decide_ns) j["host_decide_ns"] = *s.host_decide_ns;
  if (s.ipbus_target) j["ipbus_target"] = *s.ipbus_target;
  return j;
}

// The communicator re-initialization constant: docs/report.md says where it comes from.
constexpr double kCommunicatorReinitMs = 500;
constexpr const char* kCommunicatorReinitDoc =
    "NCCL communicator re-init of the 4-rank tenant with the spare: bootstrap, allgathers and "
    "connection setup, about 0.5 s from NCCL's own per-phase init timings (docs/report.md)";

FailoverScenario random_failover_scenario(uint64_t seed) {
  std::mt19937_64 rng(seed * 104729 + 31);
  auto uni = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  json j;
  j["name"] = fmt::format("random-failover-{}", seed);
  j["seed"] = seed;
  // Mostly electro-optic (a run takes seconds), sometimes thermo-optic (tens of seconds); MEMS
  // (1 ms time constant) is left to directed runs, as it makes every run several minutes long.
  j["settle"] = chance(0.25) ? "thermo_optic" : "electro_optic";
  // The default server: 2x2 tenant on XPUs 0-3 in a shuffled placement, spare XPU 4.
  std::vector<int> tenant{0, 1, 2, 3};
  std::shuffle(tenant.begin(), tenant.end(), rng);
  j["tenant"] = {{"dim_x", 2}, {"dim_y", 2}, {"xpus", tenant}};
  j["spares"] = json::array({4});
  j["armed_xpu"] = tenant[uni(0, 3)];  // the failure hits it (fast path) about one time in four
  const bool split = chance(0.5);
  j["failure_groups"] = {{"power_domain", split ? json{{0, 1}, {2, 3, 4}} : json{{0, 1, 2}, {3, 4}}}};
  json failures = json::array();
  int first = static_cast<int>(uni(0, 3));
  const uint64_t first_at = uni(10, 200);
  failures.push_back({{"xpu", first}, {"at_us", static_cast<double>(first_at)}});
  if (chance(0.15)) {
    int second = static_cast<int>((static_cast<uint64_t>(first) + uni(1, 3)) % 4);
    failures.push_back({{"xpu", second}, {"at_us", static_cast<double>(uni(10, 400))}});
  } else if (chance(0.18)) {
    // A torus neighbour of the first dies 2-60 us after it: before, during or just after the
    // commit of the first's failover (the rolled-back commit; docs/failover.md). In the 2x2
    // torus, position p = x + 2y has its neighbours at p ^ 1 and p ^ 2.
    size_t pos = static_cast<size_t>(std::find(tenant.begin(), tenant.end(), first) - tenant.begin());
    int second = tenant[pos ^ (chance(0.5) ? 1u : 2u)];
    failures.push_back({{"xpu", second}, {"at_us", static_cast<double>(first_at + uni(2, 60))}});
  } else if (chance(0.08)) {
    // Two die at the same instant (a shared power feed): a neighbour, or the diagonal XPU, whose
    // death leaves no tenant XPU with an Active link at all (docs/failover.md, "Detecting").
    size_t pos = static_cast<size_t>(std::find(tenant.begin(), tenant.end(), first) - tenant.begin());
    int second = tenant[pos ^ (chance(0.5) ? 3u : 1u)];
    failures.push_back({{"xpu", second}, {"at_us", static_cast<double>(first_at)}});
  }
  j["failures"] = failures;
  json lanes = json::array();
  const double bers[] = {1e-7, 1e-6, 1e-5};
  for (uint64_t n = uni(0, 2); n > 0; --n) lanes.push_back({{"link", uni(0, 19)}, {"ber", bers[uni(0, 2)]}});
  if (chance(0.3)) lanes.push_back({{"link", uni(0, 19)}, {"dark_from_us", static_cast<double>(uni(0, 300))},
                                   {"dark_us", static_cast<double>(uni(1, 20))}});
  j["lane_faults"] = lanes;
  if (chance(0.1)) j["host_disconnect"] = {{"at", "mid_commit"}};
  j["traffic"] = {{"load", chance(0.5) ? 1.0 : 0.3}, {"max_words", uni(4, 40)}};
  j["modeled"] = json::array(
      {json{{"name", "communicator_reinit"}, {"duration_ms", kCommunicatorReinitMs}, {"doc", kCommunicatorReinitDoc}}});
  j["state_restore"] = {{"bytes_per_xpu", uni(1, 8) << 30}, {"copy_gbytes_per_s", 25}};
  // Drawn last, so that the draws above (and the scenario of every seed this branch skips) stay
  // as they were: a tenant lane's dark window open as the first XPU dies. The circuit it holds
  // down counts for both of its XPUs, so a look in the death's cascade can see a living
  // neighbour with the most circuits down (regress seed 9178; docs/failover.md, "Detecting").
  if (chance(0.1)) {
    const uint64_t from = first_at - std::min<uint64_t>(first_at, uni(0, 8));
    j["lane_faults"].push_back({{"link", uni(0, 15)}, {"dark_from_us", static_cast<double>(from)},
                                {"dark_us", static_cast<double>(uni(2, 12))}});
  }
  // Drawn after everything else, for the same reason: in every seed the tenant runs a job of
  // collectives (every op and type, 4-256 KiB per rank) instead of random traffic, so that failures
  // and faults hit collectives in flight and every failover ends at a verified one. The coin that
  // once chose half the seeds is still tossed: those seeds' collectives stay as they were.
  // Random traffic on the tenant's lanes keeps its directed scenarios (traces/scenarios/failover/).
  (void)chance(0.5);
  {
    const char* ops[] = {"all_reduce", "all_reduce", "reduce_scatter", "all_gather", "alltoall"};
    j["collective"] = {{"op", ops[uni(0, 4)]}, {"type", chance(0.5) ? "float" : "bfloat16"}, {"bytes", uint64_t{4096} << uni(0, 6)}};
  }
  return parse_failover_scenario(j, fmt::format("random failover scenario (seed {})", seed));
}

json to_json(const LinkPairConfig& c) {
  json lanes;
  for (auto [name, l] : {std::pair{"ab", &c.ab}, std::pair{"ba", &c.ba}})
    lanes[name] = {{"latency_cycles", l->latency_cycles}, {"bit_offset", l->bit_offset},
                   {"ber", l->ber}, {"erasure_rate", l->erasure_rate}};
  return json{{"name", c.name}, {"seed", c.seed}, {"clock_mhz", c.clock_mhz},
              {"traffic_cycles", c.traffic_cycles}, {"drain_cycles", c.drain_cycles},
              {"lanes", lanes}, {"actions", c.actions.size()}};
}

json to_json(const LinkPairResult& r) {
  auto ep = [](const EndpointReport& e) {
    return json{{"state", link::to_string(e.state)}, {"reason", link::to_string(e.reason)},
                {"peer_xpu", e.peer.xpu}, {"peer_lane", e.peer.lane},
                {"frames_tx", e.frames_tx}, {"frames_rx", e.frames_rx},
                {"crc_errors", e.crc_errors}, {"replays", e.replays},
                {"retrains", e.retrains}, {"bad_blocks", e.bad_blocks}};
  };
  auto dir = [](const DirectionReport& d) {
    return json{{"messages_sent", d.messages_sent}, {"messages_delivered", d.messages_delivered},
                {"words_delivered", d.words_delivered}, {"errors", d.errors},
                {"first_error", d.first_error}, {"peer_moves", d.peer_moves}, {"last_delivered", d.last_delivered}};
  };
  auto ch = [](const LaneChannelStats& s) {
    return json{{"words", s.words}, {"bits_flipped", s.bits_flipped}, {"erasures", s.erasures},
                {"dark_cycles", s.dark_cycles}};
  };
  json tr = json::array();
  for (const auto& t : r.transitions)
    tr.push_back({{"cycle", t.cycle}, {"endpoint", std::string(1, t.endpoint)},
                  {"from", link::to_string(t.from)}, {"to", link::to_string(t.to)},
                  {"reason", link::to_string(t.reason)}});
  json out{{"cycles", r.cycles}, {"passed", r.passed()}, {"failures", r.failures},
              {"drained", r.drained}, {"a", ep(r.a)}, {"b", ep(r.b)}, {"peer", std::string(1, r.peer)},
              {"ab", dir(r.ab)}, {"ba", dir(r.ba)}, {"channel_ab", ch(r.ch_ab)},
              {"channel_ba", ch(r.ch_ba)}, {"transitions", tr}};
  if (r.c) out["c"] = ep(*r.c);
  return out;
}

sim::EmulatorConfig emulator_config(const FailoverScenario& s, const std::string& source,
                                    const std::string& calibration_file) {
  if (std::string why = sim::unsupported_shape(s.shape); !why.empty())
    throw ScenarioError(fmt::format("{}: $.server: {}", source, why));
  sim::EmulatorConfig cfg;
  cfg.scenario = s.name;
  cfg.server.seed = s.seed;
  cfg.server.clock_mhz = s.clock_mhz;
  cfg.server.shape = s.shape;
  cfg.server.mesh.ports = s.shape.mesh_ports;
  cfg.server.mesh.settle = s.settle;
  cfg.server.traffic = s.traffic;
  cfg.settle_taus = s.settle_taus;
  cfg.time_mode = *sim::time_mode_from_string(s.time_mode);  // the loader accepts only the three modes
  cfg.calibration_file = calibration_file;
  if (s.collective) {
    cfg.job.xpus = s.tenant.xpu_of_position;
    cfg.job.xpus.insert(cfg.job.xpus.end(), s.spares.begin(), s.spares.end());
    const double period_ns = 1000.0 / s.clock_mhz;
    cfg.job.link_loss_cycles = static_cast<uint64_t>(std::ceil(s.collective->link_loss_us * 1000 / period_ns));
    cfg.job.gap_cycles = static_cast<uint64_t>(std::ceil(s.collective->gap_us * 1000 / period_ns));
  }
  return cfg;
}

host::failover::FailoverRun failover_run(const FailoverScenario& s) {
  host::failover::FailoverRun job;
  auto& c = job.manager;
  c.shape = s.shape;
  c.tenant = s.tenant;
  c.spares = s.spares;
  for (const auto& [kind, groups] : s.failure_groups)
    for (size_t i = 0; i < groups.size(); ++i)
      c.groups.push_back(host::failover::FailureGroup{fmt::format("{}[{}]", kind, i), groups[i]});
  c.armed_xpu = s.armed_xpu;
  c.state_bytes_per_xpu = s.state_bytes_per_xpu;
  c.watchdog_ns = static_cast<uint64_t>(s.watchdog_us * 1000);
  c.extra_decide_ns = static_cast<uint64_t>(s.host_decide_extra_us * 1000);
  c.decide_compute_ns = s.host_decide_ns;
  c.shape_clock_mhz = s.clock_mhz;
  c.projected_lane_gbps = s.state_projected_lane_gbps;
  c.real_bytes_max = s.state_real_bytes_max;
  c.modeled = s.modeled;
  if (s.collective) {
    static_assert(static_cast<int>(sim::CollectiveOp::AllToAll) == static_cast<int>(emu::JobOp::AllToAll) &&
                      static_cast<int>(sim::CollectiveOp::AllGather) == static_cast<int>(emu::JobOp::AllGather) &&
                      static_cast<int>(sim::CollectiveOp::ReduceScatter) == static_cast<int>(emu::JobOp::ReduceScatter),
                  "JOB_SPEC.op numbers the ops as sim::CollectiveOp does");
    host::failover::TenantJobLoop loop;
    loop.spec.op = static_cast<emu::JobOp>(s.collective->op);
    loop.spec.type = s.collective->type == sim::DataType::BF16 ? emu::JobType::Bfloat16 : emu::JobType::Float;
    loop.spec.bytes = static_cast<uint32_t>(s.collective->bytes);
    loop.spec.seed = static_cast<uint32_t>(s.seed);
    c.job = loop;
  }
  // The circuits come up after the mesh settles: a slow mesh (MEMS, 5 ms) needs longer than the
  // default wait.
  const double settle_ns = s.settle_taus * sim::preset_tau_ns(s.settle);
  c.link_up_timeout_ns = std::max<uint64_t>(c.link_up_timeout_ns, static_cast<uint64_t>(2 * settle_ns + 1e6));
  c.scenario = s.name;
  c.seed = s.seed;
  job.failures = s.failures;
  job.lane_faults = s.lane_faults;
  job.host_disconnect = s.host_disconnect;
  job.host_downtime_us = s.host_downtime_us;
  job.failure_timeout_ns = static_cast<uint64_t>(s.limit_us > 0 ? s.limit_us * 1000 : 5e6);
  job.expect_hardware_ns_max = s.expect_hardware_ns_max;
  job.expect_total_ns_max = s.expect_total_ns_max;
  job.expect_swap_relaunch_ns_max = s.expect_swap_relaunch_ns_max;
  return job;
}

// ---- Rack scenarios ----

namespace {

sim::rack::FibreLine parse_fibre_line(Fields& f, sim::rack::FibreLine l) {
  l.metres = f.real("metres", l.metres, 0.0, 1e5);
  l.retimer_ns = f.real("retimer_ns", l.retimer_ns, 0.0, 1e6);
  l.loss_db = f.real("loss_db", l.loss_db, 0.0, 100.0);
  return l;
}

protocol::FibreEnd parse_fibre_end(Fields e) {
  protocol::FibreEnd end;
  if (!e.has("server")) e.fail("server", "missing");
  if (!e.has("port")) e.fail("port", "missing");
  end.server = e.small_int("server", 0, 0, 1 << 20);
  end.port = e.small_int("port", 0, 0, 1 << 20);
  e.finish();
  return end;
}

void parse_rack_section(Fields r, sim::rack::RackConfig& c) {
  c.shape.servers_x = r.small_int("servers_x", c.shape.servers_x, 1, 16);
  c.shape.servers_y = r.small_int("servers_y", c.shape.servers_y, 1, 16);
  c.shape.fibres_per_neighbour = r.small_int("fibres_per_neighbour", c.shape.fibres_per_neighbour, 1, 256);
  sim::rack::FibreLine every;
  if (r.has("fibre")) {
    Fields l = r.sub("fibre");
    every = parse_fibre_line(l, every);
    l.finish();
  }
  if (r.has("fibres")) {  // by hand: replaces the torus's wiring
    const json& arr = array_field(r, "fibres");
    for (size_t i = 0; i < arr.size(); ++i) {
      Fields f(arr[i], r.source(), r.path(fmt::format("fibres[{}]", i)));
      if (!f.has("a")) f.fail("a", "missing (one end: {\"server\": S, \"port\": P})");
      if (!f.has("b")) f.fail("b", "missing (the other end)");
      c.wiring.push_back(protocol::RackFibre{parse_fibre_end(f.sub("a")), parse_fibre_end(f.sub("b")), -1});
      c.lines.push_back(parse_fibre_line(f, every));
      f.finish();
    }
  } else {
    try {
      c.wiring = protocol::torus_wiring(c.shape);
    } catch (const protocol::RackMapError& e) {
      r.fail("fibres_per_neighbour", e.what());
    }
    c.lines.assign(c.wiring.size(), every);
  }
  r.finish();
}

protocol::RackPlacement parse_rack_tenant(Fields t, const protocol::RackPlacement& defaults) {
  if (!t.has("xpus")) t.fail("xpus", "missing: [[server, xpu], ...] by position (x + dim_x * y)");
  protocol::RackPlacement p;
  p.dim_x = t.small_int("dim_x", defaults.dim_x, 1, 64);
  p.dim_y = t.small_int("dim_y", defaults.dim_y, 1, 64);
  const json& arr = array_field(t, "xpus");
  for (size_t i = 0; i < arr.size(); ++i) {
    const json& x = arr[i];
    if (!x.is_array() || x.size() != 2 || !x[0].is_number_unsigned() || !x[1].is_number_unsigned())
      t.fail(fmt::format("xpus[{}]", i), fmt::format("must be [server, xpu], got {}", x.dump()));
    p.xpu_of_position.push_back(protocol::RackXpu{x[0].get<int>(), x[1].get<int>()});
  }
  t.finish();
  return p;
}

// "tenants": several tenants, the first the rack's tenant and the rest its co-tenants.
void parse_rack_tenants(Fields& f, sim::rack::RackConfig& c) {
  const json& arr = array_field(f, "tenants");
  if (arr.empty()) f.fail("tenants", "an empty list: give \"tenant\": null for a rack with no tenant");
  for (size_t i = 0; i < arr.size(); ++i) {
    const protocol::RackPlacement p = parse_rack_tenant(Fields(arr[i], f.source(), f.path(fmt::format("tenants[{}]", i))), c.tenant);
    if (i == 0) c.tenant = p;
    else c.co_tenants.push_back(p);
  }
}

void parse_rack_faults(Fields& f, sim::rack::RackConfig& c) {
  const json& arr = array_field(f, "faults");
  const double cycles_per_us = c.server.clock_mhz;
  for (size_t i = 0; i < arr.size(); ++i) {
    Fields e(arr[i], f.source(), fmt::format("$.faults[{}]", i));
    sim::rack::FibreFault x;
    const std::string kind = e.choice("kind", "", {"fibre_cut", "fibre_dark"});
    x.kind = kind == "fibre_cut" ? sim::rack::FibreFault::Kind::Cut : sim::rack::FibreFault::Kind::Dark;
    if (!e.has("fibre")) e.fail("fibre", "missing (an index into the wiring)");
    x.fibre = e.small_int("fibre", 0, 0, 1 << 20);
    if (static_cast<size_t>(x.fibre) >= c.wiring.size())
      e.fail("fibre", fmt::format("fibre {} does not exist (the wiring has fibres 0..{})", x.fibre, static_cast<int>(c.wiring.size()) - 1));
    x.at_cycle = static_cast<uint64_t>(std::llround(e.real("at_us", 0.0, 0.0, 1e7) * cycles_per_us));
    if (x.kind == sim::rack::FibreFault::Kind::Dark) {
      if (!e.has("us")) e.fail("us", "missing (how long the fibre stays dark)");
      x.cycles = static_cast<uint64_t>(std::llround(e.real("us", 0.0, 0.001, 1e7) * cycles_per_us));
    }
    e.finish();
    c.faults.push_back(x);
  }
}

}  // namespace

sim::rack::RackConfig parse_rack_scenario(const json& j, const std::string& source, const std::string& calibration_file) {
  Fields f(j, source, "$");
  sim::rack::RackConfig c;
  c.calibration_file = calibration_file;
  c.name = f.str("name", "rack");
  c.seed = f.uint<uint64_t>("seed", c.seed);
  if (f.has("server")) {
    Fields v = f.sub("server");
    c.shape.server.xpus = v.small_int("xpus", c.shape.server.xpus, 2, 64);
    c.shape.server.lanes_per_xpu = v.small_int("lanes_per_xpu", c.shape.server.lanes_per_xpu, 4, 16);
    c.shape.server.mesh_ports = v.small_int("mesh_ports", c.shape.server.mesh_ports, 4, 1024);
    c.server.clock_mhz = v.real("clock_mhz", c.server.clock_mhz, 1.0, 2000.0);
    v.finish();
  }
  if (std::string why = sim::unsupported_shape(c.shape.server); !why.empty()) f.fail("server", why);
  c.server.shape = c.shape.server;
  c.server.mesh.ports = c.shape.server.mesh_ports;
  c.server.mesh.settle = *settle_preset_from_string(f.choice("settle", to_string(c.server.mesh.settle), {"thermo_optic", "electro_optic", "mems"}));
  c.settle_taus = f.real("settle_taus", c.settle_taus, 1.0, 20.0);
  c.spare_ready = f.boolean("spare_ready", c.spare_ready);
  if (f.has("mesh")) {
    Fields m = f.sub("mesh");
    c.server.mesh.extinction_db = m.real("extinction_db", c.server.mesh.extinction_db, 10.0, 80.0);
    m.finish();
  }
  if (f.has("traffic")) c.server.traffic = parse_traffic(f.sub("traffic"), c.server.traffic);
  if (f.has("rack")) {
    parse_rack_section(f.sub("rack"), c);
  } else {
    c.wiring = protocol::torus_wiring(c.shape);
    c.lines.assign(c.wiring.size(), sim::rack::FibreLine{});
  }
  if (f.has("tenant") && f.has("tenants")) f.fail("tenants", "give either \"tenant\" (one) or \"tenants\" (several), not both");
  if (f.has("tenant") && f.raw("tenant").is_null()) c.tenant = protocol::RackPlacement{0, 0, {}};  // no tenant: bare boards
  else if (f.has("tenant")) c.tenant = parse_rack_tenant(f.sub("tenant"), c.tenant);
  else if (f.has("tenants")) parse_rack_tenants(f, c);
  else c.tenant = protocol::whole_rack_placement(c.shape);
  c.run_us = f.real("run_us", c.run_us, 1.0, 1e6);
  if (f.has("faults")) parse_rack_faults(f, c);
  f.finish();
  try {
    sim::rack::check_rack(c);
  } catch (const sim::rack::RackError& e) {
    throw ScenarioError(fmt::format("{}: {}", source, e.what()));
  }
  return c;
}

nlohmann::json read_rack_file(const std::string& path) { return read_json_file<ScenarioError>(path, "rack file"); }

namespace {
// Fields only a single server's failover scenario has (`mxtb sim`, `mxtb demo`).
bool is_failover_scenario(const json& j) {
  if (!j.is_object() || j.contains("rack")) return false;
  for (const char* key : {"failures", "spares", "armed_xpu", "failure_groups", "state_restore", "collective", "expect", "modeled", "time_mode"})
    if (j.contains(key)) return true;
  return false;
}
}  // namespace

sim::rack::RackConfig rack_of_one(const FailoverScenario& s, const std::string& source, const std::string& calibration_file) {
  sim::rack::RackConfig c;
  c.calibration_file = calibration_file;
  c.name = s.name;
  c.seed = s.seed;
  c.shape.servers_x = c.shape.servers_y = 1;
  c.shape.server = s.shape;
  const sim::EmulatorConfig e = emulator_config(s, source, calibration_file);  // the server `mxtb sim` runs for it
  c.server = e.server;  // its own extinction too (a server alone: no light crosses a fibre)
  c.settle_taus = e.settle_taus;
  c.wiring = protocol::torus_wiring(c.shape);
  c.lines.assign(c.wiring.size(), sim::rack::FibreLine{});
  c.tenant = protocol::RackPlacement{0, 0, {}};  // the board bare, as `mxtb sim` starts it: the host places the tenant
  try {
    sim::rack::check_rack(c);
  } catch (const sim::rack::RackError& e) {
    throw ScenarioError(fmt::format("{}: {}", source, e.what()));
  }
  return c;
}

sim::rack::RackConfig load_rack_scenario(const std::string& path, const std::string& calibration_file, bool* was_failover_scenario) {
  const json j = read_rack_file(path);
  const bool failover = is_failover_scenario(j);
  if (was_failover_scenario) *was_failover_scenario = failover;
  if (failover) return rack_of_one(parse_failover_scenario(j, path), path, calibration_file);
  return parse_rack_scenario(j, path, calibration_file);
}

json rack_placement_json(const protocol::RackPlacement& p) {
  json xpus = json::array();  // unsigned: what parse_rack_tenant accepts
  for (const auto& x : p.xpu_of_position) xpus.push_back({static_cast<unsigned>(x.server), static_cast<unsigned>(x.xpu)});
  return {{"dim_x", p.dim_x}, {"dim_y", p.dim_y}, {"xpus", xpus}};
}

json to_json(const sim::rack::RackConfig& c) {
  json fibres = json::array();
  for (size_t i = 0; i < c.wiring.size(); ++i) {
    const auto& w = c.wiring[i];
    fibres.push_back({{"fibre", i},
                      {"a", {{"server", w.a.server}, {"port", w.a.port}}},
                      {"b", {{"server", w.b.server}, {"port", w.b.port}}},
                      {"side", protocol::direction_name(w.direction)},
                      {"metres", c.lines[i].metres},
                      {"retimer_ns", c.lines[i].retimer_ns},
                      {"loss_db", c.lines[i].loss_db},
                      {"latency_cycles", sim::rack::fibre_latency_cycles(c, static_cast<int>(i))}});
  }
  json faults = json::array();
  for (const auto& x : c.faults)
    faults.push_back({{"kind", x.kind == sim::rack::FibreFault::Kind::Cut ? "fibre_cut" : "fibre_dark"},
                      {"fibre", x.fibre},
                      {"at_cycle", x.at_cycle},
                      {"cycles", x.cycles}});
  json out = {{"name", c.name},
          {"seed", c.seed},
          {"servers_x", c.shape.servers_x},
          {"servers_y", c.shape.servers_y},
          {"server", {{"xpus", c.shape.server.xpus}, {"lanes_per_xpu", c.shape.server.lanes_per_xpu},
                      {"mesh_ports", c.shape.server.mesh_ports}, {"clock_mhz", c.server.clock_mhz}}},
          {"settle", to_string(c.server.mesh.settle)},
          {"spare_ready", c.spare_ready},
          {"mesh_extinction_db", c.server.mesh.extinction_db},
          {"fibres_per_neighbour", c.shape.fibres_per_neighbour},
          {"fibres", fibres},
          {"tenant", rack_placement_json(c.tenant)},
          {"run_us", c.run_us},
          {"faults", faults}};
  if (!c.co_tenants.empty()) {
    out["co_tenants"] = json::array();
    for (const auto& p : c.co_tenants) out["co_tenants"].push_back(rack_placement_json(p));
  }
  return out;
}

}  // namespace mxtb::app
