// The photonic mesh: a Beneš network (firmware/benes.h) of 2x2 Mach-Zehnder switch elements
// between the XPUs' optical lanes. Each element's phase follows its DAC code with a first-order
// settle; light is traced as incoherent power through every element, so switching transients,
// insertion loss, finite extinction and miscalibration show up as dark or garbled outputs.
// Plain C++ (the SystemC wrapper is the integration's). Physics, parameters, file format:
// docs/mesh.md.
#pragma once

#include "firmware/benes.h"
#include "firmware/calibration.h"
#include "sim/link/link_codec.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace mxtb::sim {

// Invalid configuration, element or port, or a bad calibration file (the message names it).
struct MeshError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// How fast an element's phase follows its drive: the first-order time constant tau.
enum class SettlePreset { ThermoOptic, ElectroOptic, Mems };
double preset_tau_ns(SettlePreset preset);  // 10 us, 1 ns, 1 ms
const char* to_string(SettlePreset preset);  // "thermo_optic", "electro_optic", "mems"
std::optional<SettlePreset> settle_preset_from_string(const std::string& name);

// Fabrication spread of the elements' true bar/cross codes: uniform in nominal +- spread.
struct ElementVariation {
  int bar_nominal = firmware::kNominalBarCode;
  int bar_spread = 60;
  int cross_nominal = firmware::kNominalCrossCode;
  int cross_spread = 150;
};

struct MeshConfig {
  int ports = 32;
  SettlePreset settle = SettlePreset::ThermoOptic;
  std::optional<double> tau_ns;      // overrides the preset's time constant
  double insertion_loss_db = 0.15;   // per element passed
  double extinction_db = 30.0;       // floor: at least 10^(-ER/10) of the light leaks to the other output
  double laser_dbm = 0.0;            // each lit input
  double sensitivity_dbm = -18.0;    // receiver: below this total power the output is dark
  double sxr_limit_db = 20.0;        // signal-to-crosstalk ratio a receiver needs
  int dac_bits = 12;
  uint64_t seed = 1;                 // draws the elements' true codes
  ElementVariation variation;
  // The codes at which each element is exactly bar (phase 0) and exactly cross (phase pi/2).
  // Empty: drawn from `seed` and `variation` (draw_true_codes).
  std::vector<firmware::ElementCal> true_codes;
};

// The elements' true codes for a mesh of `ports` ports: deterministic for a seed, identical on
// every platform (own integer mapping, not std:: distributions).
std::vector<firmware::ElementCal> draw_true_codes(int ports, uint64_t seed, const ElementVariation& variation = {});

enum class Verdict { Lit, Garbled, Dark };
const char* to_string(Verdict v);

struct OutputReading {
  int dominant_input = -1;       // the input contributing most power; -1 when no light at all
  double signal_dbm = 0;         // the dominant input's power (-inf when none)
  double crosstalk_dbm = 0;      // every other input's power summed (-inf when none)
  double total_dbm = 0;          // what a photodiode sees
  double sxr_db = 0;             // signal_dbm - crosstalk_dbm (+inf without crosstalk)
  Verdict verdict = Verdict::Dark;
};

struct Propagation {
  std::vector<std::vector<double>> power_mw;  // [input][output]; all zero for a dark input
  std::vector<OutputReading> outputs;         // [output]
};

class PhotonicMesh {
 public:
  // Throws MeshError on an invalid configuration. Every element starts settled at DAC code 0
  // (the undriven phase, neither bar nor cross), every input lit.
  explicit PhotonicMesh(MeshConfig config);

  const MeshConfig& config() const { return config_; }
  const firmware::BenesTopology& topology() const { return topology_; }
  int elements() const { return topology_.elements(); }
  double tau_ns() const { return tau_ns_; }
  const std::vector<firmware::ElementCal>& true_codes() const { return config_.true_codes; }

  // Drives an element's DAC from `now_ns` on; its phase moves towards the code's phase.
  // Times must not go backwards per element. Throws MeshError on a bad element or code.
  void write_dac(int element, uint16_t code, double now_ns);
  // Every element at once (codes.size() == elements()); an unchanged code restarts nothing.
  void write_all(const std::vector<uint16_t>& codes, double now_ns);
  uint16_t dac_code(int element) const;

