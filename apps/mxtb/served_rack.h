// A rack served as `mxtb rack --serve` in lockstep (a child process on loopback) and the host's
// boards on it, one IPbus client a server, as the host would reach S boards: what `mxtb
// rack-failover` and the demo's rack rows fail XPUs on (docs/rack.md, "Failover in a rack").
#pragma once

#include "host/fabric/board.h"
#include "host/fabric/client.h"
#include "host/fabric/emulator_process.h"
#include "host/fabric/udp_shim.h"
#include "host/failover/rack_failover.h"
#include "sim/rack/rack_config.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::app {

class ServedRack {
 public:
  // Starts the rack of `scenario_path` (already parsed into cfg) with its log in out/rack.log and
  // waits until every lane of the tenant's placement is Active; throws InputError otherwise.
  // `announce`: print each server's address as it is reached. `unpluggable`: each server's client
  // talks through a UDP shim that unplug() takes down, and gives up on a silent board after
  // kSilentClientBudget (a board's own client waits 10 s an attempt).
  // `ranks` (with a job): the job's ranks as real processes (`mxtb rank`, Gloo), one per rack XPU,
  // spares waiting, working in out/ranks (options.ranks).
  // `job`: the rack runs the tenant's job of collectives (`mxtb rack --serve --job`), formed on
  // the tenant's ring once it is up; its first verified collective is waited for (InputError
  // otherwise), and every failover forms it again with the spare (options.job).
  ServedRack(sim::rack::RackConfig cfg, const std::string& scenario_path, const std::string& calibration, const std::string& out,
             bool announce, bool unpluggable = false, std::optional<host::failover::RackJob> job = std::nullopt,
             bool ranks = false);

  // Kills XPU x `after_ns` of board time from now and fails it over by the host's rack path,
  // with `options` (the campaign's faults in its steps) or, by default, this rack's.
  host::failover::RackFailoverRecord fail(const protocol::RackXpu& x, uint64_t after_ns = 5'000);
  host::failover::RackFailoverRecord fail(const protocol::RackXpu& x, uint64_t after_ns, const host::failover::RackFailoverOptions& o);
  ServedRack(const ServedRack&) = delete;  // options.reconnect refers to this one
  ServedRack& operator=(const ServedRack&) = delete;

  // Server s's network down (nothing reaches its board, nothing comes back) or up again.
  // Unpluggable racks only.
  void unplug(int server, bool down);
  // A fresh client of server s in place of boards[s] (throws while its board does not answer).
  host::fabric::Board* reconnect(int server);
  static constexpr std::chrono::milliseconds kSilentClientBudget{3'000};

  const sim::rack::RackConfig cfg;
  host::failover::RackTenant tenant;
  host::failover::RackFailoverOptions options;
  std::vector<host::fabric::Board*> boards;

 private:
  std::unique_ptr<host::fabric::EmulatorProcess> emulator_;
  std::vector<std::unique_ptr<host::fabric::LossyShim>> shims_;
  host::fabric::ClientOptions client_options_;
  std::vector<std::string> targets_;  // each server's, through its shim where unpluggable
  std::vector<std::unique_ptr<host::fabric::Client>> clients_;
  std::vector<std::unique_ptr<host::fabric::Board>> owned_;
  std::unique_ptr<host::comm::RankGroup> ranks_;
};

// The rack's XPUs outside the tenant: its spares.
std::vector<protocol::RackXpu> spares_of(const protocol::RackShape& shape, const protocol::RackPlacement& p);

// "S.X", and names in (server, XPU) order.
std::string rack_xpu_name(const protocol::RackXpu& x);
std::vector<std::string> rack_xpu_names(std::vector<protocol::RackXpu> xs);

}  // namespace mxtb::app
