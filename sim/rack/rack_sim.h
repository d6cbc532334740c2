// A rack of servers emulated as one system (docs/rack.md). Each process holds a contiguous range
// of the rack's servers, each a whole board (controller RTL and its firmware, link layers, mesh)
// under SystemC on one global simulated time; the fibres between servers carry their light and
// blocks with their latency and loss. Conservative synchronization: every server runs a window of
// W clocks (W = the shortest fibre's latency), then each process hands the samples its fibres
// sent in that window to their receivers, in this process or through the WindowExchange to
// another. What arrives in a window was sent at least W clocks before it, so a server never waits
// on a later window and its cycles do not depend on how the rack is partitioned: the report and
// every event log are bit-identical for 1, 2 or S processes.
#pragma once

#include "sim/collective/collective_server.h"
#include "sim/emulator/emulator.h"
#include "sim/rack/rack_collective.h"
#include "sim/rack/rack_config.h"
#include "sim/rack/window_exchange.h"

#include <mxtb/emu_regs.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::sim::rack {

// The servers process `rank` of `processes` holds, [first, end): contiguous, as even as can be.
struct ServerRange {
  int first = 0, end = 0;
};
ServerRange servers_of_rank(int servers, int processes, int rank);
int rank_of_server(int servers, int processes, int server);

// The rack served as S boards on the network (`mxtb rack --serve`): each server's board answers
// IPbus on its own UDP port, as `mxtb sim` answers for one, from the end of the tenant's bring-up
// until SIGINT, SIGTERM, the parent's death or stop_after_wall_s. The time modes are rack-wide:
// free and paced run every board on the one global time; in lockstep a time command to any board
// (ADVANCE_NS, RUN_UNTIL) moves the whole rack, which stands still between requests: over
// processes, a process with no request of its own follows the windows its peers send.
struct RackServe {
  emu::TimeMode time_mode = emu::TimeMode::Lockstep;
  double rtf = 1.0;
  std::string host = "127.0.0.1";
  uint16_t first_port = 0;      // server s listens on first_port + s; 0: each on a free port
  IpbusTarget ipbus_target = IpbusTarget::Rtl;
  std::string fst_dir;          // WAVE_CTRL of server s dumps FST_DIR/serverS.fst; "": no waveforms
  double stop_after_wall_s = 0; // 0: until a signal or the parent's death
  uint32_t stall_report_ms = 2000;
  // The rack tenants' jobs of collectives (sim/collective/job_set.h), one a tenant (job k: tenant
  // k, RackConfig::co_tenants), on the rack's numbering (server s's XPU x is rack XPU s * XPUs +
  // x): they own every XPU's lanes (the tenants' and the spares'), which carry their words and no
  // random traffic; every board's JOB_* registers form and read them (JOB_SELECT picks the job,
  // JOB_CTRL.form_ranks forms it on JOB_RANKS). Decided at window ends. In one process only.
  bool job = false;
};

struct RackRunOptions {
  std::string config_source;  // the rack file's path, for messages
  std::string config_digest;  // of its contents: every process must have the same
  std::string events_dir;     // each server's event log goes to EVENTS_DIR/serverN.events.jsonl; "": none
  std::string waves_dir;      // run to run_us: each server's waveform, power-on to the end, in WAVES_DIR/serverN.fst; "": none
  bool progress = false;      // a progress line on stderr every few seconds (rank 0)
  std::optional<RackServe> serve;  // the boards on the network until stopped, not run to run_us
  // The tenant's lanes run this sweep of collectives instead of random traffic (every other lane
  // carries none), in one process; the run ends when the sweep does.
  std::optional<RackCollectiveOptions> collective;
};

// What a rack's collective sweep measured (RackRunOptions::collective).
struct RackCollectiveResult {
  std::vector<int> ranks;         // rack XPUs, ring order
  int rings = 0;                  // rings as run, the forward ones and their reverses: each rank sends on one lane a ring
  int fibre_hops = 0;             // hops of the ring order that cross a fibre
  uint64_t all_active_cycle = 0;  // the window end at which every circuit of the rings was Active: the first size starts
  std::vector<CollectiveRow> rows;
};

// This process's figures (not part of the report: they depend on the partition and the machine).
struct RackPerf {
  int rank = 0;
  int servers = 0;               // held by this process
  uint64_t cycles = 0;           // the rack's, each server's
  uint64_t windows = 0;
  double wall_s = 0;             // the simulation, from the first window to the last
  double exchange_s = 0;         // in WindowExchange::exchange
  double deliver_s = 0;          // moving samples between servers' rings and fibres
  std::string to_json() const;   // one object, dumped
};

struct RackOutcome {
  // On rank 0: every server's report (a JSON object, dumped), in server order; and every failed
  // check, each naming its server. Elsewhere: empty.
  std::vector<std::string> server_reports;
  std::vector<std::string> failures;
  std::vector<std::string> perf;  // rank 0: every process's RackPerf::to_json()
  uint32_t window_cycles = 0;
  std::optional<RackCollectiveResult> collective;
};

// Runs this process's servers of the rack to its end (RackConfig::run_us), or serves them until
// stopped (opt.serve), under SystemC (once per process). Throws RackError for a bad configuration
// before anything starts, and RackTransportError when another process dies or disagrees. Served,
// every process stops at the same window: the first to stop announces a window P ahead in its
// exchanges, P the processes, which reaches every process before it comes.
RackOutcome run_rack(const RackConfig& cfg, WindowExchange& ex, const RackRunOptions& opt);

}  // namespace mxtb::sim::rack
