#include "scenario.h"

#include "json_file.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <random>
#include <set>

namespace mxtb::sim {

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
  std::string kind = f.choice("kind", "", {"dark", "ber", "swap_peer", "disable", "enable", "retrain"});
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
  j["faults"] = faults;
  return parse_link_pair_scenario(j, fmt::format("random scenario (seed {})", seed));
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
                {"first_error", d.first_error}};
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
  return json{{"cycles", r.cycles}, {"passed", r.passed()}, {"failures", r.failures},
              {"drained", r.drained}, {"a", ep(r.a)}, {"b", ep(r.b)},
              {"ab", dir(r.ab)}, {"ba", dir(r.ba)}, {"channel_ab", ch(r.ch_ab)},
              {"channel_ba", ch(r.ch_ba)}, {"transitions", tr}};
}

}  // namespace mxtb::sim
