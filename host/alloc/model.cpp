// Datacenter geometry, slices, commit/release and the invariant checker.
#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "alloc.h"

namespace mxtb::host::alloc {

std::string Shape::str() const { return fmt::format("{}x{}x{}", d[0], d[1], d[2]); }

Shape parse_shape(const std::string& s) {
  Shape out;
  std::vector<int> v;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t x = s.find('x', pos);
    std::string tok = s.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    if (tok.empty() || tok.find_first_not_of("0123456789") != std::string::npos || tok.size() > 6)
      throw std::invalid_argument(fmt::format("bad slice shape '{}': expected AxBxC of positive integers", s));
    v.push_back(std::stoi(tok));
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  if (v.size() == 1) v = {1, 1, v[0]};
  if (v.size() != 3)
    throw std::invalid_argument(fmt::format("bad slice shape '{}': expected 3 dimensions", s));
  for (int i = 0; i < 3; ++i) {
    if (v[i] <= 0) throw std::invalid_argument(fmt::format("bad slice shape '{}': zero dimension", s));
    out.d[i] = v[i];
  }
  return out;
}

Shape shape_for_chips(int n) {
  if (n <= 0) throw std::invalid_argument(fmt::format("slice size {} is not positive", n));
  static const Shape small[] = {{{1, 1, 1}}, {{1, 1, 2}}, {{1, 2, 2}}, {{2, 2, 2}},
                                {{2, 2, 4}}, {{2, 4, 4}}, {{4, 4, 4}}};
  for (const auto& s : small)
    if (s.volume() >= n) return s;
  int cubes = (n + kChipsPerRack - 1) / kChipsPerRack;
  return Shape{{4, 4, 4 * cubes}};
}

std::array<int, 4> server_chips(int server) {
  int sx = server % 2, sy = (server / 2) % 2, sz = server / 4;
  return {local_chip(2 * sx, 2 * sy, sz), local_chip(2 * sx + 1, 2 * sy, sz),
          local_chip(2 * sx, 2 * sy + 1, sz), local_chip(2 * sx + 1, 2 * sy + 1, sz)};
}

namespace {
struct LinkTable {
  std::array<std::array<int, kServersPerRack>, kServersPerRack> id{};
  std::array<std::array<int, 2>, kLinksPerRack> ends{};
  LinkTable() {
    for (auto& row : id) row.fill(-1);
    int n = 0;
    for (int s = 0; s < kServersPerRack; ++s) {
      int sx = s % 2, sy = (s / 2) % 2, sz = s / 4;
      int nb[4] = {s ^ 1, s ^ 2, sx + 2 * (sy + 2 * ((sz + 1) % 4)), sx + 2 * (sy + 2 * ((sz + 3) % 4))};
      for (int t : nb) {
        if (t > s && id[s][t] < 0) {
          id[s][t] = id[t][s] = n;
          ends[n] = {s, t};
          ++n;
        }
      }
    }
    if (n != kLinksPerRack) throw std::logic_error("server link table");
  }
};
const LinkTable& links() {
  static const LinkTable t;
  return t;
}
}  // namespace

int server_link(int s, int t) { return links().id[s][t]; }
std::array<int, 2> link_ends(int link) { return links().ends[link]; }

std::vector<LogicalEdge> logical_edges(const Shape& s) {
  // Lanes per logical neighbour slot: all 6 ports spread over the active dimensions.
  int active = 0;
  for (int e : s.d) active += e >= 2;
  std::array<int, 3> w{0, 0, 0};
  if (active == 1) {
    for (int i = 0; i < 3; ++i) w[i] = s.d[i] >= 2 ? 3 : 0;
  } else if (active == 2) {
    int big = -1;
    for (int i = 0; i < 3; ++i)
      if (s.d[i] >= 2 && (big < 0 || s.d[i] > s.d[big])) big = i;
    for (int i = 0; i < 3; ++i) w[i] = s.d[i] >= 2 ? (i == big ? 2 : 1) : 0;
  } else if (active == 3) {
    w = {1, 1, 1};
  }
  std::vector<LogicalEdge> out;
  const auto& d = s.d;
  for (int k = 0; k < d[2]; ++k)
    for (int j = 0; j < d[1]; ++j)
      for (int i = 0; i < d[0]; ++i) {
        int c[3] = {i, j, k};
        int u = i + d[0] * (j + d[1] * k);
        for (int dim = 0; dim < 3; ++dim) {
          int e = d[dim];
          if (e == 1) continue;
          if (e == 2 && c[dim] == 1) continue;
          int n[3] = {c[0], c[1], c[2]};
          n[dim] = (c[dim] + 1) % e;
          int v = n[0] + d[0] * (n[1] + d[1] * n[2]);
          int mult = e == 2 ? 2 : 1;
          out.push_back({u, v, dim, mult, mult * w[dim]});
        }
      }
  return out;
}

const char* policy_name(Policy p) { return p == Policy::Baseline ? "baseline" : "morphlux"; }
const char* baseline_mode_name(BaselineMode m) { return m == BaselineMode::Aligned ? "aligned" : "torus-first-fit"; }
const char* fabric_mode_name(FabricMode m) { return m == FabricMode::Server ? "server" : "neighbour"; }
BaselineMode parse_baseline_mode(const std::string& s) {
  if (s == "aligned") return BaselineMode::Aligned;
  if (s == "torus-first-fit") return BaselineMode::TorusFirstFit;
  throw std::invalid_argument(fmt::format("baseline mode '{}': expected aligned or torus-first-fit", s));
}
FabricMode parse_fabric_mode(const std::string& s) {
  if (s == "server") return FabricMode::Server;
  if (s == "neighbour") return FabricMode::Neighbour;
  throw std::invalid_argument(fmt::format("morphlux mode '{}': expected server or neighbour", s));
}
std::string allocator_label(const AllocOptions& o) {
  return fmt::format("{}({})", policy_name(o.policy),
                     o.policy == Policy::Baseline ? baseline_mode_name(o.baseline) : fabric_mode_name(o.fabric));
}

int server_distance(int s, int t) {
  int sx = s % 2, sy = (s / 2) % 2, sz = s / 4, tx = t % 2, ty = (t / 2) % 2, tz = t / 4;
  int dz = (sz - tz + 4) % 4;
  return (sx != tx) + (sy != ty) + std::min(dz, 4 - dz);
}

std::vector<int> torus_fibre_links(const Shape& shape, const std::vector<int>& chips, int fibres_per_link) {
  std::array<int, kLinksPerRack> per_link{};
  // A torus edge of multiplicity 2 (a ring of two) is one physical link: the other direction
  // leaves the slice.
  const auto& d = shape.d;
  for (int l = 0; l < shape.volume(); ++l) {
    const int c[3] = {l % d[0], (l / d[0]) % d[1], l / (d[0] * d[1])};
    for (int dim = 0; dim < 3; ++dim) {
      if (d[dim] == 1 || (d[dim] == 2 && c[dim] == 1)) continue;
      int n[3] = {c[0], c[1], c[2]};
      n[dim] = (c[dim] + 1) % d[dim];
      const int v = n[0] + d[0] * (n[1] + d[1] * n[2]);
      int su = server_of_local(chips[l] % kChipsPerRack), sv = server_of_local(chips[v] % kChipsPerRack);
      if (su == sv) continue;
      int k = server_link(su, sv);
      if (k >= 0) per_link[k]++;
    }
  }
  std::vector<int> out;
  for (int k = 0; k < kLinksPerRack; ++k)
    for (int i = 0; i < std::min(per_link[k], fibres_per_link); ++i) out.push_back(k);
  return out;
}

// ---------------------------------------------------------------------------------------------
Datacenter::Datacenter(int racks, int fibres_per_link)
    : racks_(racks), fibres_(fibres_per_link), free_total_(racks * kChipsPerRack) {
  if (racks <= 0) throw std::invalid_argument(fmt::format("--racks must be positive (got {})", racks));
  if (fibres_per_link <= 0)
    throw std::invalid_argument(fmt::format("--fibres must be positive (got {})", fibres_per_link));
  owner_.assign(chips(), -1);
  rack_free_.assign(racks, kChipsPerRack);
  used_mask_.assign(racks, 0);
  link_hard_.assign(static_cast<size_t>(racks) * kLinksPerRack, 0);
  link_extra_.assign(static_cast<size_t>(racks) * kLinksPerRack, 0);
  rack_slices_.resize(racks);
  rack_version_.assign(racks, 0);
}

namespace {
// Fibres a slice holds firmly per server link (its circuits' first lanes on every link of their
// paths, and a contiguous slice's native torus links).
std::map<int, int> hard_fibres(const Slice& s) {
  std::map<int, int> hard;
  for (const auto& c : s.circuits)
    for (int k : c.path) hard[k]++;
  for (int k : s.torus_fibres) hard[k]++;
  return hard;
}
}  // namespace

int Datacenter::commit(Slice s) {
  for (int g : s.chips)
    if (g < 0 || g >= chips() || owner_[g] >= 0)
      throw std::logic_error(fmt::format("commit: chip {} not free", g));
  std::set<int> uniq(s.chips.begin(), s.chips.end());
  if (uniq.size() != s.chips.size()) throw std::logic_error("commit: chip listed twice");
  for (const auto& c : s.circuits)
    if (!c.path.empty() && c.lanes < 1) throw std::logic_error("commit: circuit without lanes");
  const std::map<int, int> hard = hard_fibres(s);
  if (!hard.empty() && (s.rack < 0 || s.rack >= racks_)) throw std::logic_error("commit: fibres outside a rack");
  for (auto [k, n] : hard)
    if (link_hard_[s.rack * kLinksPerRack + k] + n > fibres_)
      throw std::logic_error("commit: fibre capacity exceeded");
  int id = static_cast<int>(slices_.size());
  for (auto [k, n] : hard) link_hard_[static_cast<size_t>(s.rack) * kLinksPerRack + k] += n;
  for (const auto& c : s.circuits)
    for (int k : c.path) link_extra_[static_cast<size_t>(s.rack) * kLinksPerRack + k] += c.lanes - 1;
  // Take back opportunistic lanes of older fabric slices where a link is now overbooked; a lane
  // taken back frees a fibre on every link of its circuit's path.
  for (auto [k, n] : hard) {
    const size_t i = static_cast<size_t>(s.rack) * kLinksPerRack + k;
    for (int other : rack_slices_[s.rack]) {
      for (auto& c : slices_[other]->circuits) {
        if (std::find(c.path.begin(), c.path.end(), k) == c.path.end()) continue;
        while (c.lanes > 1 && link_hard_[i] + link_extra_[i] > fibres_) {
          c.lanes--;
          for (int j : c.path) link_extra_[static_cast<size_t>(s.rack) * kLinksPerRack + j]--;
          revoked_++;
        }
      }
    }
    if (link_hard_[i] + link_extra_[i] > fibres_) throw std::logic_error("commit: fibre capacity exceeded");
  }
  if (s.kind == SliceKind::RackFabric) rack_slices_[s.rack].push_back(id);
  s.id = id;
  for (int g : s.chips) {
    owner_[g] = id;
    int r = g / kChipsPerRack;
    rack_free_[r]--;
    rack_version_[r]++;
    used_mask_[r] |= uint64_t{1} << (g % kChipsPerRack);
    free_total_--;
  }
  slices_.push_back(std::move(s));
  return id;
}

void Datacenter::release(int id) {
  auto& opt = slices_.at(id);
  if (!opt) throw std::logic_error(fmt::format("release: slice {} not live", id));
  for (auto [k, n] : hard_fibres(*opt)) link_hard_[static_cast<size_t>(opt->rack) * kLinksPerRack + k] -= n;
  for (const auto& c : opt->circuits)
    for (int k : c.path) link_extra_[static_cast<size_t>(opt->rack) * kLinksPerRack + k] -= c.lanes - 1;
  if (opt->kind == SliceKind::RackFabric) {
    auto& v = rack_slices_[opt->rack];
    v.erase(std::remove(v.begin(), v.end(), id), v.end());
  }
  for (int g : opt->chips) {
    owner_[g] = -1;
    int r = g / kChipsPerRack;
    rack_free_[r]++;
    rack_version_[r]++;
    used_mask_[r] &= ~(uint64_t{1} << (g % kChipsPerRack));
    free_total_++;
  }
  opt.reset();
}

std::vector<int> Datacenter::live_ids() const {
  std::vector<int> out;
  for (size_t i = 0; i < slices_.size(); ++i)
    if (slices_[i]) out.push_back(static_cast<int>(i));
  return out;
}

// ---------------------------------------------------------------------------------------------
namespace {
bool rack_adjacent(int a, int b) {
  auto ca = chip_coords(a), cb = chip_coords(b);
  int diff = 0;
  for (int i = 0; i < 3; ++i) {
    int dd = (ca[i] - cb[i] + kRackDim) % kRackDim;
    if (dd == 0) continue;
    if (dd != 1 && dd != kRackDim - 1) return false;
    ++diff;
  }
  return diff == 1;
}
}  // namespace

std::string check_slice(const Datacenter& dc, const Slice& s) {
  const int n = s.shape.volume();
  if (static_cast<int>(s.chips.size()) != n)
    return fmt::format("slice {}: {} chips for shape {}", s.id, s.chips.size(), s.shape.str());
  std::set<int> uniq(s.chips.begin(), s.chips.end());
  if (static_cast<int>(uniq.size()) != n) return fmt::format("slice {}: a chip used twice", s.id);
  for (int g : s.chips)
    if (g < 0 || g >= dc.chips()) return fmt::format("slice {}: chip {} out of range", s.id, g);
  auto edges = logical_edges(s.shape);
  if (s.kind == SliceKind::RackTorus) {
    for (int g : s.chips)
      if (g / kChipsPerRack != s.rack) return fmt::format("slice {}: chip outside rack", s.id);
    for (const auto& e : edges)
      if (!rack_adjacent(s.chips[e.u] % kChipsPerRack, s.chips[e.v] % kChipsPerRack))
        return fmt::format("slice {}: logical neighbours {}-{} not torus neighbours", s.id, e.u, e.v);
    if (!s.circuits.empty()) return fmt::format("slice {}: torus slice with fabric circuits", s.id);
    auto want = torus_fibre_links(s.shape, s.chips, dc.fibres());
    auto have = s.torus_fibres;
    std::sort(want.begin(), want.end());
    std::sort(have.begin(), have.end());
    if (want != have) return fmt::format("slice {}: torus fibres held do not match its native links", s.id);
  } else if (s.kind == SliceKind::MultiRack) {
    for (int x = 0; x < 3; ++x)
      if (s.shape.d[x] % kRackDim) return fmt::format("slice {}: multi-rack shape not whole cubes", s.id);
    std::map<int, int> per_rack;
    for (int g : s.chips) per_rack[g / kChipsPerRack]++;
    for (auto [r, c] : per_rack)
      if (c != kChipsPerRack) return fmt::format("slice {}: rack {} partly used by a multi-rack slice", s.id, r);
    for (const auto& e : edges) {
      int a = s.chips[e.u], b = s.chips[e.v];
      if (a / kChipsPerRack == b / kChipsPerRack) {
        if (!rack_adjacent(a % kChipsPerRack, b % kChipsPerRack))
          return fmt::format("slice {}: in-cube neighbours not adjacent", s.id);
      } else {
        auto ca = chip_coords(a % kChipsPerRack), cb = chip_coords(b % kChipsPerRack);
        for (int x = 0; x < 3; ++x) {
          bool ok = x == e.dim ? ((ca[x] == kRackDim - 1 && cb[x] == 0) || (ca[x] == 0 && cb[x] == kRackDim - 1))
                               : ca[x] == cb[x];
          if (!ok) return fmt::format("slice {}: OCS edge {}-{} not face to face", s.id, e.u, e.v);
        }
      }
    }
  } else {
    for (int g : s.chips)
      if (g / kChipsPerRack != s.rack) return fmt::format("slice {}: chip outside rack", s.id);
    std::map<std::pair<int, int>, const Circuit*> circ;
    std::vector<int> ports(n, 0);
    for (const auto& c : s.circuits) {
      circ[{std::min(c.u, c.v), std::max(c.u, c.v)}] = &c;
      ports[c.u] += c.lanes;
      ports[c.v] += c.lanes;
      if (c.lanes < 1) return fmt::format("slice {}: circuit without lanes", s.id);
      int su = server_of_local(s.chips[c.u] % kChipsPerRack), sv = server_of_local(s.chips[c.v] % kChipsPerRack);
      // The path must walk from u's server to v's over server links, never revisiting a server.
      int at = su;
      std::set<int> visited{su};
      for (int k : c.path) {
        if (k < 0 || k >= kLinksPerRack) return fmt::format("slice {}: circuit {}-{} on link {}", s.id, c.u, c.v, k);
        auto ends = link_ends(k);
        if (ends[0] != at && ends[1] != at)
          return fmt::format("slice {}: circuit {}-{} path leaves server {} on link {}", s.id, c.u, c.v, at, k);
        at = ends[0] == at ? ends[1] : ends[0];
        if (!visited.insert(at).second) return fmt::format("slice {}: circuit {}-{} path loops", s.id, c.u, c.v);
      }
      if (at != sv) return fmt::format("slice {}: circuit {}-{} path ends in server {}, not {}", s.id, c.u, c.v, at, sv);
    }
    for (int l = 0; l < n; ++l)
      if (ports[l] > kPortsPerChip) return fmt::format("slice {}: chip {} uses {} ports", s.id, l, ports[l]);
    for (const auto& e : edges) {
      auto it = circ.find({std::min(e.u, e.v), std::max(e.u, e.v)});
      if (it == circ.end()) return fmt::format("slice {}: logical edge {}-{} has no circuit", s.id, e.u, e.v);
      if (it->second->lanes > e.wanted) return fmt::format("slice {}: circuit over-provisioned", s.id);
    }
    if (s.circuits.size() != edges.size()) return fmt::format("slice {}: stray circuits", s.id);
    if (!s.torus_fibres.empty()) return fmt::format("slice {}: fabric slice holding torus fibres", s.id);
  }
  return {};
}

std::string check_invariants(const Datacenter& dc) {
  std::vector<int> owner(dc.chips(), -1);
  std::vector<int> lanes(static_cast<size_t>(dc.racks()) * kLinksPerRack, 0);
  std::vector<int> firsts(lanes.size(), 0);
  int used = 0;
  for (int id : dc.live_ids()) {
    const Slice& s = dc.slice(id);
    if (s.id != id) return fmt::format("slice {} has id {}", id, s.id);
    for (int g : s.chips) {
      if (owner[g] >= 0) return fmt::format("chip {} used by slices {} and {}", g, owner[g], id);
      owner[g] = id;
      ++used;
    }
    for (const auto& c : s.circuits)
      for (int k : c.path) {
        lanes[s.rack * kLinksPerRack + k] += c.lanes;
        firsts[s.rack * kLinksPerRack + k]++;
      }
    for (int k : s.torus_fibres) {
      lanes[s.rack * kLinksPerRack + k]++;
      firsts[s.rack * kLinksPerRack + k]++;
    }
    auto err = check_slice(dc, s);
    if (!err.empty()) return err;
  }
  for (int g = 0; g < dc.chips(); ++g)
    if (owner[g] != dc.owner(g)) return fmt::format("chip {} owner bookkeeping wrong", g);
  if (dc.free_chips() != dc.chips() - used) return "free chip count wrong";
  for (int r = 0; r < dc.racks(); ++r)
    for (int k = 0; k < kLinksPerRack; ++k) {
      int l = lanes[r * kLinksPerRack + k];
      if (l > dc.fibres()) return fmt::format("rack {} link {}: {} lanes over {} fibres", r, k, l, dc.fibres());
      int h = firsts[r * kLinksPerRack + k];
      if (dc.link_residual(r, k) != dc.fibres() - h || dc.link_idle(r, k) != dc.fibres() - l)
        return fmt::format("rack {} link {}: residual bookkeeping wrong", r, k);
    }
  return {};
}

}  // namespace mxtb::host::alloc
