#include "sim/mesh/photonic_mesh.h"

#include "sim/common/json_file.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

namespace mxtb::sim {

using nlohmann::json;

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kInf = std::numeric_limits<double>::infinity();

double mw_from_dbm(double dbm) { return std::pow(10.0, dbm / 10.0); }
double dbm_from_mw(double mw) { return mw > 0 ? 10.0 * std::log10(mw) : -kInf; }

// splitmix64: a fixed integer sequence, so a seed gives the same elements everywhere.
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int draw_around(uint64_t& state, int nominal, int spread) {
  // The modulo bias is below 1e-16 for these ranges.
  return nominal - spread + static_cast<int>(splitmix64(state) % static_cast<uint64_t>(2 * spread + 1));
}

}  // namespace

double preset_tau_ns(SettlePreset preset) {
  switch (preset) {
    case SettlePreset::ThermoOptic: return 10e3;
    case SettlePreset::ElectroOptic: return 1.0;
    case SettlePreset::Mems: return 1e6;
  }
  return 10e3;
}

const char* to_string(SettlePreset preset) {
  switch (preset) {
    case SettlePreset::ThermoOptic: return "thermo_optic";
    case SettlePreset::ElectroOptic: return "electro_optic";
    case SettlePreset::Mems: return "mems";
  }
  return "?";
}

std::optional<SettlePreset> settle_preset_from_string(const std::string& name) {
  for (SettlePreset p : {SettlePreset::ThermoOptic, SettlePreset::ElectroOptic, SettlePreset::Mems})
    if (name == to_string(p)) return p;
  return std::nullopt;
}

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::Lit: return "lit";
    case Verdict::Garbled: return "garbled";
    case Verdict::Dark: return "dark";
  }
  return "?";
}

std::vector<firmware::ElementCal> draw_true_codes(int ports, uint64_t seed, const ElementVariation& v) {
  auto topology = firmware::BenesTopology::create(ports);
  if (!topology) throw MeshError(topology.error());
  uint64_t state = seed;
  std::vector<firmware::ElementCal> codes(static_cast<size_t>(topology.value().elements()));
  for (auto& c : codes) {
    c.bar_code = static_cast<uint16_t>(std::clamp(draw_around(state, v.bar_nominal, v.bar_spread), 0, 65535));
    c.cross_code = static_cast<uint16_t>(std::clamp(draw_around(state, v.cross_nominal, v.cross_spread), 0, 65535));
  }
  return codes;
}

namespace {
firmware::BenesTopology make_topology(int ports) {
  auto t = firmware::BenesTopology::create(ports);
  if (!t) throw MeshError("mesh: " + t.error());
  return t.value();
}
}  // namespace

PhotonicMesh::PhotonicMesh(MeshConfig config)
    : config_(std::move(config)), topology_(make_topology(config_.ports)), tau_ns_(0) {
  const MeshConfig& c = config_;
  if (c.tau_ns && !(*c.tau_ns > 0)) throw MeshError(fmt::format("mesh: tau_ns must be > 0, got {}", *c.tau_ns));
  tau_ns_ = c.tau_ns ? *c.tau_ns : preset_tau_ns(c.settle);
  if (!(c.insertion_loss_db >= 0)) throw MeshError(fmt::format("mesh: insertion_loss_db must be >= 0, got {}", c.insertion_loss_db));
  if (!(c.extinction_db > 3.0103))
    throw MeshError(fmt::format("mesh: extinction_db must be > 3.01 (an even split), got {}", c.extinction_db));
  if (!(c.sxr_limit_db >= 0)) throw MeshError(fmt::format("mesh: sxr_limit_db must be >= 0, got {}", c.sxr_limit_db));
  if (c.dac_bits < 1 || c.dac_bits > 16) throw MeshError(fmt::format("mesh: dac_bits must be in [1, 16], got {}", c.dac_bits));
  if (config_.true_codes.empty()) config_.true_codes = draw_true_codes(c.ports, c.seed, c.variation);
  for (size_t e = 0; e < config_.true_codes.size(); ++e)
    if (config_.true_codes[e].bar_code == config_.true_codes[e].cross_code)
      throw MeshError(fmt::format("mesh: element {}: true bar and cross codes are equal", e));
  if (config_.true_codes.size() != static_cast<size_t>(topology_.elements()))
    throw MeshError(fmt::format("mesh: {} true codes given, a {}-port mesh has {} elements", config_.true_codes.size(),
                                c.ports, topology_.elements()));
  elements_.resize(static_cast<size_t>(topology_.elements()));
  for (int e = 0; e < elements(); ++e) {
    Element& el = elements_[static_cast<size_t>(e)];
    el.start_phase = el.target_phase = phase_of_code(e, 0);
  }
  lit_.assign(static_cast<size_t>(c.ports), true);
  input_mw_.assign(static_cast<size_t>(c.ports), mw_from_dbm(c.laser_dbm));
  carried_ratio_.assign(static_cast<size_t>(c.ports), 0.0);
}

