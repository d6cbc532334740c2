// The emulated server: the FPGA's optical switch controller and one lane link layer per XPU lane
// (all verilated RTL), the photonic mesh between the lanes (sim/mesh/photonic_mesh.h), and an XPU
// traffic source and scoreboard behind every lane. Advanced one clock at a time from plain C++;
// sim/server/server_sc.h runs it under SystemC with the firmware.
//
// Wiring (what the FPGA board fixes): lane i of XPU x is link x * lanes + i and mesh port of the
// same number; the controller sees every link's state and reason; its link map (derived from the
// active port map) tells each link whom to expect, enables it, and asks it to retrain when its
// circuit changes.
#pragma once

#include "sim/server/axil_master.h"
#include "sim/server/board_port.h"
#include "sim/server/fibre_ports.h"
#include "sim/server/lane_program.h"
#include "sim/link/link_pair.h"
#include "sim/mesh/photonic_mesh.h"
#include "sim/link/xpu_traffic.h"

#include "protocol/fabric_map.h"

#include <mxtb/link_defs.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace mxtb::sim {

struct ServerState;

// How the server's cycles are computed; both give identical results, cycle for cycle.
enum class ServerEngine {
  Reference,  // every model evaluated at both clock edges, every port rewired every clock (the first emulator)
  Fast,       // the same cycles with less work, on one or more threads (docs/performance.md)
};
const char* to_string(ServerEngine e);  // "reference", "fast"
std::optional<ServerEngine> server_engine_from_string(const std::string& name);

struct ServerConfig {
  std::string name = "server";
  uint64_t seed = 1;
  double clock_mhz = 156.25;
  protocol::ServerShape shape;                 // 5 XPUs x 4 lanes on a 32-port mesh
  MeshConfig mesh;                             // ports must equal shape.mesh_ports
  uint32_t fibre_latency_cycles = 4;           // transmitter to receiver through the mesh
  uint32_t pd_latency_cycles = 8;              // photodiode request to answer
  uint32_t mesh_update_cycles = 16;            // recompute light paths this often while elements move
  TrafficConfig traffic;                       // behind every lane
  bool trace_capable = false;                  // build the FST-traced models (slower) so that waveforms can be dumped
  ServerEngine engine = ServerEngine::Fast;
  int threads = 1;                             // fast engine: threads that share the link layers (1..64)
  bool profile = false;                        // time each component (costs a little): ServerSim::profile()
  // In a rack (docs/rack.md): the mesh ports joined to fibres towards other servers (each at or
  // beyond the lanes' ports), and the most clocks the rack runs between exchanges. The fast
  // engine runs such a server on one thread: the rack runs its servers side by side instead.
  std::vector<int> fibre_ports;
  uint32_t fibre_window_cycles = 64;
  // The board's first XPU number in its rack (its straps, rtl/board/mxtb_board.sv xpu_base_i): its
  // XPU x trains as XPU xpu_base + x, so a link across a fibre tells another board's XPUs from its
  // own. And the seed of the XPUs' streams, each keyed by its rack-wide lane, so that a lane's
  // scoreboard follows a peer in any server of the rack (none: `seed`). 0 and none for a server alone.
  int xpu_base = 0;
  std::optional<uint64_t> streams_seed;
};

// Where step()'s wall time went (ServerConfig::profile), summed over the run. With threads,
// the component times are the coordinating thread's (it also runs its share of links) and
// links_s sums every thread's link evaluations.
struct ServerProfile {
  uint64_t cycles = 0;
  double step_s = 0;        // inside step(), all of it
  double links_s = 0;       // link endpoints' eval()
  double controller_s = 0;  // the controller's eval()
  double mesh_s = 0;        // light through the mesh (re-traced when it changes), photodiodes, DAC writes
  double xpu_s = 0;         // traffic sources and scoreboards
  double wait_s = 0;        // threads: the coordinating thread waiting for the others
  double stage_s = 0;       // the words through the mesh into each receiver's fibre (threads: every thread's, in links_s)
  double checkpoint_s = 0;  // threads: every thread saving state before speculative windows (in links_s)
  double checkpoint_link_min_s = 0;  // threads: one link's checkpoint in the fastest window (0: none yet)
  uint64_t windows = 0;     // threads: windows run, and rolled back (a link or the controller changed inside)
  uint64_t rollbacks = 0;
  ServerProfile operator-(const ServerProfile& o) const;  // what happened between two readings
};

struct LinkReport {
  link::LinkState state;
  link::Reason reason;
  EndpointIdentity peer;
  uint64_t frames_tx, frames_rx, crc_errors, replays, retrains;
  uint64_t messages_sent, messages_delivered, scoreboard_errors, words_lost, skipped_words, resyncs;
  std::string first_error;  // the scoreboard's first mismatch, for debugging
};

struct LinkTransition {
  uint64_t cycle;
  int link;
  link::LinkState from, to;
  link::Reason reason;
};

// Why the emulator cannot build a server of this shape (it has verilated models for some shapes
// only), or "" when it can.
std::string unsupported_shape(const protocol::ServerShape& s);

// How the fast engine shares links among threads: contiguous ranges, thread t running links
// [bounds[t], bounds[t + 1]). Thread 0 also runs the controller and the mesh, which cost about
// kCoordinatorLinks links' worth (measured: docs/performance.md), so it takes that many fewer.
constexpr double kCoordinatorLinks = 2.5;
std::vector<int> server_partition_bounds(int links, int threads);