  double phase_rad(int element, double now_ns) const;
  double target_phase_rad(int element) const;
  // The phase a code gives this element once settled.
  double phase_of_code(int element, uint16_t code) const;

  // An XPU's laser on or off (off: dead XPU, or link layer in reset), at the configured laser power.
  void set_input_lit(int port, bool lit);
  bool input_lit(int port) const;
  // Light arriving from a fibre (a rack's port towards another server's mesh, docs/rack.md): its
  // signal at `signal_dbm` (-inf: none, the input is dark) and the crosstalk the other mesh
  // already mixed into it at `crosstalk_dbm`, which rides along with the signal wherever it goes,
  // so a receiver's signal-to-crosstalk ratio counts both meshes.
  void set_input_light(int port, double signal_dbm, double crosstalk_dbm);

  Propagation propagate(double now_ns) const;
  // The same into `out`, reusing its storage (the server re-traces light every few clocks while
  // elements move).
  void propagate_into(double now_ns, Propagation& out) const;

  // The monitor photodiode at an output: total power, as dBm and as the controller reads it:
  // int16 in 0.01 dB units (dBm * 100, rounded), saturating; -32768 means no light.
  double monitor_dbm(int port, double now_ns) const;
  int16_t monitor_code(int port, double now_ns) const;

  // Every element within tolerance of its target phase at `now_ns`.
  bool settled(double now_ns, double tolerance_rad) const;
  // The simulated time from which every element stays within tolerance (given no new writes).
  double settled_at_ns(double tolerance_rad) const;
  // How long from `now_ns` until then (0 when already settled).
  double time_to_settle_ns(double now_ns, double tolerance_rad) const;

  // What DAC writes and lights change, for a caller that must undo them (the fast server
  // engine's rollbacks); the configuration never changes.
  class State;
  void save(State& s) const;
  void restore(const State& s);

 private:
  struct Element {
    uint16_t code = 0;
    double start_phase = 0;   // phase at start_ns
    double target_phase = 0;  // phase the code drives towards
    double start_ns = 0;
  };
  void check_element(int element) const;
  void check_port(int port) const;

  MeshConfig config_;
  firmware::BenesTopology topology_;
  double tau_ns_;
  std::vector<Element> elements_;
  std::vector<bool> lit_;
  std::vector<double> input_mw_;       // each lit input's signal power
  std::vector<double> carried_ratio_;  // crosstalk that arrived with it, as a share of its signal
};

class PhotonicMesh::State {
  friend class PhotonicMesh;
  std::vector<Element> elements_;
  std::vector<bool> lit_;
  std::vector<double> input_mw_, carried_ratio_;
};

int16_t monitor_code_from_dbm(double dbm);
double dbm_from_monitor_code(int16_t code);  // -inf for -32768

// What the receiver behind an output sees, given its verdict and the 66-bit word its dominant
// input sends: Lit -> the word, signal detect; Garbled -> random bits, signal detect (enough
// light, unreadable); Dark -> no signal detect (the word is zero).
struct ReceivedBlock {
  Raw66 raw;
  bool signal_detect = false;
};
ReceivedBlock receive_block(Verdict verdict, const Raw66& dominant_word, std::mt19937_64& rng);

// A calibration file: the codes that make each element exactly bar and cross.
struct MeshCalibration {
  int ports = 0;
  std::vector<firmware::ElementCal> elements;  // index = element (stage * ports / 2 + row)
};
// Errors (MeshError) name the source and the field: "file: $.elements[3].bar_code: ...".
MeshCalibration parse_calibration(const nlohmann::json& j, const std::string& source);
MeshCalibration load_calibration(const std::string& path);
// One element a line, so a diff shows which element was recalibrated. `note` says how it was made.
std::string calibration_to_text(const MeshCalibration& cal, const std::string& note);
void save_calibration(const std::string& path, const MeshCalibration& cal, const std::string& note);

}  // namespace mxtb::sim