void PhotonicMesh::check_element(int element) const {
  if (element < 0 || element >= elements())
    throw MeshError(fmt::format("mesh: element {} does not exist (0..{})", element, elements() - 1));
}

void PhotonicMesh::check_port(int port) const {
  if (port < 0 || port >= config_.ports)
    throw MeshError(fmt::format("mesh: port {} does not exist (0..{})", port, config_.ports - 1));
}

double PhotonicMesh::phase_of_code(int element, uint16_t code) const {
  const firmware::ElementCal& t = config_.true_codes[static_cast<size_t>(element)];
  return (static_cast<double>(code) - t.bar_code) / (static_cast<double>(t.cross_code) - t.bar_code) * (kPi / 2);
}

void PhotonicMesh::write_dac(int element, uint16_t code, double now_ns) {
  check_element(element);
  if (code >= (1u << config_.dac_bits))
    throw MeshError(fmt::format("mesh: element {}: DAC code {} exceeds {} bits", element, code, config_.dac_bits));
  Element& el = elements_[static_cast<size_t>(element)];
  // The new response starts from wherever the phase is now (a write mid-transition bends it).
  el.start_phase = phase_rad(element, now_ns);
  el.start_ns = now_ns;
  el.code = code;
  el.target_phase = phase_of_code(element, code);
}

void PhotonicMesh::write_all(const std::vector<uint16_t>& codes, double now_ns) {
  if (codes.size() != elements_.size())
    throw MeshError(fmt::format("mesh: {} codes written, the mesh has {} elements", codes.size(), elements_.size()));
  for (int e = 0; e < elements(); ++e)
    if (codes[static_cast<size_t>(e)] != elements_[static_cast<size_t>(e)].code) write_dac(e, codes[static_cast<size_t>(e)], now_ns);
}

uint16_t PhotonicMesh::dac_code(int element) const {
  check_element(element);
  return elements_[static_cast<size_t>(element)].code;
}

double PhotonicMesh::phase_rad(int element, double now_ns) const {
  check_element(element);
  const Element& el = elements_[static_cast<size_t>(element)];
  const double elapsed = std::max(0.0, now_ns - el.start_ns);
  return el.target_phase + (el.start_phase - el.target_phase) * std::exp(-elapsed / tau_ns_);
}

double PhotonicMesh::target_phase_rad(int element) const {
  check_element(element);
  return elements_[static_cast<size_t>(element)].target_phase;
}

void PhotonicMesh::set_input_lit(int port, bool lit) {
  check_port(port);
  const size_t k = static_cast<size_t>(port);
  lit_[k] = lit;
  input_mw_[k] = mw_from_dbm(config_.laser_dbm);
  carried_ratio_[k] = 0.0;
}

void PhotonicMesh::set_input_light(int port, double signal_dbm, double crosstalk_dbm) {
  check_port(port);
  if (std::isnan(signal_dbm) || std::isnan(crosstalk_dbm) || signal_dbm == kInf || crosstalk_dbm == kInf)
    throw MeshError(fmt::format("mesh: port {}: light of {} dBm with {} dBm crosstalk is not a power", port, signal_dbm, crosstalk_dbm));
  const size_t k = static_cast<size_t>(port);
  const double signal_mw = mw_from_dbm(signal_dbm);
  lit_[k] = signal_mw > 0;
  input_mw_[k] = signal_mw;
  carried_ratio_[k] = signal_mw > 0 ? mw_from_dbm(crosstalk_dbm) / signal_mw : 0.0;
}

