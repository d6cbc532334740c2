// A rack served as `mxtb rack --serve` in lockstep (a child process on loopback) and the host's
// boards on it, one IPbus client a server, as the host would reach S boards: what `mxtb
// rack-failover` and the demo's rack rows fail XPUs on (docs/rack.md, "Failover in a rack").
#pragma once

#include "host/fabric/board.h"
#include "host/fabric/client.h"
#include "host/fabric/emulator_process.h"
#include "host/fabric/udp_shim.h"
#include "host/failover/rack_failover.h"
#include "host/failover/rack_migrate.h"
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
  struct Options {
    bool announce = false;  // print each server's address as it is reached
    // Each server's client talks through a UDP shim that unplug() takes down, and gives up on a
    // silent board after kSilentClientBudget (a board's own client waits 10 s an attempt).
    bool unpluggable = false;
    // The rack runs the tenant's job of collectives (`mxtb rack --serve --job`), formed on the
    // tenant's ring once it is up; its first verified collective is waited for (InputError
    // otherwise), and every failover forms it again with the spare (options.job).
    std::optional<host::failover::RackJob> job;
    // With a job: its ranks as real processes (`mxtb rank`, Gloo), one per rack XPU, spares
    // waiting (a hot spare), working in out/ranks (options.ranks).
    bool ranks = false;
    // With a job: it runs on this block of the tenant's torus, not the whole tenant (the static
    // torus of the migration baseline, host/failover/rack_migrate.h); its ranks have no spares
    // and are relaunched on a migration.
    std::optional<protocol::RackPlacement> job_slice;
  };
  ServedRack(sim::rack::RackConfig cfg, const std::string& scenario_path, const std::string& calibration, const std::string& out,
             const Options& o);

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
  // The job's ranks as processes (Options::ranks), else null.
  host::comm::RankGroup* ranks() { return ranks_.get(); }

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

// The migration baseline's rack (host/failover/rack_migrate.h): a served rack whose circuits are
// its bring-up's torus (the rack file's tenant), left as they are, with the job on `slice` of it
// and, with `ranks`, its ranks as processes that a migration relaunches.
class StaticTorus {
 public:
  StaticTorus(const sim::rack::RackConfig& cfg, const std::string& scenario_path, const std::string& calibration, const std::string& out,
              const host::failover::TorusBlock& slice, const host::failover::RackJob& job, bool ranks, uint64_t state_bytes);
  // Kills XPU x of the slice `after_ns` of board time from now and migrates the slice.
  host::failover::RackMigration fail(const protocol::RackXpu& x, uint64_t after_ns = 5'000);
  const protocol::RackPlacement torus;
  host::failover::TorusBlock slice;  // where the job runs now
  host::failover::RackMigrateOptions options;
  std::vector<host::fabric::Board*>& boards() { return rack_->boards; }

 private:
  std::unique_ptr<ServedRack> rack_;
};

// The rack's XPUs outside the tenant: its spares.
std::vector<protocol::RackXpu> spares_of(const protocol::RackShape& shape, const protocol::RackPlacement& p);
// The rack's XPUs outside every tenant.
std::vector<protocol::RackXpu> spares_of(const protocol::RackShape& shape, const std::vector<protocol::RackPlacement>& tenants);

// "S.X", and names in (server, XPU) order.
std::string rack_xpu_name(const protocol::RackXpu& x);
std::vector<std::string> rack_xpu_names(std::vector<protocol::RackXpu> xs);

}  // namespace mxtb::app
