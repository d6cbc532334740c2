// The two allocators: baseline contiguous torus first fit, and the Morphlux fabric allocator.
#include <algorithm>
#include <chrono>
#include <stdexcept>

#include <fmt/format.h>

#include "alloc.h"

namespace mxtb::host::alloc {

namespace {
// Mask of a box with physical extents e placed at origin o (with wrap-around) in a rack.
struct BoxMasks {
  // [ex][ey][ez][origin] for extents 1..4
  std::vector<uint64_t> m;
  BoxMasks() : m(5 * 5 * 5 * kChipsPerRack, 0) {
    for (int ex = 1; ex <= 4; ++ex)
      for (int ey = 1; ey <= 4; ++ey)
        for (int ez = 1; ez <= 4; ++ez)
          for (int o = 0; o < kChipsPerRack; ++o) {
            auto c = chip_coords(o);
            uint64_t mask = 0;
            for (int k = 0; k < ez; ++k)
              for (int j = 0; j < ey; ++j)
                for (int i = 0; i < ex; ++i)
                  mask |= uint64_t{1} << local_chip((c[0] + i) % 4, (c[1] + j) % 4, (c[2] + k) % 4);
            m[idx(ex, ey, ez, o)] = mask;
          }
  }
  static size_t idx(int ex, int ey, int ez, int o) {
    return ((static_cast<size_t>(ex) * 5 + ey) * 5 + ez) * kChipsPerRack + o;
  }
};
const BoxMasks& box_masks() {
  static const BoxMasks b;
  return b;
}
}  // namespace

namespace {
// True when rack r still has the fibres a contiguous slice's native torus links need.
bool torus_fibres_free(const Datacenter& dc, int r, const std::vector<int>& links) {
  std::array<int, kLinksPerRack> need{};
  for (int k : links)
    if (++need[k] > dc.link_residual(r, k)) return false;
  return true;
}
}  // namespace

std::optional<Slice> baseline_place_in_rack(const Datacenter& dc, int r, const Shape& shape, int origin_start) {
  const auto& d = shape.d;
  if (d[0] > kRackDim || d[1] > kRackDim || d[2] > kRackDim) return std::nullopt;
  // A contiguous torus slice needs every extent to be a ring on its own (1, 2) or the full
  // rack ring (4); an extent of 3 has no wrap link.
  for (int e : d)
    if (e == 3) return std::nullopt;
  if (dc.rack_free(r) < shape.volume()) return std::nullopt;
  const uint64_t used = dc.rack_used_mask(r);
  std::array<int, 3> perm{0, 1, 2};
  const auto& bm = box_masks();
  do {
    int ex = d[perm[0]], ey = d[perm[1]], ez = d[perm[2]];
    for (int oi = 0; oi < kChipsPerRack; ++oi) {
      const int o = (oi + origin_start) % kChipsPerRack;
      uint64_t m = bm.m[BoxMasks::idx(ex, ey, ez, o)];
      if (m & used) continue;
      Slice s;
      s.shape = shape;
      s.kind = SliceKind::RackTorus;
      s.rack = r;
      s.requested = shape.volume();
      s.decided_by = "first-fit";
      auto oc = chip_coords(o);
      s.chips.resize(shape.volume());
      for (int k = 0; k < d[2]; ++k)
        for (int j = 0; j < d[1]; ++j)
          for (int i = 0; i < d[0]; ++i) {
            int lc[3] = {i, j, k};
            int p[3];
            for (int a = 0; a < 3; ++a) p[a] = (oc[a] + lc[perm[a]]) % kRackDim;
            s.chips[i + d[0] * (j + d[1] * k)] = r * kChipsPerRack + local_chip(p[0], p[1], p[2]);
          }
      s.torus_fibres = torus_fibre_links(shape, s.chips, dc.fibres());
      if (!torus_fibres_free(dc, r, s.torus_fibres)) continue;  // fibres held by fabric circuits
      return s;
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
  return std::nullopt;
}

Shape aligned_shape(int n) {
  if (n <= 0) throw std::invalid_argument(fmt::format("slice size {} is not positive", n));
  static const Shape canonical[] = {{{2, 2, 1}}, {{2, 2, 2}}, {{2, 2, 4}}, {{2, 4, 4}}, {{4, 4, 4}}};
  for (const auto& s : canonical)
    if (s.volume() >= n) return s;
  throw std::invalid_argument(fmt::format("aligned baseline: {} chips is more than a rack", n));
}

std::optional<Slice> aligned_place_in_rack(const Datacenter& dc, int r, int n, int start) {
  const Shape shape = aligned_shape(n);
  const auto& d = shape.d;
  if (dc.rack_free(r) < shape.volume()) return std::nullopt;
  const int px = kRackDim / d[0], py = kRackDim / d[1], pz = kRackDim / d[2];
  const int positions = px * py * pz;
  const uint64_t used = dc.rack_used_mask(r);
  const auto& bm = box_masks();
  for (int pi = 0; pi < positions; ++pi) {
    const int p = (pi + start) % positions;
    const int ox = d[0] * (p % px), oy = d[1] * ((p / px) % py), oz = d[2] * (p / (px * py));
    if (bm.m[BoxMasks::idx(d[0], d[1], d[2], local_chip(ox, oy, oz))] & used) continue;
    Slice s;
    s.shape = shape;
    s.kind = SliceKind::RackTorus;
    s.rack = r;
    s.requested = n;
    s.decided_by = "aligned";
    s.chips.resize(shape.volume());
    for (int k = 0; k < d[2]; ++k)
      for (int j = 0; j < d[1]; ++j)
        for (int i = 0; i < d[0]; ++i)
          s.chips[i + d[0] * (j + d[1] * k)] = r * kChipsPerRack + local_chip(ox + i, oy + j, oz + k);
    s.torus_fibres = torus_fibre_links(shape, s.chips, dc.fibres());
    if (!torus_fibres_free(dc, r, s.torus_fibres)) continue;
    return s;
  }
  return std::nullopt;
}

std::optional<Slice> aligned_place_random(const Datacenter& dc, int n, std::mt19937_64& rng) {
  std::vector<int> racks(dc.racks());
  for (int r = 0; r < dc.racks(); ++r) racks[r] = r;
  std::shuffle(racks.begin(), racks.end(), rng);
  std::uniform_int_distribution<int> start(0, kServersPerRack - 1);
  for (int r : racks)
    if (auto s = aligned_place_in_rack(dc, r, n, start(rng))) return s;
  return std::nullopt;
}

std::optional<Slice> baseline_place_random(const Datacenter& dc, const Shape& shape, std::mt19937_64& rng,
                                           bool shuffle_racks) {
  if (shape.volume() > kChipsPerRack) return place_multirack(dc, shape);
  std::vector<int> racks(dc.racks());
  for (int r = 0; r < dc.racks(); ++r) racks[r] = r;
  if (shuffle_racks) std::shuffle(racks.begin(), racks.end(), rng);
  std::uniform_int_distribution<int> start(0, kChipsPerRack - 1);
  for (int r : racks)
    if (auto s = baseline_place_in_rack(dc, r, shape, start(rng))) return s;
  return std::nullopt;
}

std::optional<Slice> place_multirack(const Datacenter& dc, const Shape& shape) {
  const auto& d = shape.d;
  for (int e : d)
    if (e % kRackDim) return std::nullopt;
  int cx = d[0] / 4, cy = d[1] / 4, cz = d[2] / 4;
  int cubes = cx * cy * cz;
  std::vector<int> racks;
  for (int r = 0; r < dc.racks() && static_cast<int>(racks.size()) < cubes; ++r)
    if (dc.rack_free(r) == kChipsPerRack) racks.push_back(r);
  if (static_cast<int>(racks.size()) < cubes) return std::nullopt;
  Slice s;
  s.shape = shape;
  s.kind = SliceKind::MultiRack;
  s.requested = shape.volume();
  s.decided_by = "ocs-cubes";
  s.chips.resize(shape.volume());
  for (int k = 0; k < d[2]; ++k)
    for (int j = 0; j < d[1]; ++j)
      for (int i = 0; i < d[0]; ++i) {
        int cube = i / 4 + cx * (j / 4 + cy * (k / 4));
        s.chips[i + d[0] * (j + d[1] * k)] = racks[cube] * kChipsPerRack + local_chip(i % 4, j % 4, k % 4);
      }
  return s;
}

RackView rack_view(const Datacenter& dc, int r) {
  RackView v;
  for (int s = 0; s < kServersPerRack; ++s) {
    int f = 0;
    for (int c : server_chips(s)) f += dc.chip_free(r * kChipsPerRack + c);
    v.free[s] = f;
  }
  for (int k = 0; k < kLinksPerRack; ++k) v.res[k] = dc.link_residual(r, k);
  return v;
}

double fabric_cost(const Shape& shape, const ServerAssign& a) {
  double cost = 0;
  for (const auto& e : logical_edges(shape))
    if (a[e.u] != a[e.v]) cost += e.wanted;
  return cost;
}

namespace {
// Backtracking search with forward checking (most-constrained logical chip first) over
// server assignments; values ordered to keep logical neighbours in one server.
class FabricSearch {
 public:
  FabricSearch(const RackView& v, const Shape& shape, long node_limit, int first_server)
      : n_(shape.volume()), fl_(v.free), res_(v.res), limit_(node_limit), first_(first_server), a_(n_, -1), adj_(n_) {
    for (const auto& e : logical_edges(shape)) {
      adj_[e.u].push_back({e.v, e.wanted});
      adj_[e.v].push_back({e.u, e.wanted});
    }
  }
  ServerAssign run() {
    if (solve(0)) return a_;
    return {};
  }

 private:
  uint32_t nbr_mask(int s) const {
    static const auto nbrs = [] {
      std::array<std::array<std::pair<int, int>, 4>, kServersPerRack> t{};
      for (int a = 0; a < kServersPerRack; ++a) {
        int i = 0;
        for (int b = 0; b < kServersPerRack; ++b)
          if (server_link(a, b) >= 0) t[a][i++] = {b, server_link(a, b)};
      }
      return t;
    }();
    uint32_t m = 1u << s;
    for (auto [t, k] : nbrs[s])
      if (res_[k] > 0) m |= 1u << t;
    return m;
  }
  uint32_t free_mask() const {
    uint32_t m = 0;
    for (int s = 0; s < kServersPerRack; ++s)
      if (fl_[s] > 0) m |= 1u << s;
    return m;
  }
  bool solve(int depth) {
    if (depth == n_) return true;
    if (++nodes_ > limit_) return false;
    std::array<uint32_t, kServersPerRack> nm;
    for (int s = 0; s < kServersPerRack; ++s) nm[s] = nbr_mask(s);
    const uint32_t fm = free_mask();
    int var = -1, var_size = 1 << 30, var_links = -1;
    uint32_t var_dom = 0;
    for (int l = 0; l < n_; ++l) {
      if (a_[l] >= 0) continue;
      uint32_t dom = fm;
      int placed = 0;
      for (auto [o, w] : adj_[l])
        if (a_[o] >= 0) {
          dom &= nm[a_[o]];
          ++placed;
        }
      if (depth > 0 && placed == 0) continue;
      int size = __builtin_popcount(dom);
      if (size == 0) return false;  // forward check: a chip has nowhere to go
      if (size < var_size || (size == var_size && placed > var_links)) {
        var = l;
        var_size = size;
        var_links = placed;
        var_dom = dom;
      }
    }
    if (var < 0) return false;
    struct Cand {
      int s;
      long score;
    };
    std::array<Cand, kServersPerRack> cands;
    int nc = 0;
    if (depth == 0) var_dom &= 1u << first_;
    for (int s = 0; s < kServersPerRack; ++s) {
      if (!((var_dom >> s) & 1u)) continue;
      long intra = 0;
      for (auto [o, w] : adj_[var])
        if (a_[o] == s) intra += w;
      long score = intra * 1000 + (mine_[s] > 0 ? 100 : 0) - fl_[s] * 10;
      cands[nc++] = {s, score};
    }
    std::stable_sort(cands.begin(), cands.begin() + nc, [](const Cand& x, const Cand& y) { return x.score > y.score; });
    for (int i = 0; i < nc; ++i) {
      int s = cands[i].s;
      // Exact fibre check: several placed neighbours may need the same link.
      std::array<int, 6> links{};
      int nl = 0;
      bool ok = true;
      for (auto [o, w] : adj_[var]) {
        if (a_[o] < 0 || a_[o] == s) continue;
        int k = server_link(s, a_[o]);
        links[nl++] = k;
        int cnt = 0;
        for (int j = 0; j < nl; ++j) cnt += links[j] == k;
        if (cnt > res_[k]) ok = false;
      }
      if (!ok) continue;
      a_[var] = s;
      fl_[s]--;
      mine_[s]++;
      for (int j = 0; j < nl; ++j) res_[links[j]]--;
      if (solve(depth + 1)) return true;
      for (int j = 0; j < nl; ++j) res_[links[j]]++;
      mine_[s]--;
      fl_[s]++;
      a_[var] = -1;
      if (nodes_ > limit_) return false;
    }
    return false;
  }

  int n_;
  std::array<int, kServersPerRack> fl_;
  std::array<int, kLinksPerRack> res_;
  std::array<int, kServersPerRack> mine_{};
  long limit_;
  int first_;
  long nodes_ = 0;
  ServerAssign a_;
  std::vector<std::vector<std::pair<int, int>>> adj_;
};
}  // namespace

namespace {
// Fibre check of a complete assignment: one lane per crossing edge, neighbouring servers only.
bool routable(const RackView& v, const std::vector<LogicalEdge>& edges, const ServerAssign& a) {
  std::array<int, kLinksPerRack> need{};
  for (const auto& e : edges) {
    if (a[e.u] == a[e.v]) continue;
    int k = server_link(a[e.u], a[e.v]);
    if (k < 0 || ++need[k] > v.res[k]) return false;
  }
  return true;
}

// Template pass: the slice laid out as a box of the rack torus (any rotation, any origin, with
// wrap-around); chips of a server are interchangeable, so only per-server counts must fit.
ServerAssign template_place(const RackView& v, const Shape& shape, const std::vector<LogicalEdge>& edges) {
  const auto& d = shape.d;
  if (d[0] > kRackDim || d[1] > kRackDim || d[2] > kRackDim) return {};
  const int n = shape.volume();
  ServerAssign best;
  double best_cost = 0;
  std::array<int, 3> perm{0, 1, 2};
  std::vector<std::array<int, 3>> done;
  do {
    std::array<int, 3> ext{d[perm[0]], d[perm[1]], d[perm[2]]};
    if (std::find(done.begin(), done.end(), ext) != done.end()) continue;  // same box
    done.push_back(ext);
    for (int o = 0; o < kChipsPerRack; ++o) {
      auto oc = chip_coords(o);
      // Along an axis the box fills completely, every origin gives the same chips.
      if ((ext[0] == kRackDim && oc[0]) || (ext[1] == kRackDim && oc[1]) || (ext[2] == kRackDim && oc[2])) continue;
      ServerAssign a(n);
      std::array<int, kServersPerRack> cnt{};
      bool ok = true;
      for (int l = 0; l < n && ok; ++l) {
        int lc[3] = {l % d[0], (l / d[0]) % d[1], l / (d[0] * d[1])};
        int p[3];
        for (int x = 0; x < 3; ++x) p[x] = (oc[x] + lc[perm[x]]) % kRackDim;
        int s = server_of_local(local_chip(p[0], p[1], p[2]));
        a[l] = s;
        ok = ++cnt[s] <= v.free[s];
      }
      if (!ok || !routable(v, edges, a)) continue;
      double c = 0;
      for (const auto& e : edges)
        if (a[e.u] != a[e.v]) c += e.wanted;
      if (best.empty() || c < best_cost) {
        best = a;
        best_cost = c;
      }
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}
}  // namespace

ServerAssign fabric_heuristic(const RackView& v, const Shape& shape) {
  int total = 0;
  for (int f : v.free) total += f;
  if (total < shape.volume()) return {};
  auto edges = logical_edges(shape);
  ServerAssign t = template_place(v, shape, edges);
  // Big slices keep a box layout; small ones may do better folded into fewer servers.
  if (!t.empty() && (shape.volume() > 8 || fabric_cost(shape, t) == 0)) return t;
  // Search from a few first servers (fullest first: best fit), each with its own node budget.
  std::vector<int> seeds;
  for (int s = 0; s < kServersPerRack; ++s)
    if (v.free[s] > 0) seeds.push_back(s);
  std::stable_sort(seeds.begin(), seeds.end(), [&](int a, int b) { return v.free[a] < v.free[b]; });
  if (seeds.size() > 4) seeds.resize(4);
  ServerAssign best = t;
  if (!t.empty()) seeds.resize(1);
  for (int seed : seeds) {
    RackView w = v;
    FabricSearch fs(w, shape, 20L * shape.volume() + 100, seed);
    ServerAssign a = fs.run();
    if (!a.empty() && (best.empty() || fabric_cost(shape, a) < fabric_cost(shape, best))) best = a;
    if (!best.empty()) break;
  }
  return best;
}


Slice fabric_slice(const Datacenter& dc, int r, const Shape& shape, const ServerAssign& a) {
  Slice s;
  s.shape = shape;
  s.kind = SliceKind::RackFabric;
  s.rack = r;
  const int n = shape.volume();
  s.requested = n;
  std::array<std::vector<int>, kServersPerRack> free_chips;
  for (int sv = 0; sv < kServersPerRack; ++sv)
    for (int c : server_chips(sv))
      if (dc.chip_free(r * kChipsPerRack + c)) free_chips[sv].push_back(c);
  s.chips.resize(n);
  for (int l = 0; l < n; ++l) {
    auto& fc = free_chips.at(a.at(l));
    if (fc.empty()) throw std::logic_error("fabric_slice: server over-assigned");
    s.chips[l] = r * kChipsPerRack + fc.front();
    fc.erase(fc.begin());
  }
  std::array<int, kLinksPerRack> res{};
  for (int k = 0; k < kLinksPerRack; ++k) res[k] = dc.link_residual(r, k);
  auto edges = logical_edges(shape);
  std::array<int, kLinksPerRack> idle{};
  for (int k = 0; k < kLinksPerRack; ++k) idle[k] = dc.link_idle(r, k);
  for (const auto& e : edges) {
    Circuit c{e.u, e.v, {}, e.wanted};
    if (a[e.u] != a[e.v]) {
      const int k = server_link(a[e.u], a[e.v]);
      if (k < 0 || res[k] < 1) throw std::logic_error("fabric_slice: edge not routable");
      c.path = {k};
      c.lanes = 1;
      res[k]--;
      idle[k]--;  // may go negative: the commit takes back older slices' extra lanes
    }
    s.circuits.push_back(c);
  }
  // Grant the remaining wanted lanes on inter-server circuits from fibres nobody uses.
  bool grew = true;
  while (grew) {
    grew = false;
    for (size_t i = 0; i < edges.size(); ++i) {
      auto& c = s.circuits[i];
      if (!c.path.empty() && c.lanes < edges[i].wanted && idle[c.path[0]] > 0) {
        c.lanes++;
        idle[c.path[0]]--;
        grew = true;
      }
    }
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Morphlux at server granularity.
namespace {

// Logical chips grouped into blocks of at most 4 (one server each): the tiling of the logical
// torus into 2x2x1, 2x1x2, 1x2x2 or 1x1x4 tiles (any that divides the shape) that cuts the
// fewest wanted lanes; chunks of 4 in chip order when none divides it.
std::vector<int> server_blocks(const Shape& shape, const std::vector<LogicalEdge>& edges) {
  const int n = shape.volume();
  const auto& d = shape.d;
  std::vector<int> best;
  long best_cut = -1;
  const std::array<std::array<int, 3>, 6> tiles = {{{2, 2, 1}, {2, 1, 2}, {1, 2, 2}, {4, 1, 1}, {1, 4, 1}, {1, 1, 4}}};
  for (const auto& t : tiles) {
    if (d[0] % t[0] || d[1] % t[1] || d[2] % t[2]) continue;
    const int nx = d[0] / t[0], ny = d[1] / t[1];
    std::vector<int> block(n);
    for (int l = 0; l < n; ++l) {
      int i = l % d[0], j = (l / d[0]) % d[1], k = l / (d[0] * d[1]);
      block[l] = i / t[0] + nx * (j / t[1] + ny * (k / t[2]));
    }
    long cut = 0;
    for (const auto& e : edges) cut += block[e.u] != block[e.v] ? e.wanted : 0;
    if (best_cut < 0 || cut < best_cut) {
      best_cut = cut;
      best = std::move(block);
    }
  }
  if (best.empty()) {
    best.resize(n);
    for (int l = 0; l < n; ++l) best[l] = l / kChipsPerServer;
  }
  return best;
}

// Shortest path (fewest links) from server a to b over links with a fibre left; empty if none.
std::vector<int> shortest_path(int a, int b, const std::array<int, kLinksPerRack>& res) {
  std::array<int, kServersPerRack> prev_link;
  prev_link.fill(-2);
  prev_link[a] = -1;
  std::array<int, kServersPerRack> queue{};
  int head = 0, tail = 0;
  queue[tail++] = a;
  while (head < tail && prev_link[b] == -2) {
    int s = queue[head++];
    for (int t = 0; t < kServersPerRack; ++t) {
      int k = server_link(s, t);
      if (k < 0 || res[k] < 1 || prev_link[t] != -2) continue;
      prev_link[t] = k;
      queue[tail++] = t;
    }
  }
  if (prev_link[b] == -2) return {};
  std::vector<int> path;
  for (int at = b; at != a;) {
    int k = prev_link[at];
    path.push_back(k);
    auto e = link_ends(k);
    at = e[0] == at ? e[1] : e[0];
  }
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace

// Long: one heuristic's steps in order (block graph, block order, greedy mapping with swaps, routing,
// extra lanes), each commented, all on the same mapping and fibre tables.
std::optional<Slice> server_place_in_rack(const Datacenter& dc, int r, const Shape& shape) {
  const int n = shape.volume();
  if (n > kChipsPerRack || dc.rack_free(r) < n) return std::nullopt;
  const auto edges = logical_edges(shape);
  std::array<std::vector<int>, kServersPerRack> free_chips;
  for (int sv = 0; sv < kServersPerRack; ++sv)
    for (int c : server_chips(sv))
      if (dc.chip_free(r * kChipsPerRack + c)) free_chips[sv].push_back(c);
  Slice s;
  s.shape = shape;
  s.kind = SliceKind::RackFabric;
  s.rack = r;
  s.requested = n;
  s.decided_by = "server";
  s.chips.resize(n);
  if (n <= kChipsPerServer) {
    // Inside one server the fabric joins any chips: best fit (the fullest server that holds it).
    int best = -1;
    for (int sv = 0; sv < kServersPerRack; ++sv)
      if (static_cast<int>(free_chips[sv].size()) >= n &&
          (best < 0 || free_chips[sv].size() < free_chips[best].size()))
        best = sv;
    if (best < 0) return std::nullopt;
    for (int l = 0; l < n; ++l) s.chips[l] = r * kChipsPerRack + free_chips[best][l];
    for (const auto& e : edges) s.circuits.push_back({e.u, e.v, {}, e.wanted});
    return s;
  }
  const std::vector<int> block = server_blocks(shape, edges);
  const int blocks = *std::max_element(block.begin(), block.end()) + 1;
  std::vector<int> whole;  // wholly free servers
  for (int sv = 0; sv < kServersPerRack; ++sv)
    if (static_cast<int>(free_chips[sv].size()) == kChipsPerServer) whole.push_back(sv);
  if (static_cast<int>(whole.size()) < blocks) return std::nullopt;
  // Block graph: crossing edges between each pair of blocks.
  std::vector<std::vector<int>> w(blocks, std::vector<int>(blocks, 0));
  for (const auto& e : edges)
    if (block[e.u] != block[e.v]) {
      w[block[e.u]][block[e.v]]++;
      w[block[e.v]][block[e.u]]++;
    }
  auto cost_of = [&](const std::vector<int>& at) {
    long c = 0;
    for (int a = 0; a < blocks; ++a)
      for (int b = a + 1; b < blocks; ++b) c += static_cast<long>(w[a][b]) * server_distance(at[a], at[b]);
    return c;
  };
  // Blocks in breadth-first order of the block graph, so that each one placed has placed neighbours.
  std::vector<int> order{0};
  std::vector<bool> seen(blocks, false);
  seen[0] = true;
  for (size_t i = 0; i < order.size(); ++i)
    for (int b = 0; b < blocks; ++b)
      if (!seen[b] && w[order[i]][b] > 0) {
        seen[b] = true;
        order.push_back(b);
      }
  for (int b = 0; b < blocks; ++b)
    if (!seen[b]) order.push_back(b);
  // Greedy from every free server as the first block's home, then pairwise swaps (also with free
  // servers left over) while they shorten the circuits; the cheapest mapping is routed.
  std::vector<int> best_at;
  long best_cost = -1;
  for (int seed : whole) {
    std::vector<int> at(blocks, -1);
    std::vector<bool> taken(kServersPerRack, false);
    for (int b : order) {
      int pick = -1;
      long pick_cost = 0;
      for (int sv : whole) {
        if (taken[sv] || (b == order[0] && sv != seed)) continue;
        long c = 0;
        for (int o = 0; o < blocks; ++o)
          if (at[o] >= 0) c += static_cast<long>(w[b][o]) * server_distance(sv, at[o]);
        if (pick < 0 || c < pick_cost) {
          pick = sv;
          pick_cost = c;
        }
      }
      at[b] = pick;
      taken[pick] = true;
    }
    long cost = cost_of(at);
    for (bool improved = true; improved;) {
      improved = false;
      for (int b = 0; b < blocks; ++b)
        for (int sv : whole) {
          if (sv == at[b]) continue;
          int other = static_cast<int>(std::find(at.begin(), at.end(), sv) - at.begin());
          std::vector<int> trial = at;
          trial[b] = sv;
          if (other < blocks) trial[other] = at[b];
          long c = cost_of(trial);
          if (c < cost) {
            at = std::move(trial);
            cost = c;
            improved = true;
          }
        }
    }
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best_at = at;
    }
  }
  std::array<int, kServersPerRack> next_free{};
  for (int l = 0; l < n; ++l) {
    int sv = best_at[block[l]];
    s.chips[l] = r * kChipsPerRack + free_chips[sv][next_free[sv]++];
  }
  // Route every crossing edge on a shortest path with a fibre left, short ones first.
  std::array<int, kLinksPerRack> res{}, idle{};
  for (int k = 0; k < kLinksPerRack; ++k) {
    res[k] = dc.link_residual(r, k);
    idle[k] = dc.link_idle(r, k);
  }
  std::vector<size_t> idx(edges.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  auto home = [&](int l) { return best_at[block[l]]; };
  std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) {
    return server_distance(home(edges[x].u), home(edges[x].v)) < server_distance(home(edges[y].u), home(edges[y].v));
  });
  s.circuits.resize(edges.size());
  for (size_t i : idx) {
    const auto& e = edges[i];
    Circuit c{e.u, e.v, {}, e.wanted};
    if (home(e.u) != home(e.v)) {
      c.path = shortest_path(home(e.u), home(e.v), res);
      if (c.path.empty()) return std::nullopt;  // the fabric has no fibre left for this circuit
      c.lanes = 1;
      for (int k : c.path) {
        res[k]--;
        idle[k]--;  // may go negative: the commit takes back older slices' extra lanes
      }
    }
    s.circuits[i] = std::move(c);
  }
  // Extra lanes up to what each circuit wants, from fibres idle on its whole path, round robin.
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t i : idx) {
      auto& c = s.circuits[i];
      if (c.path.empty() || c.lanes >= edges[i].wanted) continue;
      bool ok = true;
      for (int k : c.path) ok = ok && idle[k] > 0;
      if (!ok) continue;
      for (int k : c.path) idle[k]--;
      c.lanes++;
      grew = true;
    }
  }
  return s;
}

std::optional<Slice> Allocator::place(const Datacenter& dc, const Shape& shape) {
  const int n = shape.volume();
  if (n > kChipsPerRack) return place_multirack(dc, shape);
  if (opt_.policy == Policy::Baseline) {
    for (int r = 0; r < dc.racks(); ++r) {
      auto s = opt_.baseline == BaselineMode::Aligned ? aligned_place_in_rack(dc, r, n)
                                                       : baseline_place_in_rack(dc, r, shape);
      if (s) return s;
    }
    return std::nullopt;
  }
  const long key = (static_cast<long>(shape.d[0]) * 4096 + shape.d[1]) * 4096 + shape.d[2];
  auto& memo = failed_[key];
  memo.resize(dc.racks(), 0);
  for (int r = 0; r < dc.racks(); ++r) {
    if (dc.rack_free(r) < n) continue;
    // Within a rack Morphlux can do whatever the baseline can: a free contiguous box uses the
    // native torus links of its chips. The fabric placement is tried first (same chips for a box
    // layout, more lanes); when it is refused (fibres held by other slices, or the search gave
    // up) the rack's contiguous box is taken.
    auto torus_box = [&]() -> std::optional<Slice> {
      auto s = baseline_place_in_rack(dc, r, shape);
      if (s) s->decided_by = "torus-box";
      return s;
    };
    // A rack that refused this shape and has not changed since refuses it again.
    if (memo[r] == dc.rack_version(r) + 1) {
      if (auto s = torus_box()) return s;
      continue;
    }
    if (opt_.fabric == FabricMode::Server) {
      if (auto s = server_place_in_rack(dc, r, shape)) return s;
      memo[r] = dc.rack_version(r) + 1;
      if (auto s = torus_box()) return s;
      continue;
    }
    RackView v = rack_view(dc, r);
    bool use_ilp = opt_.solver == Solver::Ilp ||
                   (opt_.solver == Solver::Auto && n <= opt_.ilp_max_chips);
    if (opt_.solver == Solver::Auto && !use_ilp) ilp_.skipped_large++;
    ServerAssign a;
    std::string who;
    if (use_ilp) {
      ilp_.calls++;
      IlpResult res = fabric_ilp(v, shape, opt_.ilp_time_limit_ms);
      ilp_.solve_ms.push_back(res.ms);
      if (res.status == IlpResult::Status::Optimal) {
        ilp_.optimal++;
        a = res.assign;
        who = "ilp";
      } else if (res.status == IlpResult::Status::Infeasible) {
        ilp_.infeasible++;
        memo[r] = dc.rack_version(r) + 1;
        if (auto s = torus_box()) return s;
        continue;
      } else {
        ilp_.timeouts++;
        a = fabric_heuristic(v, shape);
        who = "heuristic(ilp-timeout)";
        if (a.empty() && res.status == IlpResult::Status::FeasibleTimeout) {
          a = res.assign;
          who = "ilp(feasible,timeout)";
        }
      }
    } else {
      a = fabric_heuristic(v, shape);
      who = "heuristic";
    }
    if (a.empty()) {
      memo[r] = dc.rack_version(r) + 1;
      if (auto s = torus_box()) return s;
      continue;
    }
    Slice s = fabric_slice(dc, r, shape, a);
    s.decided_by = who;
    return s;
  }
  return std::nullopt;
}

}  // namespace mxtb::host::alloc