bool PhotonicMesh::input_lit(int port) const {
  check_port(port);
  return lit_[static_cast<size_t>(port)];
}

void PhotonicMesh::save(State& s) const {
  s.elements_ = elements_;
  s.lit_ = lit_;
  s.input_mw_ = input_mw_;
  s.carried_ratio_ = carried_ratio_;
}

void PhotonicMesh::restore(const State& s) {
  elements_ = s.elements_;
  lit_ = s.lit_;
  input_mw_ = s.input_mw_;
  carried_ratio_ = s.carried_ratio_;
}

Propagation PhotonicMesh::propagate(double now_ns) const {
  Propagation result;
  propagate_into(now_ns, result);
  return result;
}

void PhotonicMesh::propagate_into(double now_ns, Propagation& result) const {
  const int n = config_.ports;
  const int rows = topology_.rows();
  const double transmission = mw_from_dbm(-config_.insertion_loss_db);
  const double leak_floor = mw_from_dbm(-config_.extinction_db);
  // Each element's bar fraction, with the transmission folded in; cross is the rest.
  std::vector<double> bar(elements_.size()), cross(elements_.size());
  for (int e = 0; e < elements(); ++e) {
    const double c = std::cos(phase_rad(e, now_ns));
    const double bar_fraction = std::clamp(c * c, leak_floor, 1.0 - leak_floor);
    bar[static_cast<size_t>(e)] = transmission * bar_fraction;
    cross[static_cast<size_t>(e)] = transmission * (1.0 - bar_fraction);
  }

  result.power_mw.resize(static_cast<size_t>(n));
  for (auto& row : result.power_mw) row.assign(static_cast<size_t>(n), 0.0);
  // Light is traced as power: incoherent addition (docs/mesh.md says what that leaves out). Every
  // lit input is traced at once, each through the same products as alone: at[position][k] is
  // the k-th lit input's power at a stage's input position.
  std::vector<int> lit_inputs;
  for (int input = 0; input < n; ++input)
    if (lit_[static_cast<size_t>(input)]) lit_inputs.push_back(input);
  const size_t k_lit = lit_inputs.size();
  if (k_lit > 0) {
    std::vector<double> at(static_cast<size_t>(n) * k_lit, 0.0), outs(static_cast<size_t>(n) * k_lit);
    for (size_t k = 0; k < k_lit; ++k)  // input port p is stage 0's position p
      at[static_cast<size_t>(lit_inputs[k]) * k_lit + k] = input_mw_[static_cast<size_t>(lit_inputs[k])];
    for (int stage = 0; stage < topology_.stages(); ++stage) {
      for (int row = 0; row < rows; ++row) {
        const size_t e = static_cast<size_t>(topology_.element_index(stage, row));
        const double b = bar[e], c = cross[e];
        const double* in0 = &at[static_cast<size_t>(2 * row) * k_lit];
        const double* in1 = in0 + k_lit;
        double* out0 = &outs[static_cast<size_t>(2 * row) * k_lit];
        double* out1 = out0 + k_lit;
        for (size_t k = 0; k < k_lit; ++k) {
          out0[k] = in0[k] * b + in1[k] * c;
          out1[k] = in0[k] * c + in1[k] * b;
        }
      }
      if (stage + 1 < topology_.stages())
        for (int pos = 0; pos < n; ++pos)
          std::copy_n(&outs[static_cast<size_t>(pos) * k_lit], k_lit,
                      &at[static_cast<size_t>(topology_.next_input_position(stage, pos)) * k_lit]);
    }
    for (int row = 0; row < rows; ++row)
      for (int side = 0; side < 2; ++side) {
        const size_t port = static_cast<size_t>(topology_.port_of_output(row, side));
        const double* from = &outs[static_cast<size_t>(2 * row + side) * k_lit];
        for (size_t k = 0; k < k_lit; ++k) result.power_mw[static_cast<size_t>(lit_inputs[k])][port] = from[k];
      }
  }

  const double sensitivity_mw = mw_from_dbm(config_.sensitivity_dbm);
  result.outputs.assign(static_cast<size_t>(n), OutputReading{});
  for (int out = 0; out < n; ++out) {
    OutputReading& r = result.outputs[static_cast<size_t>(out)];
    double total = 0, strongest = 0, carried = 0;
    for (int input = 0; input < n; ++input) {
      const double p = result.power_mw[static_cast<size_t>(input)][static_cast<size_t>(out)];
      total += p;
      if (carried_ratio_[static_cast<size_t>(input)] > 0) carried += p * carried_ratio_[static_cast<size_t>(input)];
      if (p > strongest) {
        strongest = p;
        r.dominant_input = input;
      }
    }
    // Crosstalk that came in through a fibre rides with its signal: never the dominant part.
    total += carried;
    const double crosstalk = total - strongest;
    r.signal_dbm = dbm_from_mw(strongest);
    r.crosstalk_dbm = dbm_from_mw(crosstalk);
    r.total_dbm = dbm_from_mw(total);
    r.sxr_db = crosstalk > 0 ? r.signal_dbm - r.crosstalk_dbm : kInf;
    if (total < sensitivity_mw)
      r.verdict = Verdict::Dark;
    else if (strongest >= sensitivity_mw && r.sxr_db >= config_.sxr_limit_db)
      r.verdict = Verdict::Lit;
    else
      r.verdict = Verdict::Garbled;
  }
}

