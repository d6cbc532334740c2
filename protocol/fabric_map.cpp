#include "protocol/fabric_map.h"

#include <algorithm>

namespace mxtb::protocol {

int port_of(const ServerShape& s, LaneId lane) { return lane.xpu * s.lanes_per_xpu + lane.lane; }

LaneId lane_of_port(const ServerShape& s, int port) {
  if (port < 0 || port >= s.xpus * s.lanes_per_xpu) return LaneId{};
  return LaneId{port / s.lanes_per_xpu, port % s.lanes_per_xpu};
}

FabricMap torus_map(const ServerShape& s, const TorusPlacement& t) {
  int positions = t.dim_x * t.dim_y;
  if (t.dim_x < 2 || t.dim_y < 1)
    throw FabricMapError("torus must be at least 2 x 1, got " + std::to_string(t.dim_x) + " x " + std::to_string(t.dim_y));
  if (static_cast<int>(t.xpu_of_position.size()) != positions)
    throw FabricMapError("torus " + std::to_string(t.dim_x) + " x " + std::to_string(t.dim_y) + " needs " +
                         std::to_string(positions) + " XPUs, placement has " + std::to_string(t.xpu_of_position.size()));
  int lanes_needed = t.dim_y > 1 ? 4 : 2;
  if (s.lanes_per_xpu < lanes_needed)
    throw FabricMapError("a torus with " + std::to_string(t.dim_y > 1 ? 2 : 1) + " dimensions needs " +
                         std::to_string(lanes_needed) + " lanes per XPU, the server has " + std::to_string(s.lanes_per_xpu));
  if (s.xpus * s.lanes_per_xpu > s.mesh_ports)
    throw FabricMapError("the mesh has " + std::to_string(s.mesh_ports) + " ports, fewer than the XPU lanes");
  std::vector<bool> used(s.xpus, false);
  for (int p = 0; p < positions; ++p) {
    int x = t.xpu_of_position[p];
    if (x < 0 || x >= s.xpus)
      throw FabricMapError("position " + std::to_string(p) + " is placed on XPU " + std::to_string(x) +
                           ", outside 0.." + std::to_string(s.xpus - 1));
    if (used[x]) throw FabricMapError("XPU " + std::to_string(x) + " is placed at two positions");
    used[x] = true;
  }

  FabricMap m;
  m.port_target.assign(s.mesh_ports, -1);
  m.expected_peer.assign(s.mesh_ports, LaneId{});
  auto connect = [&](LaneId a, LaneId b) {
    int pa = port_of(s, a), pb = port_of(s, b);
    m.port_target[pa] = pb;  // a's transmitter lights b's receiver ...
    m.port_target[pb] = pa;  // ... and back
    m.expected_peer[pa] = b;
    m.expected_peer[pb] = a;
  };
  for (int y = 0; y < t.dim_y; ++y) {
    for (int x = 0; x < t.dim_x; ++x) {
      int here = t.xpu_of_position[x + t.dim_x * y];
      connect(LaneId{here, 0}, LaneId{t.xpu_of_position[(x + 1) % t.dim_x + t.dim_x * y], 1});
      if (t.dim_y > 1) connect(LaneId{here, 2}, LaneId{t.xpu_of_position[x + t.dim_x * ((y + 1) % t.dim_y)], 3});
    }
  }
  return m;
}

FabricMap ring_map(const ServerShape& s, const std::vector<int>& ring) {
  const int n = static_cast<int>(ring.size());
  if (n < 2) throw FabricMapError("a ring needs at least 2 XPUs, got " + std::to_string(n));
  if (s.lanes_per_xpu < 2 || s.lanes_per_xpu % 2)
    throw FabricMapError("a ring needs an even number of lanes per XPU, the server has " + std::to_string(s.lanes_per_xpu));
  if (s.xpus * s.lanes_per_xpu > s.mesh_ports)
    throw FabricMapError("the mesh has " + std::to_string(s.mesh_ports) + " ports, fewer than the XPU lanes");
  std::vector<bool> used(s.xpus, false);
  for (int i = 0; i < n; ++i) {
    int x = ring[i];
    if (x < 0 || x >= s.xpus)
      throw FabricMapError("ring position " + std::to_string(i) + " is XPU " + std::to_string(x) + ", outside 0.." +
                           std::to_string(s.xpus - 1));
    if (used[x]) throw FabricMapError("XPU " + std::to_string(x) + " is in the ring twice");
    used[x] = true;
  }
  FabricMap m;
  m.port_target.assign(s.mesh_ports, -1);
  m.expected_peer.assign(s.mesh_ports, LaneId{});
  const int half = s.lanes_per_xpu / 2;
  // Two XPUs are each other's successor: one hop's lanes, then the other's, cover all of them.
  for (int i = 0; i < (n == 2 ? 2 : n); ++i) {
    int here = ring[i], next = ring[(i + 1) % n];
    for (int l = 0; l < half; ++l) {
      LaneId a{here, l}, b{next, half + l};
      int pa = port_of(s, a), pb = port_of(s, b);
      m.port_target[pa] = pb;
      m.port_target[pb] = pa;
      m.expected_peer[pa] = b;
      m.expected_peer[pb] = a;
    }
  }
  return m;
}

std::vector<int> ring_positions(const TorusPlacement& t) {
  std::vector<int> order;
  if (t.dim_y == 1 || t.dim_y % 2 == 0) {
    for (int y = 0; y < t.dim_y; ++y)
      for (int i = 0; i < t.dim_x; ++i) order.push_back((y % 2 ? t.dim_x - 1 - i : i) + t.dim_x * y);
  } else if (t.dim_x % 2 == 0) {
    for (int x = 0; x < t.dim_x; ++x)
      for (int i = 0; i < t.dim_y; ++i) order.push_back(x + t.dim_x * (x % 2 ? t.dim_y - 1 - i : i));
  } else {
    throw FabricMapError("no ring order for a " + std::to_string(t.dim_x) + " x " + std::to_string(t.dim_y) +
                         " torus (both dimensions odd)");
  }
  return order;
}

std::vector<int> ring_xpus(const TorusPlacement& t) {
  std::vector<int> xpus;
  for (int p : ring_positions(t)) xpus.push_back(t.xpu_of_position.at(static_cast<size_t>(p)));
  return xpus;
}

TorusPlacement substitute(const TorusPlacement& t, int failed, int spare) {
  TorusPlacement out = t;
  auto it = std::find(out.xpu_of_position.begin(), out.xpu_of_position.end(), failed);
  if (it == out.xpu_of_position.end())
    throw FabricMapError("XPU " + std::to_string(failed) + " is not part of the tenant");
  if (std::find(out.xpu_of_position.begin(), out.xpu_of_position.end(), spare) != out.xpu_of_position.end())
    throw FabricMapError("spare XPU " + std::to_string(spare) + " is already part of the tenant");
  *it = spare;
  return out;
}

}  // namespace mxtb::protocol
