// A spare-ready bring-up (docs/rack.md, "Spare-ready bring-up"). A spare in the failing server
// re-points only that server's mesh, and the mesh (a Beneš network, only rearrangeably
// non-blocking) must route the spare's circuits around the circuits that stay; where it cannot, it
// moves one, and the XPUs at its ends (often in another server, through a fibre) lose their links
// too. Whether it can depends on how the bring-up was routed, and two choices there are free:
// which of the fibres joining two servers each circuit between them takes (planned here, for the
// whole rack), and how each board routes its whole map (its firmware's spare-ready routing,
// firmware::route_whole_map).
#pragma once

#include "firmware/ocs_firmware.h"
#include "firmware/routing.h"
#include "protocol/rack_map.h"
#include "sim/rack/rack_config.h"

#include <vector>

namespace mxtb::sim::rack {

struct SpareReadyPlan {
  protocol::RackMap map;        // the bring-up map: the rack's tenants, circuits on the chosen fibres
  int substitutions = 0;        // over every server: its tenant XPUs times its spare XPUs
  int clean = 0;                // of them, routed by its firmware with no circuit moved, on map's fibres
  int clean_first_fibres = 0;   // the same on protocol::rack_tenants_map's own fibres (the first free)
  int clean_not_spare_ready = 0;  // on the first free fibres, each board routing from phase 1's states
  int maps_evaluated = 0;       // the search's cost
  std::vector<int> clean_by_server;
};

// From protocol::rack_tenants_map's map, moves a circuit to another free fibre joining its two
// servers (one of the same length, retimers and loss: nothing else changes), or swaps two such
// circuits' fibres, one change at a time, keeping a change only when it leaves more substitutions
// clean, until none does or every one is (deterministic: every process of a rack plans the same).
SpareReadyPlan plan_spare_ready(const RackConfig& cfg);

// The map every board brings up and the host starts from: plan_spare_ready's when
// cfg.spare_ready, protocol::rack_tenants_map's otherwise.
protocol::RackMap bring_up_map(const RackConfig& cfg);

// The bring-up of a rack tenant's circuits, on every board at once at fixed simulated times, so
// that it is the same whatever the partition. A commit verifies each circuit's light at its
// output; a circuit arriving through a fibre is lit only once the far board has sent its lane's
// light into that fibre. So: phase 1, every board commits its lanes' light out into the fibres
// (and its circuits inside the server); phase 2, once every board's phase 1 is over, the whole map.
struct BringUp {
  std::vector<int> phase1, phase2;  // port maps
};
BringUp bring_up_maps(const std::vector<int>& port_target, int links);

// How many substitutions one server's bring-up leaves clean (firmware::spare_readiness), its two
// phases routed by the firmware's own rule (firmware::route_map) as a rack's firmware has it:
// spare-ready (route_whole_map), or else phase 2 from phase 1's element states.
firmware::SpareReadiness bring_up_readiness(const protocol::ServerShape& shape, const std::vector<int>& port_target, bool spare_ready);

}  // namespace mxtb::sim::rack
