#include "protocol/rack_map.h"

#include <fmt/format.h>

namespace mxtb::protocol {

namespace {
int wrap(int v, int n) { return ((v % n) + n) % n; }
}  // namespace

int RackShape::server_at(int x, int y) const { return wrap(x, servers_x) + servers_x * wrap(y, servers_y); }

const char* direction_name(int d) {
  static const char* names[] = {"+x", "-x", "+y", "-y"};
  return d >= 0 && d < 4 ? names[d] : "by hand";
}

int fibre_ports(const ServerShape& s) { return s.mesh_ports - s.links(); }

int neighbour_port(const RackShape& r, int d, int f) { return r.server.links() + d * r.fibres_per_neighbour + f; }

std::vector<RackFibre> torus_wiring(const RackShape& r) {
  if (r.servers_x < 1 || r.servers_y < 1)
    throw RackMapError(fmt::format("rack: a torus of {} x {} servers", r.servers_x, r.servers_y));
  if (r.fibres_per_neighbour < 1) throw RackMapError(fmt::format("rack: {} fibres per neighbour; at least 1", r.fibres_per_neighbour));
  const int need = 4 * r.fibres_per_neighbour;
  if (need > fibre_ports(r.server))
    throw RackMapError(fmt::format("rack: 4 sides x {} fibres need {} fibre ports, a server's {}-port mesh has {} beyond its {} lanes",
                                   r.fibres_per_neighbour, need, r.server.mesh_ports, fibre_ports(r.server), r.server.links()));
  std::vector<RackFibre> wiring;
  for (int y = 0; y < r.servers_y; ++y)
    for (int x = 0; x < r.servers_x; ++x) {
      const int here = r.server_at(x, y);
      for (int dim = 0; dim < 2; ++dim) {
        if ((dim == 0 ? r.servers_x : r.servers_y) < 2) continue;
        const int next = dim == 0 ? r.server_at(x + 1, y) : r.server_at(x, y + 1);
        const int plus = dim == 0 ? kPlusX : kPlusY;
        for (int f = 0; f < r.fibres_per_neighbour; ++f)
          wiring.push_back(RackFibre{{here, neighbour_port(r, plus, f)}, {next, neighbour_port(r, plus + 1, f)}, plus});
      }
    }
  return wiring;
}

void check_wiring(const RackShape& r, const std::vector<RackFibre>& wiring) {
  const int links = r.server.links();
  std::vector<std::vector<int>> user(static_cast<size_t>(r.servers()), std::vector<int>(static_cast<size_t>(r.server.mesh_ports), -1));
  for (size_t i = 0; i < wiring.size(); ++i) {
    for (const FibreEnd* e : {&wiring[i].a, &wiring[i].b}) {
      const char* side = e == &wiring[i].a ? "a" : "b";
      if (e->server < 0 || e->server >= r.servers())
        throw RackMapError(fmt::format("fibre {} end {}: server {} does not exist (the rack has servers 0..{})", i, side, e->server,
                                       r.servers() - 1));
      if (e->port < links || e->port >= r.server.mesh_ports)
        throw RackMapError(fmt::format("fibre {} end {}: port {} of server {} is not a fibre port ({}..{}; ports below {} carry lanes)", i,
                                       side, e->port, e->server, links, r.server.mesh_ports - 1, links));
      int& u = user[static_cast<size_t>(e->server)][static_cast<size_t>(e->port)];
      if (u >= 0)
        throw RackMapError(fmt::format("fibre {} end {}: port {} of server {} is already joined by fibre {}", i, side, e->port, e->server,
                                       u));
      u = static_cast<int>(i);
    }
  }
}

std::string to_string(const RackLane& l) { return fmt::format("server {} XPU {} lane {}", l.server, l.xpu, l.lane); }

RackPlacement whole_rack_placement(const RackShape& r) {
  if (r.server.xpus < 4) throw RackMapError(fmt::format("rack: a server of {} XPUs holds no 2x2 block", r.server.xpus));
  RackPlacement t;
  t.dim_x = 2 * r.servers_x;
  t.dim_y = 2 * r.servers_y;
  t.xpu_of_position.resize(static_cast<size_t>(t.dim_x * t.dim_y));
  for (int y = 0; y < t.dim_y; ++y)
    for (int x = 0; x < t.dim_x; ++x)
      t.xpu_of_position[static_cast<size_t>(x + t.dim_x * y)] = RackXpu{r.server_at(x / 2, y / 2), x % 2 + 2 * (y % 2)};
  return t;
}

RackMap rack_torus_map(const RackShape& r, const std::vector<RackFibre>& wiring, const RackPlacement& t, const RackMap* keep) {
  return rack_tenants_map(r, wiring, {t}, keep);
}

namespace {

// A circuit a tenant's torus wants: lane a to lane b, along direction d.
struct WantedCircuit {
  RackLane a, b;
  int d;
  int tenant;
};

std::string tenant_name(size_t tenants, int t) { return tenants == 1 ? "tenant" : fmt::format("tenant {}", t); }

// Every tenant's torus circuits in order, each placement checked (its size, its XPUs the rack's,
// none at two positions or in two tenants).
std::vector<WantedCircuit> wanted_circuits(const RackShape& r, const std::vector<RackPlacement>& tenants) {
  const ServerShape& s = r.server;
  // Which tenant holds each XPU (-1: none), so that two tenants never share one.
  std::vector<std::vector<int>> holder(static_cast<size_t>(r.servers()), std::vector<int>(static_cast<size_t>(s.xpus), -1));
  std::vector<WantedCircuit> wanted;
  for (size_t ti = 0; ti < tenants.size(); ++ti) {
    const RackPlacement& t = tenants[ti];
    // A lone tenant keeps the messages it always had; several name which one is wrong.
    const std::string who = tenant_name(tenants.size(), static_cast<int>(ti));
    const int positions = t.dim_x * t.dim_y;
    if (t.dim_x == 0 && t.dim_y == 0 && t.xpu_of_position.empty()) continue;  // no tenant: its ports unused
    if (t.dim_x < 1 || t.dim_y < 1) throw RackMapError(fmt::format("{}: a torus of {} x {}", who, t.dim_x, t.dim_y));
    if (static_cast<int>(t.xpu_of_position.size()) != positions)
      throw RackMapError(fmt::format("{}: a {} x {} torus needs {} XPUs, the placement has {}", who, t.dim_x, t.dim_y, positions,
                                     t.xpu_of_position.size()));
    if (s.lanes_per_xpu < (t.dim_y > 1 ? 4 : 2))
      throw RackMapError(fmt::format("{}: a 2-D torus needs 4 lanes per XPU, the server has {}", who, s.lanes_per_xpu));
    for (int p = 0; p < positions; ++p) {
      const RackXpu& x = t.xpu_of_position[static_cast<size_t>(p)];
      if (x.server < 0 || x.server >= r.servers() || x.xpu < 0 || x.xpu >= s.xpus)
        throw RackMapError(fmt::format("{}: position {} is on server {} XPU {}, which the rack does not have ({} servers of {} XPUs)", who,
                                       p, x.server, x.xpu, r.servers(), s.xpus));
      int& h = holder[static_cast<size_t>(x.server)][static_cast<size_t>(x.xpu)];
      if (h == static_cast<int>(ti)) throw RackMapError(fmt::format("{}: server {} XPU {} is placed at two positions", who, x.server, x.xpu));
      if (h >= 0) throw RackMapError(fmt::format("{}: server {} XPU {} is tenant {}'s", who, x.server, x.xpu, h));
      h = static_cast<int>(ti);
    }
    auto at = [&](int x, int y) { return t.xpu_of_position[static_cast<size_t>(wrap(x, t.dim_x) + t.dim_x * wrap(y, t.dim_y))]; };
    for (int y = 0; y < t.dim_y; ++y)
      for (int x = 0; x < t.dim_x; ++x) {
        const RackXpu here = at(x, y), east = at(x + 1, y);
        wanted.push_back({RackLane{here.server, here.xpu, 0}, RackLane{east.server, east.xpu, 1}, kPlusX, static_cast<int>(ti)});
        if (t.dim_y > 1) {
          const RackXpu north = at(x, y + 1);
          wanted.push_back({RackLane{here.server, here.xpu, 2}, RackLane{north.server, north.xpu, 3}, kPlusY, static_cast<int>(ti)});
        }
      }
  }
  return wanted;
}

}  // namespace

RackMap rack_tenants_map(const RackShape& r, const std::vector<RackFibre>& wiring, const std::vector<RackPlacement>& tenants,
                         const RackMap* keep) {
  const ServerShape& s = r.server;
  const std::vector<WantedCircuit> wanted = wanted_circuits(r, tenants);
  RackMap m;
  m.port_target.assign(static_cast<size_t>(r.servers()), std::vector<int>(static_cast<size_t>(s.mesh_ports), -1));
  m.expected_peer.assign(static_cast<size_t>(r.servers()), std::vector<RackLane>(static_cast<size_t>(s.links())));
  // Fibres are the rack's, shared by every tenant: one circuit each.
  std::vector<bool> fibre_used(wiring.size(), false);
  auto join = [&](int server, int a, int b) {
    m.port_target[static_cast<size_t>(server)][static_cast<size_t>(a)] = b;
    m.port_target[static_cast<size_t>(server)][static_cast<size_t>(b)] = a;
  };
  // A free fibre between servers a and b, the one leaving a on side `d` first.
  auto free_fibre = [&](int a, int b, int d) {
    int any = -1;
    for (size_t i = 0; i < wiring.size(); ++i) {
      const RackFibre& f = wiring[i];
      if (fibre_used[i]) continue;
      if (f.a.server == a && f.b.server == b && f.direction == d) return static_cast<int>(i);
      if (any < 0 && ((f.a.server == a && f.b.server == b) || (f.a.server == b && f.b.server == a))) any = static_cast<int>(i);
    }
    return any;
  };
  // The fibre `keep` gives the circuit between these two lanes, when it is still free (-1: none).
  // Not `exact`: the fibre of keep's circuit from one of these lanes to the other's server. An XPU
  // that takes another's place in its server (a spare in the failing server) takes its circuits'
  // fibres, so that the far servers' meshes stay as they are. (A lane has one circuit: keep's is gone.)
  auto kept_fibre = [&](const RackLane& a, const RackLane& b, bool exact) {
    if (!keep) return -1;
    for (const RackCircuit& c : keep->circuits) {
      if (c.fibre < 0 || static_cast<size_t>(c.fibre) >= wiring.size() || fibre_used[static_cast<size_t>(c.fibre)]) continue;
      const bool same = (c.a == a && c.b == b) || (c.a == b && c.b == a);
      const bool shares_lane = (c.a == a && c.b.server == b.server) || (c.b == a && c.a.server == b.server) ||
                               (c.a == b && c.b.server == a.server) || (c.b == b && c.a.server == a.server);
      if (exact ? same : shares_lane) return c.fibre;
    }
    return -1;
  };
  auto connect = [&](const WantedCircuit& w, int fibre) {
    const RackLane& a = w.a;
    const RackLane& b = w.b;
    const int pa = port_of(s, LaneId{a.xpu, a.lane}), pb = port_of(s, LaneId{b.xpu, b.lane});
    RackCircuit c{a, b, -1};
    if (a.server == b.server) {
      join(a.server, pa, pb);
    } else {
      c.fibre = fibre >= 0 ? fibre : free_fibre(a.server, b.server, w.d);
      if (c.fibre < 0) {
        const std::string who = tenant_name(tenants.size(), w.tenant);
        int joining = 0;
        for (const RackFibre& f : wiring)
          joining += (f.a.server == a.server && f.b.server == b.server) || (f.a.server == b.server && f.b.server == a.server);
        throw RackMapError(joining == 0 ? fmt::format("{}: {} and {} are torus neighbours ({}), but no fibre joins server {} to server {}",
                                                      who, to_string(a), to_string(b), direction_name(w.d), a.server, b.server)
                                        : fmt::format("{}: needs more circuits between server {} and server {} than the {} fibres joining "
                                                      "them{}",
                                                      who, a.server, b.server, joining, tenants.size() == 1 ? "" : " (every tenant's together)"));
      }
      const RackFibre& f = wiring[static_cast<size_t>(c.fibre)];
      fibre_used[static_cast<size_t>(c.fibre)] = true;
      const bool a_first = f.a.server == a.server;
      join(a.server, pa, a_first ? f.a.port : f.b.port);
      join(b.server, pb, a_first ? f.b.port : f.a.port);
    }
    m.expected_peer[static_cast<size_t>(a.server)][static_cast<size_t>(pa)] = b;
    m.expected_peer[static_cast<size_t>(b.server)][static_cast<size_t>(pb)] = a;
    m.circuits.push_back(c);
  };
  // The circuits `keep` has first, on their fibres (a placement that changes moves no circuit
  // between the same two lanes to another fibre: it would retrain for nothing, and another
  // tenant's circuits stay exactly as they run), then those that keep one end of one, then the rest.
  std::vector<bool> placed(wanted.size(), false);
  for (bool exact : {true, false})
    for (size_t i = 0; i < wanted.size(); ++i)
      if (!placed[i] && wanted[i].a.server != wanted[i].b.server)
        if (const int f = kept_fibre(wanted[i].a, wanted[i].b, exact); f >= 0) {
          connect(wanted[i], f);
          placed[i] = true;
        }
  for (size_t i = 0; i < wanted.size(); ++i)
    if (!placed[i]) connect(wanted[i], -1);
  // Circuits in the tori's order, whichever pass placed them.
  std::vector<RackCircuit> ordered;
  for (const WantedCircuit& w : wanted)
    for (const RackCircuit& c : m.circuits)
      if (c.a == w.a && c.b == w.b) ordered.push_back(c);
  m.circuits = std::move(ordered);
  return m;
}

int rack_xpu(const RackShape& shape, const RackXpu& x) { return x.server * shape.server.xpus + x.xpu; }

std::vector<int> torus_ring_positions(int dim_x, int dim_y) {
  if (dim_x < 1 || dim_y < 1 || dim_x * dim_y < 2)
    throw RackMapError(fmt::format("a ring over a {}x{} torus: at least 2 positions needed", dim_x, dim_y));
  std::vector<int> order;
  if (dim_y == 1 || dim_x == 1) {
    for (int p = 0; p < dim_x * dim_y; ++p) order.push_back(p);
    return order;
  }
  const bool transpose = dim_y % 2 != 0;
  if (transpose && dim_x % 2 != 0)
    throw RackMapError(
        fmt::format("a ring over a {}x{} torus through neighbours only: one dimension must be even", dim_x, dim_y));
  const int X = transpose ? dim_y : dim_x, Y = transpose ? dim_x : dim_y;  // Y even
  auto at = [&](int x, int y) { return transpose ? y + dim_x * x : x + dim_x * y; };
  order.push_back(at(0, 0));
  for (int y = 0; y < Y; ++y)
    for (int i = 1; i < X; ++i) order.push_back(at(y % 2 == 0 ? i : X - i, y));
  for (int y = Y - 1; y >= 1; --y) order.push_back(at(0, y));
  return order;
}

std::vector<int> rack_ring_xpus(const RackShape& shape, const RackPlacement& t) {
  std::vector<int> out;
  for (int p : torus_ring_positions(t.dim_x, t.dim_y)) out.push_back(rack_xpu(shape, t.xpu_of_position[static_cast<size_t>(p)]));
  return out;
}

}  // namespace mxtb::protocol