double PhotonicMesh::monitor_dbm(int port, double now_ns) const {
  check_port(port);
  return propagate(now_ns).outputs[static_cast<size_t>(port)].total_dbm;
}

int16_t PhotonicMesh::monitor_code(int port, double now_ns) const {
  return monitor_code_from_dbm(monitor_dbm(port, now_ns));
}

int16_t monitor_code_from_dbm(double dbm) {
  if (std::isnan(dbm) || dbm * 100.0 <= -32768.0) return INT16_MIN;
  if (dbm * 100.0 >= 32767.0) return INT16_MAX;
  return static_cast<int16_t>(std::lround(dbm * 100.0));
}

double dbm_from_monitor_code(int16_t code) { return code == INT16_MIN ? -kInf : code / 100.0; }

bool PhotonicMesh::settled(double now_ns, double tolerance_rad) const {
  for (int e = 0; e < elements(); ++e)
    if (std::abs(phase_rad(e, now_ns) - elements_[static_cast<size_t>(e)].target_phase) > tolerance_rad) return false;
  return true;
}

double PhotonicMesh::settled_at_ns(double tolerance_rad) const {
  double latest = 0;
  for (const Element& el : elements_) {
    const double distance = std::abs(el.start_phase - el.target_phase);
    // |distance| * exp(-t / tau) <= tolerance from t = tau * ln(distance / tolerance) on.
    const double at = distance > tolerance_rad ? el.start_ns + tau_ns_ * std::log(distance / tolerance_rad) : el.start_ns;
    latest = std::max(latest, at);
  }
  return latest;
}

double PhotonicMesh::time_to_settle_ns(double now_ns, double tolerance_rad) const {
  return std::max(0.0, settled_at_ns(tolerance_rad) - now_ns);
}

ReceivedBlock receive_block(Verdict verdict, const Raw66& dominant_word, std::mt19937_64& rng) {
  switch (verdict) {
    case Verdict::Lit: return {dominant_word, true};
    case Verdict::Garbled: {
      // Enough light for signal detect, but two interfering signals: the bits are noise.
      Raw66 noise;
      noise.lo = rng();
      noise.hi = static_cast<uint8_t>(rng() & 3u);
      return {noise, true};
    }
    case Verdict::Dark: break;
  }
  return {Raw66{}, false};
}

// ---- calibration files ----

