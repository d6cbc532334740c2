// The emulator control block (protocol/emu_regs.json, generated into mxtb/emu_regs.h): each
// register's read and write; faults armed (FAULT_*) and fired; the event queue and the sources it
// collects; RUN_UNTIL and ADVANCE_NS; the waveform window; and the tenant's job and its state
// restores as the block sees them (JOB_*, RESTORE_*: the values staged, the job formed, stopped or
// restoring). Whole IPbus accesses (their access rules, RMW) are the targets' (ipbus_target.h).
//
// Two threads reach it, never at once: the simulation thread between kernel runs (read(), write():
// a request of the C++ target, or an access of the board top's transactor that stopped the
// server's step), and the clock thread within a clock (answer_within_clock(): the accesses the
// registers say are answered there, emu_answer.h). A write that runs simulated time or acts on the
// server runs in the simulation through the simulation thread (sim_thread.h).
#pragma once

#include "firmware/ocs_firmware.h"
#include "protocol/ipbus/target.h"
#include "sim/collective/job_set.h"
#include "sim/emulator/emu_log.h"
#include "sim/emulator/emulator.h"
#include "sim/emulator/event_queue.h"
#include "sim/emulator/sim_thread.h"
#include "sim/server/board_port.h"
#include "sim/server/server_sc.h"
#include "sim/server/server_sim.h"

#include <mxtb/emu_regs.h>

#include <systemc>

#include <cstddef>
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>

namespace mxtb::sim {

class EmuBlock {
 public:
  using IpbusStats = std::function<protocol::ipbus::TargetStats()>;
  // jobs: null when the emulator runs none (JOB_SELECT picks one of them). ipbus_stats: the IPbus target's counters (IPBUS_STATS,
  // IPBUS_BUS_ERRORS). Every reference outlives the block.
  EmuBlock(const EmulatorConfig& cfg, ServerSim& sim, ServerClock& clock, const firmware::OcsFirmware& fw, JobSet* jobs,
           SimThread& thread, EmuLog& log, IpbusStats ipbus_stats);

  // A register's value at a byte offset in the block (0 where none is).
  uint32_t read(uint32_t off);
  // False: the write is refused (bus error) and changed nothing.
  bool write(uint32_t off, uint32_t v);
  // The clock thread, within the board's clock: (ok, read data) for an access its register says is
  // answered there (emu_answer.h), else nullopt (the server's step stops; the simulation thread
  // answers it with read() or write()).
  std::optional<std::pair<bool, uint32_t>> answer_within_clock(const EmuAccess& a);
  // Queues what the sources reported since the last call. After every kernel run.
  void sync_events();

 private:
  bool arm_fault(uint32_t kind_raw);
  bool job_ctrl(uint32_t v);
  bool restore_ctrl(uint32_t v);
  bool refused(const char* reg, uint32_t v, const std::string& why);
  void run_until(uint32_t mask);
  void advance(uint32_t ns);
  uint32_t job_status() const;
  bool filtered_lane(uint32_t link) const;
  uint32_t ipbus_stat(uint32_t i) const;

  const EmulatorConfig& cfg_;
  ServerSim& sim_;
  ServerClock& clock_;
  const firmware::OcsFirmware& fw_;
  JobSet* const jobs_;
  TenantJob* job() const { return jobs_ ? &jobs_->job(static_cast<int>(job_select_)) : nullptr; }  // JOB_SELECT's
  SimThread& thread_;
  EmuLog& log_;
  IpbusStats ipbus_stats_;
  sc_core::sc_event fault_event_;  // a fault fired

  uint32_t run_timeout_ns_ = emu::reg::run_timeout_ns::kReset, run_result_ = 0;
  uint64_t fault_at_ns_ = 0;
  uint32_t fault_target_ = 0, fault_value_ = 0, faults_pending_ = 0;
  uint64_t faults_fired_ = 0;
  EventQueue events_;
  size_t transitions_seen_ = 0, failovers_seen_ = 0, controller_events_seen_ = 0;
  std::vector<uint64_t> job_records_seen_;  // per job
  uint32_t job_select_ = emu::reg::job_select::kReset;
  uint32_t event_filter_ = emu::reg::event_filter::kReset;
  uint64_t events_filtered_ = 0;
  uint32_t restore_src_ = 0, restore_dst_ = 0, restore_bytes_ = emu::reg::restore_bytes::kReset;
  uint32_t job_ring_ = emu::reg::job_ring::kReset, job_spec_ = 0, job_bytes_ = emu::reg::job_bytes::kReset,
           job_seed_ = emu::reg::job_seed::kReset;
  std::array<uint32_t, emu::reg::job_ranks::kCount> job_ranks_ = filled(emu::reg::job_ranks::kReset);
  static std::array<uint32_t, emu::reg::job_ranks::kCount> filled(uint32_t v) {
    std::array<uint32_t, emu::reg::job_ranks::kCount> a{};
    a.fill(v);
    return a;
  }
};

}  // namespace mxtb::sim
