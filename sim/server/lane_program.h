// An XPU's own program behind some of its lanes, in place of the random traffic source and
// scoreboard: a collective (sim/collective/collective.h) or the job that runs collectives one after another
// (sim/collective/tenant_job.h). ServerSim::set_lane_program() hands it the lanes it owns; the engines
// call it every clock for those lanes with the link layer's outputs of the clock before.
#pragma once

#include "sim/link/link_codec.h"

#include <mxtb/link_defs.h>

#include <cstdint>

namespace mxtb::sim {

class ServerSim;

// What a program that watches links sees of them: the clock, each link's state and whom it last
// trained to. One server (ServerSim), or a rack's servers in one numbering (sim/rack/rack_sim.cpp),
// where a link's peer is named by its rack XPU.
class LinkView {
 public:
  virtual ~LinkView() = default;
  virtual uint64_t cycle() const = 0;
  virtual link::LinkState link_state(int link) const = 0;
  virtual EndpointIdentity link_peer(int link) const = 0;
};

class LaneProgram {
 public:
  virtual ~LaneProgram() = default;
  virtual bool owns(int link) const = 0;
  struct Drive {
    bool valid;
    uint64_t data;
    bool last;
  };
  virtual Drive drive(int link) = 0;
  virtual void fire(int link) = 0;  // the endpoint took the driven word
  virtual void deliver(int link, uint64_t data, bool last, uint64_t cycle) = 0;
  // Checked after a delivery: true ends ServerSim::step() after this clock, so that after_step()
  // runs at the cycle something finished.
  virtual bool wants_attention() const { return false; }
  // Called when the program is attached (at the cycle its lanes are handed over), and at the end
  // of every ServerSim::step().
  virtual void attach(ServerSim&) {}
  virtual void after_step(ServerSim&) {}
  // The next cycle at which after_step() must run even if nothing else stops the step (a wait
  // that expires): ServerSim::step() ends there, so the program's decisions fall on exact cycles
  // whatever the batches around them. UINT64_MAX: none.
  virtual uint64_t wake_cycle() const { return UINT64_MAX; }
  // Messages (end-of-message words) it received intact: the server's delivered-traffic count.
  virtual uint64_t messages_delivered() const { return 0; }
};

}  // namespace mxtb::sim