namespace {

[[noreturn]] void fail(const std::string& source, const std::string& where, const std::string& what) {
  throw MeshError(fmt::format("{}: {}: {}", source, where, what));
}

// An integer field of `obj` (at JSON path `where`) in [min, max]; missing is an error.
int64_t required_int(const json& obj, const char* key, int64_t min, int64_t max, const std::string& source,
                     const std::string& where) {
  const std::string path = where + "." + key;
  if (!obj.contains(key)) fail(source, path, "missing");
  const json& v = obj.at(key);
  if (!v.is_number_integer()) fail(source, path, fmt::format("must be an integer, got {}", v.dump()));
  const int64_t x = v.is_number_unsigned() ? static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), INT64_MAX))
                                           : v.get<int64_t>();
  if (x < min || x > max) fail(source, path, fmt::format("must be in [{}, {}], got {}", min, max, x));
  return x;
}

void reject_unknown(const json& obj, std::initializer_list<const char*> known, const std::string& source,
                    const std::string& where) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (!ok) fail(source, where + "." + it.key(), "unknown field");
  }
}

}  // namespace

MeshCalibration parse_calibration(const json& j, const std::string& source) {
  if (!j.is_object()) fail(source, "$", "must be an object");
  reject_unknown(j, {"ports", "dac_bits", "note", "elements"}, source, "$");
  MeshCalibration cal;
  cal.ports = static_cast<int>(required_int(j, "ports", 0, 1 << 20, source, "$"));
  const std::string bad_ports = firmware::check_port_count(cal.ports);
  if (!bad_ports.empty()) fail(source, "$.ports", bad_ports);
  const int64_t dac_bits = required_int(j, "dac_bits", firmware::kDacBits, firmware::kDacBits, source, "$");
  const int64_t dac_max = (int64_t{1} << dac_bits) - 1;
  if (!j.contains("elements")) fail(source, "$.elements", "missing");
  const json& list = j.at("elements");
  if (!list.is_array()) fail(source, "$.elements", "must be an array");
  const int expected = make_topology(cal.ports).elements();
  if (list.size() != static_cast<size_t>(expected))
    fail(source, "$.elements",
         fmt::format("has {} entries, a {}-port mesh has {} elements", list.size(), cal.ports, expected));
  for (size_t e = 0; e < list.size(); ++e) {
    const std::string where = fmt::format("$.elements[{}]", e);
    const json& entry = list[e];
    if (!entry.is_object()) fail(source, where, "must be an object");
    reject_unknown(entry, {"element", "bar_code", "cross_code"}, source, where);
    // The index is written out so that a reordered or truncated file cannot go unnoticed.
    required_int(entry, "element", static_cast<int64_t>(e), static_cast<int64_t>(e), source, where);
    firmware::ElementCal c;
    c.bar_code = static_cast<uint16_t>(required_int(entry, "bar_code", 0, dac_max, source, where));
    c.cross_code = static_cast<uint16_t>(required_int(entry, "cross_code", 0, dac_max, source, where));
    if (c.bar_code == c.cross_code) fail(source, where, "bar_code and cross_code must differ");
    cal.elements.push_back(c);
  }
  return cal;
}

MeshCalibration load_calibration(const std::string& path) {
  return parse_calibration(read_json_file<MeshError>(path, "calibration file"), path);
}

std::string calibration_to_text(const MeshCalibration& cal, const std::string& note) {
  std::string out = fmt::format("{{\n  \"ports\": {},\n  \"dac_bits\": {},\n  \"note\": {},\n  \"elements\": [\n",
                                cal.ports, firmware::kDacBits, json(note).dump());
  for (size_t e = 0; e < cal.elements.size(); ++e)
    out += fmt::format("    {{\"element\": {}, \"bar_code\": {}, \"cross_code\": {}}}{}\n", e,
                       cal.elements[e].bar_code, cal.elements[e].cross_code, e + 1 < cal.elements.size() ? "," : "");
  out += "  ]\n}\n";
  return out;
}

void save_calibration(const std::string& path, const MeshCalibration& cal, const std::string& note) {
  std::ofstream out(path);
  if (!out) throw MeshError(fmt::format("{}: cannot write calibration file", path));
  out << calibration_to_text(cal, note);
  if (!out) throw MeshError(fmt::format("{}: write failed", path));
}

}  // namespace mxtb::sim
