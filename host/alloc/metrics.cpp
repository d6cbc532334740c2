// Metrics: allocation bandwidth, all-reduce and step time, fragmentation, blast radius, spares.
#include <algorithm>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "alloc.h"

namespace mxtb::host::alloc {

double slice_bandwidth(const Slice& s) {
  const int n = s.shape.volume();
  if (n == 1) return 1.0;  // a single chip has no slice traffic: nothing is lost
  if (s.kind == SliceKind::RackFabric) {
    long lanes = 0;
    for (const auto& c : s.circuits) lanes += 2L * c.lanes;
    return static_cast<double>(lanes) / (static_cast<double>(kPortsPerChip) * n);
  }
  // Contiguous torus (in a rack or whole cubes): per chip, a dimension of extent 1 uses none of
  // its 2 ports, extent 2 one port (the other leads out of the slice), extent >= 3 both.
  int ports = 0;
  for (int e : s.shape.d) ports += e == 1 ? 0 : e == 2 ? 1 : 2;
  return static_cast<double>(ports) / kPortsPerChip;
}

double allreduce_seconds(const Shape& shape, double bw, const StepModel& m) {
  const int n = shape.volume();
  if (n <= 1) return 0.0;
  if (bw <= 0) throw std::invalid_argument("allreduce_seconds: zero bandwidth");
  double per_chip_bytes_s = bw * kPortsPerChip * m.port_gbps * 1e9;
  double volume = 2.0 * (n - 1) / n * m.grad_bytes;
  int steps = 0;
  for (int e : shape.d) steps += e - 1;
  return volume / per_chip_bytes_s + 2.0 * steps * m.hop_latency_s;
}

double step_seconds(const Shape& shape, double bw, const StepModel& m) {
  return m.compute_s + allreduce_seconds(shape, bw, m);
}

double rack_fragmentation(const Datacenter& dc, int r, Policy p, const std::vector<Shape>& shapes,
                          int* largest) {
  AllocOptions o;
  o.policy = p;
  return rack_fragmentation(dc, r, o, shapes, largest);
}

double rack_fragmentation(const Datacenter& dc, int r, const AllocOptions& o, const std::vector<Shape>& shapes,
                          int* largest) {
  const int T = dc.rack_free(r);
  int S = 0;
  if (T > 0) {
    RackView v = rack_view(dc, r);
    for (const auto& sh : shapes) {
      if (sh.volume() > T || sh.volume() > kChipsPerRack || sh.volume() <= S) continue;
      bool fits = false;
      if (o.policy == Policy::Baseline && o.baseline == BaselineMode::Aligned) {
        // Only the canonical shapes exist for the aligned baseline.
        fits = aligned_shape(sh.volume()).volume() == sh.volume() &&
               aligned_place_in_rack(dc, r, sh.volume()).has_value();
      } else {
        // Morphlux can also take any contiguous box the baseline can (native torus links).
        fits = baseline_place_in_rack(dc, r, sh).has_value();
        if (!fits && o.policy == Policy::Morphlux)
          fits = o.fabric == FabricMode::Server ? server_place_in_rack(dc, r, sh).has_value()
                                                 : !fabric_heuristic(v, sh).empty();
      }
      if (fits) S = sh.volume();
    }
  }
  if (largest) *largest = S;
  return T == 0 ? 0.0 : 1.0 - static_cast<double>(S) / T;
}

int blast_radius(const Datacenter& dc, int g, Policy p) {
  int id = dc.owner(g);
  if (id < 0) return 0;
  const Slice& s = dc.slice(id);
  if (s.kind == SliceKind::MultiRack) return kChipsPerRack;  // the OCS swaps in a whole cube
  const int n = s.shape.volume();
  if (p == Policy::Baseline || s.kind == SliceKind::RackTorus) return n;
  // Morphlux: a free chip of the rack takes the failed chip's place if every circuit of the
  // failed chip can be re-pointed at it (same server, or a neighbouring server with a fibre).
  const int r = s.rack;
  int l = static_cast<int>(std::find(s.chips.begin(), s.chips.end(), g) - s.chips.begin());
  std::vector<std::pair<int, int>> peers;  // (peer server, old link when the circuit was one hop)
  for (const auto& c : s.circuits)
    if (c.u == l || c.v == l)
      peers.push_back({server_of_local(s.chips[c.u == l ? c.v : c.u] % kChipsPerRack), c.hops() == 1 ? c.path[0] : -1});
  for (int sv = 0; sv < kServersPerRack; ++sv) {
    bool has_free = false;
    for (int c : server_chips(sv)) has_free |= dc.chip_free(r * kChipsPerRack + c);
    if (!has_free) continue;
    std::map<int, int> need;
    bool ok = true;
    for (auto [ps, old] : peers) {
      if (ps == sv) continue;
      int k = server_link(sv, ps);
      if (k < 0) {
        ok = false;
        break;
      }
      if (k != old) need[k]++;
    }
    for (auto [k, c] : need) ok = ok && dc.link_residual(r, k) >= c;
    if (ok) return 1;
  }
  return n;
}

std::vector<double> failure_tail(const std::vector<double>& p) {
  const size_t G = p.size();
  std::vector<double> exact(G + 1, 0.0);
  exact[0] = 1.0;
  for (size_t i = 0; i < G; ++i) {
    if (p[i] < 0 || p[i] > 1) throw std::invalid_argument(fmt::format("failure probability {} outside [0,1]", p[i]));
    for (size_t k = i + 1; k >= 1; --k) exact[k] = exact[k] * (1 - p[i]) + exact[k - 1] * p[i];
    exact[0] *= 1 - p[i];
  }
  std::vector<double> tail(G + 2, 0.0);
  for (size_t k = G + 1; k-- > 0;) tail[k] = tail[k + 1] + exact[k];
  tail.pop_back();
  return tail;
}

std::vector<double> failure_tail_bruteforce(const std::vector<double>& p) {
  const size_t G = p.size();
  if (G > 20) throw std::invalid_argument("brute force limited to 20 groups");
  std::vector<double> exact(G + 1, 0.0);
  for (uint32_t m = 0; m < (1u << G); ++m) {
    double pr = 1;
    int k = 0;
    for (size_t i = 0; i < G; ++i) {
      bool f = (m >> i) & 1u;
      pr *= f ? p[i] : 1 - p[i];
      k += f;
    }
    exact[k] += pr;
  }
  std::vector<double> tail(G + 1, 0.0);
  double acc = 0;
  for (size_t k = G + 1; k-- > 0;) {
    acc += exact[k];
    tail[k] = acc;
  }
  return tail;
}

int spares_needed(const std::vector<double>& p, double target) {
  auto tail = failure_tail(p);
  for (size_t k = 0; k < tail.size(); ++k)
    if (tail[k] <= target) return static_cast<int>(k);
  return static_cast<int>(tail.size());
}

}  // namespace mxtb::host::alloc