// The fast engine's thread hand-off: the wall time of one window's start and wait with no work,
// in microseconds, over `rounds` (for `mxtb bench server`'s scaling model). On a busy machine most
// rounds wait for a thread to get a core; the fastest round is what free cores would see.
struct HandOff {
  double min_us, p50_us;
};
HandOff measure_hand_off(int threads, int rounds);

class ServerSim final : public LinkView {
 public:
  explicit ServerSim(const ServerConfig& cfg);
  ~ServerSim();
  ServerSim(const ServerSim&) = delete;
  ServerSim& operator=(const ServerSim&) = delete;

  // Runs up to `max_cycles` clocks; stops early after a clock in which the controller's interrupt
  // rose, a bus transaction completed, a link changed state or the board port wants the emulator
  // (board_event), so whoever waits for those wakes at the right cycle.
  // Returns the clocks run.
  uint64_t step(uint64_t max_cycles);
  uint64_t cycle() const override;
  double period_ns() const;
  double now_ns() const;

  // The server's FPGA is the board top (rtl/board/mxtb_board.sv: the IPbus transactor, its bus and
  // block RAM, the arbiter and the controller), clocked with the link layers.
  //
  // Its UDP side (sim/server/board_port.h): one datagram at a time into the transactor. step() stops
  // after the clock its outcome is ready, and after a clock in which the transactor made an access
  // of the emulator's control block, which waits, without the transactor's timeout, until
  // answer_emulator().
  void start_datagram(std::vector<uint8_t> datagram);
  bool datagram_busy() const;  // in flight, or its outcome not taken
  std::optional<DatagramOutcome> take_datagram_outcome();
  const std::optional<EmuAccess>& emulator_access() const;
  void answer_emulator(bool ok, uint32_t read_data);
  const BoardPort& board_port() const;
  // Answers the emulator gives within the clock (sim/server/board_port.h); without one, every access of
  // the emulator's block stops step().
  void set_emulator_responder(EmuResponder r);
  bool board_event() const;  // during the last step()

  // The top's firmware-processor port (s_fw_*, through its arbiter to the controller's register
  // slave, at the controller's byte addresses): one transaction at a time.
  void start_read(uint32_t addr);
  void start_write(uint32_t addr, uint32_t data);
  bool bus_busy() const;
  bool bus_result_ready() const;
  std::optional<AxilResult> take_bus_result();
  bool irq() const;
  bool irq_rose() const;      // during the last step()
  bool link_changed() const;  // during the last step()

  // Faults: an XPU dies: its lasers go dark and its traffic stops, for good.
  void kill_xpu(int xpu);
  // Link `link`'s receiver sees bit errors at `ber` from now on (0 ends them).
  void set_lane_ber(int link, double ber);
  // No light reaches link `link`'s receiver for the next `cycles` clocks.
  void dark_lane(int link, uint64_t cycles);
  // The receivers of links a and b exchange their incoming light from now on (swapped fibres).
  void swap_lanes(int a, int b);
  bool xpu_alive(int xpu) const;

  // An XPU program (sim/server/lane_program.h: a collective, or a job of them): from the next clock, the
  // lanes it owns carry its words instead of their traffic source and scoreboard (whose messages
  // in flight are the caller's to let drain first), until set_lane_program(nullptr). The XPU's
  // lanes share its memory, so the fast engine's threads cannot split them: one thread only
  // (std::invalid_argument otherwise).
  void set_lane_program(LaneProgram* p);

  // Waveform window (trace_capable servers): every model's signals into one FST file, in ps.
  void start_waveform(const std::string& path);  // opens the file on the first call
  void stop_waveform();
  bool waveform_on() const;

  // The ports joined to fibres (ServerConfig::fibre_ports): the rack writes what arrives before
  // a clock runs and reads what left after (sim/server/fibre_ports.h).
  FibrePorts& fibres();
  const FibrePorts& fibres() const;

  int links() const;
  LinkReport link_report(int link) const;
  link::LinkState link_state(int link) const override;
  EndpointIdentity link_peer(int link) const override;  // whom the link last trained to
  const std::vector<LinkTransition>& transitions() const;
  // Scoreboard errors on links of living XPUs (messages from a dead XPU may be cut short).
  uint64_t scoreboard_errors() const;
  uint64_t scoreboard_words_lost() const;  // the same links' words that never arrived (Scoreboard::words_lost)
  uint64_t messages_delivered() const;  // by the scoreboards and the lane program
  uint64_t dac_writes() const;
  uint64_t pd_reads() const;
  const PhotonicMesh& mesh() const;
  const ServerConfig& config() const;
  ServerProfile profile() const;

  class Impl;  // an engine and its verilated models (sim/server/engine.h)

 private:
  // A count of the scoreboards of living XPUs' links, summed (messages from a dead XPU may be cut short).
  template <typename Count>
  uint64_t sum_over_living_links(Count count) const;
  // What this server and its engine share (sim/server/server_state.h): the engine gets a
  // reference at construction; ServerSim's functions check what users ask and change it.
  std::unique_ptr<ServerState> st_;
  std::unique_ptr<Impl> impl_;  // after st_: goes first
};

}  // namespace mxtb::sim
