// The baseline the paper compares Morphlux with, on the same rack (docs/rack.md, "The migration
// baseline"): a static torus. The rack's circuits stay as its bring-up placed them (the whole
// rack's XPU torus, as cables would be) and nothing re-points them; a tenant runs on a slice, a
// block of that torus. When one of its XPUs dies the slice cannot take a spare in its place: the
// whole slice moves to a free block of the same shape, every rank relaunched there and every
// rank's state moved over the torus, and the job formed again on the new block.
#pragma once

#include "host/comm/rank_group.h"
#include "host/failover/rack_failover.h"
#include "protocol/rack_map.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::host::failover {

// A dim_x x dim_y block of the static torus `torus` whose corner is torus position (x0, y0), the
// block's positions wrapping round the torus.
struct TorusBlock {
  int x0 = 0, y0 = 0, dim_x = 0, dim_y = 0;
};

// The block's XPUs as a placement (position bx + dim_x by). Throws RackMapError naming the block
// when it is larger than the torus or when its ring (protocol::torus_ring_positions) would take a
// step between XPUs that are not the static torus's neighbours (a block with no even side that
// does not wrap the whole torus).
protocol::RackPlacement block_placement(const protocol::RackPlacement& torus, const TorusBlock& b);

// Half the static torus, its longer dimension halved (y on a tie: 4x4 gives 4x2), at the
// corner (0, 0): on two or four servers, whole servers. The default slice.
TorusBlock half_block(const protocol::RackPlacement& torus);

// The free blocks of `from`'s shape: none of their XPUs in `busy` (the tenant's, the dead ones,
// other tenants'), each checked by block_placement. Nearest first (the hops a rank's state makes,
// then y0, then x0). Empty: no free slice.
std::vector<TorusBlock> free_blocks(const protocol::RackPlacement& torus, const TorusBlock& from,
                                    const std::vector<protocol::RackXpu>& busy);

// Every rank's state moving from its XPU in `from` to the same position in `to` over the static
// torus's circuits, one route a rank: dimension order (x first, then y), each dimension the
// shorter way round; where both ways are as short (half way round), the way whose busiest link is
// least busy so far, rank by rank. How far and how crowded. Pure.
struct MigrationLoad {
  int ranks = 0;
  int hops = 0;             // each rank's route (every rank moves by the same offset)
  int max_link_flows = 0;   // the most routes any one direction of a torus link carries
  int links_used = 0;       // directions of torus links that carry a route
};
MigrationLoad migration_load(const protocol::RackPlacement& torus, const TorusBlock& from, const TorusBlock& to);

// The state's move over the torus, modeled (the emulated links carry no state): `state_bytes` a
// rank, the busiest link's routes one after another at `lane_gbps` (restore_ns with one circuit).
double migration_state_ns(const MigrationLoad& load, uint64_t state_bytes, double lane_gbps);

struct RackMigrateOptions {
  protocol::RackShape shape;
  uint64_t poll_ns = 2'000;
  uint64_t detect_timeout_ns = 2'000'000;
  RackJob job;                      // the slice's job: formed again on the new block, the path ends at its first verified collective
  comm::RankGroup* ranks = nullptr;  // the job's ranks as processes (restart: relaunch): every one relaunched on the new block
  uint64_t state_bytes = 0;          // a rank's state to move
  double lane_gbps = 10;             // the emulated lanes' (protocol::lane_gbps)
  std::vector<protocol::RackXpu> busy;  // XPUs no free block may use besides the slice's and the dead (other tenants')
};

struct RackMigration {
  protocol::RackXpu failed;
  TorusBlock from, to;           // to.dim_x 0: no free block
  std::vector<int> ring;         // the new block's ring (rack XPUs), as the job formed again on it
  std::vector<protocol::RackXpu> relaunched;  // every XPU of the new block: a rank started anew on each
  std::vector<int> boards_touched;            // servers holding an XPU of either block: every rank there stopped or started
  MigrationLoad load;
  double state_ns = 0;                        // modeled (migration_state_ns)
  std::optional<comm::Reform> relaunch;       // with ranks: stopped, started, formed, first all-reduce (wall time)
  BlastRadius blast;                          // links that left Active (against the dead XPU and its torus neighbours), scoreboards
  RackJobFigures job;
  double failure_ns = 0, detected_ns = 0;
  std::vector<std::string> problems;
  // The failure to the job's first verified collective on the new block, board time, plus the
  // ranks' relaunch (wall time, the rack standing still in lockstep) laid end to end with it.
  // The state's move is not in it (modeled: state_ns, beside). 0: it did not end.
  double path_ns() const {
    return job.first_verified_ns > 0 ? job.first_verified_ns - failure_ns + (relaunch ? relaunch->total_s() * 1e9 : 0) : 0;
  }
};

// The XPU of `slice` that dies at `failure_ns` (the caller armed it), on a rack whose circuits are
// the static torus `torus`: the host sees the death as the rack path does, takes the nearest free
// block, relaunches every rank there (o.ranks), forms the job on the new block's ring and waits
// for its first verified collective. No board's map is written. `slice` becomes the new block.
RackMigration rack_migrate(std::vector<fabric::Board*>& boards, const protocol::RackPlacement& torus, TorusBlock& slice,
                           double failure_ns, const RackMigrateOptions& o);

}  // namespace mxtb::host::failover
