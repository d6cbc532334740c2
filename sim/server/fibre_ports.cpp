#include "sim/server/fibre_ports.h"

#include <fmt/format.h>

#include <stdexcept>

namespace mxtb::sim {

namespace {
uint64_t ring_size(uint32_t window) {
  uint64_t n = 1;
  while (n < 2ull * window + 2) n <<= 1;
  return n;
}
}  // namespace

FibrePorts::FibrePorts(const std::vector<int>& ports, int links, int mesh_ports, uint32_t window_cycles, uint64_t seed)
    : ports_(ports), index_(static_cast<size_t>(mesh_ports), -1), window_(window_cycles), rng_(seed) {
  if (window_cycles < 1) throw std::invalid_argument("server: fibre window_cycles must be >= 1");
  for (size_t k = 0; k < ports_.size(); ++k) {
    const int p = ports_[k];
    if (p < links || p >= mesh_ports)
      throw std::invalid_argument(fmt::format("server: fibre port {} is not a fibre port of this mesh ({}..{}: ports 0..{} carry lanes)", p,
                                              links, mesh_ports - 1, links - 1));
    if (index_[static_cast<size_t>(p)] >= 0) throw std::invalid_argument(fmt::format("server: fibre port {} is joined twice", p));
    index_[static_cast<size_t>(p)] = static_cast<int>(k);
  }
  const uint64_t n = ring_size(window_cycles);
  mask_ = n - 1;
  in_.assign(n * ports_.size(), FibreSample{});
  out_.assign(n * ports_.size(), FibreSample{});
  const float dark = -std::numeric_limits<float>::infinity();
  applied_.assign(ports_.size(), {dark, dark});
}

bool FibrePorts::light_inputs(PhotonicMesh& mesh, uint64_t t) {
  bool changed = false;
  for (size_t k = 0; k < ports_.size(); ++k) {
    const FibreSample& s = in_[slot(static_cast<int>(k), t)];
    auto& a = applied_[k];
    if (a.first == s.signal_dbm && a.second == s.crosstalk_dbm) continue;
    a = {s.signal_dbm, s.crosstalk_dbm};
    mesh.set_input_light(ports_[k], s.signal_dbm, s.crosstalk_dbm);
    changed = true;
  }
  return changed;
}

}  // namespace mxtb::sim
