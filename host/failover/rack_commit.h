// A placement that lands on several boards as one (docs/rack.md, "Committing across boards"): the
// host's procedure over the boards' own staged/commit/rollback. Each controller commits, verifies
// and rolls back its own mesh; a circuit between servers needs both meshes and the light of the
// far one. The procedure:
//
//   check     every board's active map is the one the host's journal holds (`before`)
//   stage     every board routes and stages its first phase (StageMap), its whole map routed too:
//             nothing commits anywhere unless every board staged
//   hold      every board holds its links (LINK_HOLD): until the release, a link without a circuit
//             or with one through a fibre expects no one, as while a commit runs, so that none
//             trains to light that passes between two boards' commits
//   commit    phase 1 on each board in turn (CommitStaged): the circuits inside the server and the
//             lanes' light out into the fibres, every circuit arriving through a fibre whose far
//             source changes left unused; then phase 2 on each board in turn, the whole map, once
//             the far light is there (a controller verifies the light at every mapped output); a
//             commit verify refused is committed again a dark window later (a far lane still
//             training goes dark for its retrain hold now and then)
//   release   every board releases its links: they retrain as at a commit's end
//   verify    every board's ACTIVE_MAP is `after`, and every lane `after` maps trains to Active
//   rollback  on any failure, or a board that stops answering: every board back to `before`, by
//             the same two phases, held and released the same way, without the circuits whose
//             light starts at an XPU the host knows dead (RackCommitOptions::dead); a rollback whose verify still
//             fails after its dark windows leaves out the circuit onto the output its controller
//             names dark (its source died, or its fibre was cut, meanwhile: `before` cannot be
//             lit whole any more) and commits again; a board that does not answer again within the deadline is
//             reported unresolved (its state unknown), and rack_recover() puts it back later
//
// One board commits at a time, so one board's rerouting never dims a circuit another board is
// verifying. Its rules are tested one by one, each both ways (testbench/host/failover/
// test_rack_commit.cpp), against a rack emulated and served on loopback.
#pragma once

#include "host/fabric/board.h"
#include "protocol/rack_map.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace mxtb::host::failover {

// One board's part.
struct RackBoard {
  int server = -1;
  fabric::Board* board = nullptr;  // the host's client of it
  // A fresh client after the board stopped answering (the old one may be out of step with it);
  // empty: keep asking `board`. Throws when the board still does not answer.
  std::function<fabric::Board*()> reconnect;
  std::vector<int> before;  // the journal: its active map now, as the host believes
  std::vector<int> after;   // the map to place
};

enum class RackStep { Check, Stage, Hold, Phase1, Phase2, Release, Verify, Rollback };
const char* to_string(RackStep s);

struct RackStepRecord {
  int server = -1;
  RackStep step = RackStep::Check;
  bool ok = true;
  std::string detail;
  uint64_t start_ns = 0, end_ns = 0;  // that board's time
};

enum class RackOutcome {
  Committed,   // every board runs `after`, verified
  Refused,     // a check or a staging failed: nothing was committed anywhere
  RolledBack,  // a commit or the verify failed: every board runs `before` again
  Unresolved,  // rolled back where boards answered; `unresolved` did not answer to the end
};
const char* to_string(RackOutcome o);

struct RackCommitResult {
  RackOutcome outcome = RackOutcome::Committed;
  std::string why;              // what stopped it (empty when committed)
  std::vector<RackStepRecord> steps;
  std::vector<int> unresolved;  // servers whose map is not known to be `before`
  // Circuits the rollback left out, dark (server, input port): every board runs its `before`
  // without them.
  std::vector<std::pair<int, int>> left_out;
};

struct RackCommitOptions {
  protocol::RackShape shape;
  std::vector<protocol::RackFibre> wiring;
  uint64_t link_up_timeout_ns = 3'000'000;  // board time for the verify's lanes to train
  uint64_t poll_ns = 5'000;
  // A commit verify refused is committed again this much later (board time), up to
  // verify_attempts in all: as the single server's manager does for a lane's dark window.
  uint64_t dark_window_ns = 25'000;
  int verify_attempts = 3;
  // XPUs the host knows dead when the transaction starts (the one being replaced, earlier ones): a
  // rollback leaves out at once every circuit of `before` whose light starts at one of their lanes
  // (circuits_from_dead), instead of finding each dark after its verify attempts. A dead XPU's four
  // circuits cost twelve commits of about 130 us of board time that way, seconds of wall time each
  // in a lockstep rack. Circuits dark for a reason the host does not know are still found by verify.
  std::vector<protocol::RackXpu> dead;
  // How long a board that stopped answering is asked again (wall time) before it is unresolved.
  std::chrono::milliseconds answer_deadline{2'000};
  // Called before each step on each board (progress, and the tests' faults).
  std::function<void(int server, RackStep step)> before_step;
};

// The first phase of going from the maps `from` to `to` (per server, indexed like shape's servers;
// a server absent from the change has from == to): `to`, except that an input from a fibre is
// left unused when the far board changes what it sends into that fibre, or when this board
// changes where that input goes. Pure.
std::vector<std::vector<int>> rack_phase1(const protocol::RackShape& shape, const std::vector<protocol::RackFibre>& wiring,
                                          const std::vector<std::vector<int>>& from, const std::vector<std::vector<int>>& to);

// The circuits (server, input port) of `maps` whose light starts at a lane of an XPU in `dead`: from
// the lane itself, or arriving over a fibre from a server whose map sends such a lane into it. A
// server's map all -1 (one outside a transaction) sends nothing. Pure; throws std::invalid_argument
// when `maps` does not hold one map of the mesh's ports per server.
std::vector<std::pair<int, int>> circuits_from_dead(const protocol::RackShape& shape, const std::vector<protocol::RackFibre>& wiring,
                                                    const std::vector<std::vector<int>>& maps,
                                                    const std::vector<protocol::RackXpu>& dead);

// The transaction over `boards` (the servers whose maps change, and any others to check).
RackCommitResult rack_commit(std::vector<RackBoard>& boards, const RackCommitOptions& o);

// Every board of `boards` back to its `before`, whatever it runs now (after an unresolved
// transaction, once its boards answer again).
RackCommitResult rack_recover(std::vector<RackBoard>& boards, const RackCommitOptions& o);

}  // namespace mxtb::host::failover
