// The mesh ports of a server that are joined to fibres towards other servers' meshes (a rack,
// docs/rack.md). A board wires its XPUs' lanes to mesh ports 0..links-1; the ports above carry no
// lane: in a rack each is one end of a fibre (one strand each way). Per clock, what arrives on a
// joined port lights the mesh's input there, and what the mesh sends out of it is recorded for
// the rack to carry to the far end. Both engines do this at the same points of the clock, so they
// stay identical to the cycle.
#pragma once

#include "sim/link/link_codec.h"
#include "sim/mesh/photonic_mesh.h"

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace mxtb::sim {

// One clock of light through one strand of a fibre: the power of the signal and of the crosstalk
// mixed into it (the far mesh's crosstalk rides along), and the 66-bit word the signal carries
// (noise when the sending mesh's output was garbled, zero when dark).
struct FibreSample {
  float signal_dbm = -std::numeric_limits<float>::infinity();  // -inf: no light
  float crosstalk_dbm = -std::numeric_limits<float>::infinity();
  Raw66 raw;
  bool operator==(const FibreSample& o) const {
    return signal_dbm == o.signal_dbm && crosstalk_dbm == o.crosstalk_dbm && raw.lo == o.raw.lo && raw.hi == o.raw.hi;
  }
};

class FibrePorts {
 public:
  // `ports`: the joined mesh ports, each in [links, mesh_ports), no port twice (std::invalid_argument
  // otherwise). The rings hold `window_cycles` clocks ahead and behind: the most the rack runs
  // between exchanges.
  FibrePorts(const std::vector<int>& ports, int links, int mesh_ports, uint32_t window_cycles, uint64_t seed);

  bool any() const { return !ports_.empty(); }
  const std::vector<int>& ports() const { return ports_; }
  int index(int port) const {  // -1: not joined
    return port >= 0 && static_cast<size_t>(port) < index_.size() ? index_[static_cast<size_t>(port)] : -1;
  }
  uint32_t window_cycles() const { return window_; }

  // What arrives on joined port number k (index()) at clock `cycle`: the rack writes it before the
  // server runs that clock, at most window_cycles() ahead.
  FibreSample& in(int k, uint64_t cycle) { return in_[slot(k, cycle)]; }
  // What leaves it at `cycle`: the rack reads it after the server ran that clock, at most
  // window_cycles() behind.
  const FibreSample& out(int k, uint64_t cycle) const { return out_[slot(k, cycle)]; }

  // Clock t's first step: each joined input's light as it arrives. Returns true when any changed
  // (the light must be re-traced).
  bool light_inputs(PhotonicMesh& mesh, uint64_t t);
  // The word a receiver reads at clock t from mesh input `port` when that input is a fibre's.
  Raw66 word_in(int port, uint64_t t) {
    const int k = index(port);
    return k < 0 ? Raw66{} : in(k, t).raw;
  }
  // What each joined port sends at clock t: the light leaving it (the traced reading) and the
  // word its dominant input carries, `word_of(input)` (a lane's word before the clock, or what a
  // fibre brings in: a circuit may pass through a server).
  template <class WordOf>
  void record_outputs(const Propagation& light, uint64_t t, WordOf&& word_of) {
    for (size_t k = 0; k < ports_.size(); ++k) {
      const OutputReading& r = light.outputs[static_cast<size_t>(ports_[k])];
      FibreSample& s = out_[slot(static_cast<int>(k), t)];
      s.signal_dbm = static_cast<float>(r.signal_dbm);
      s.crosstalk_dbm = static_cast<float>(r.crosstalk_dbm);
      switch (r.verdict) {
        case Verdict::Lit: s.raw = word_of(r.dominant_input); break;
        case Verdict::Garbled: s.raw = receive_block(Verdict::Garbled, Raw66{}, rng_).raw; break;
        case Verdict::Dark: s.raw = Raw66{}; break;
      }
    }
  }

 private:
  size_t slot(int k, uint64_t cycle) const { return (cycle & mask_) * ports_.size() + static_cast<size_t>(k); }
  std::vector<int> ports_;
  std::vector<int> index_;  // per mesh port
  uint32_t window_ = 1;
  uint64_t mask_ = 0;
  std::vector<FibreSample> in_, out_;
  std::vector<std::pair<float, float>> applied_;  // the light each joined input of the mesh holds
  std::mt19937_64 rng_;  // noise of garbled outputs, apart from the server's generator
};

}  // namespace mxtb::sim
