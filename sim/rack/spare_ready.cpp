#include "sim/rack/spare_ready.h"

#include "firmware/benes.h"

#include <stdexcept>

namespace mxtb::sim::rack {

BringUp bring_up_maps(const std::vector<int>& port_target, int links) {
  BringUp b{port_target, port_target};
  for (size_t p = static_cast<size_t>(links); p < port_target.size(); ++p) b.phase1[p] = -1;  // light from the fibres: not yet
  return b;
}

firmware::SpareReadiness bring_up_readiness(const protocol::ServerShape& shape, const std::vector<int>& port_target, bool spare_ready) {
  auto topology = firmware::BenesTopology::create(shape.mesh_ports);
  if (!topology) throw std::invalid_argument("bring_up_readiness: " + topology.error());
  const firmware::BenesTopology& t = topology.value();
  // A rack's firmware during its bring-up (rack_sim.cpp): keep_unchanged_paths, not yet
  // route_around_unchanged, spare-ready as the rack is.
  firmware::FirmwareConfig fc;
  fc.shape = shape;
  fc.keep_unchanged_paths = true;
  fc.spare_ready_whole_maps = spare_ready;
  const BringUp maps = bring_up_maps(port_target, shape.links());
  auto phase1 = firmware::route_map(fc, t, maps.phase1, {});
  if (!phase1) throw std::invalid_argument("bring_up_readiness: phase 1: " + phase1.error());
  auto phase2 = firmware::route_map(fc, t, maps.phase2, phase1.value());
  if (!phase2) throw std::invalid_argument("bring_up_readiness: phase 2: " + phase2.error());
  return firmware::spare_readiness(t, maps.phase2, phase2.value(), firmware::port_xpus(shape, shape.mesh_ports));
}

namespace {

struct Score {
  int substitutions = 0, clean = 0;
  std::vector<int> clean_by_server;
};

// Every server's readiness for `map`, each routed as its firmware routes the bring-up.
Score score(const RackConfig& cfg, const protocol::RackMap& map, bool spare_ready) {
  Score s;
  for (const auto& target : map.port_target) {
    const firmware::SpareReadiness r = bring_up_readiness(cfg.shape.server, target, spare_ready);
    s.substitutions += r.substitutions;
    s.clean += r.clean;
    s.clean_by_server.push_back(r.clean);
  }
  return s;
}

// Whether fibre `f` could carry circuit `c` instead of its own fibre `own` and nothing else
// change: it joins the same two servers and has the same length, retimers and loss.
bool interchangeable(const RackConfig& cfg, size_t f, int own, const protocol::RackCircuit& c) {
  const protocol::RackFibre& w = cfg.wiring[f];
  const bool joins = (w.a.server == c.a.server && w.b.server == c.b.server) || (w.a.server == c.b.server && w.b.server == c.a.server);
  if (!joins || own < 0 || static_cast<size_t>(own) >= cfg.lines.size() || f >= cfg.lines.size()) return joins;
  const FibreLine& a = cfg.lines[f];
  const FibreLine& b = cfg.lines[static_cast<size_t>(own)];
  return a.metres == b.metres && a.retimer_ns == b.retimer_ns && a.loss_db == b.loss_db;
}

}  // namespace

SpareReadyPlan plan_spare_ready(const RackConfig& cfg) {
  const std::vector<protocol::RackPlacement> tenants = rack_tenants(cfg);
  SpareReadyPlan plan;
  plan.map = protocol::rack_tenants_map(cfg.shape, cfg.wiring, tenants);
  plan.clean_not_spare_ready = score(cfg, plan.map, false).clean;
  Score best = score(cfg, plan.map, true);
  plan.maps_evaluated = 1;
  plan.clean_first_fibres = best.clean;
  // Hill climbing over one change at a time. A change is written as the circuits' fibres and the
  // map made again from them (rack_tenants_map's `keep`), so that the map is one the protocol's
  // own rules give: every placement after it keeps these fibres the same way.
  constexpr int kMaxPasses = 16;
  for (int pass = 0; pass < kMaxPasses && best.clean < best.substitutions; ++pass) {
    bool improved = false;
    const size_t circuits = plan.map.circuits.size();
    for (size_t i = 0; i < circuits && best.clean < best.substitutions; ++i) {
      for (size_t f = 0; f < cfg.wiring.size() && best.clean < best.substitutions; ++f) {
        const protocol::RackCircuit c = plan.map.circuits[i];  // as the last change left it
        if (c.fibre < 0 || static_cast<int>(f) == c.fibre || !interchangeable(cfg, f, c.fibre, c)) continue;
        protocol::RackMap keep = plan.map;
        keep.circuits[i].fibre = static_cast<int>(f);
        for (size_t j = 0; j < circuits; ++j)  // the circuit on that fibre, if any, takes this one's
          if (j != i && keep.circuits[j].fibre == static_cast<int>(f)) keep.circuits[j].fibre = c.fibre;
        protocol::RackMap tried = protocol::rack_tenants_map(cfg.shape, cfg.wiring, tenants, &keep);
        Score s = score(cfg, tried, true);
        ++plan.maps_evaluated;
        if (s.clean <= best.clean) continue;
        plan.map = std::move(tried);
        best = std::move(s);
        improved = true;
      }
    }
    if (!improved) break;
  }
  plan.substitutions = best.substitutions;
  plan.clean = best.clean;
  plan.clean_by_server = std::move(best.clean_by_server);
  return plan;
}

protocol::RackMap bring_up_map(const RackConfig& cfg) {
  if (!cfg.spare_ready) return protocol::rack_tenants_map(cfg.shape, cfg.wiring, rack_tenants(cfg));
  return plan_spare_ready(cfg).map;
}

}  // namespace mxtb::sim::rack
