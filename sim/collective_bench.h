// `mxtb collective`: nccl-tests' sweep on the emulated server. The tenant's circuits are committed
// through the firmware and the controller RTL, every lane trains, and then each collective runs
// over the lanes with real data (sim/collective.h), timed in emulated cycles and checked element
// for element. docs/collectives.md explains every column.
#pragma once

#include "sim/collective.h"
#include "sim/server_sim.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace mxtb::sim {

struct CollectiveBenchConfig {
  protocol::ServerShape shape;
  std::vector<int> port_map;  // the circuits the firmware commits (mesh port -> port, -1 unused)
  std::vector<int> tenant;    // the ranks' XPUs, in ring order
  bool both_directions = true;
  int max_rings = 0;          // 0: every ring the circuits allow
  std::vector<CollectiveOp> ops{CollectiveOp::AllReduce};
  DataType type = DataType::F32;
  std::vector<uint64_t> sizes;  // bytes of the whole buffer, as nccl-tests' size column
  uint64_t seed = 1;
  std::string calibration_file;  // traces/calibration/meshN.json
  ServerEngine engine = ServerEngine::Fast;
  SettlePreset settle = SettlePreset::ElectroOptic;  // the mesh's: it sets only the bring-up's commit time
};

struct CollectiveRow {
  CollectiveOp op;
  DataType type;
  uint64_t size = 0, count = 0;
  int ranks = 0, rings = 0;
  uint64_t cycles = 0;
  double time_us = 0, algbw_gbs = 0, busbw_gbs = 0;  // GB/s = 1e9 bytes/s, as nccl-tests
  uint64_t wrong = 0, framing_errors = 0;
  std::string first_error;
  // The link layers of the rings' lanes during this collective.
  uint64_t replays = 0, crc_errors = 0, retrains = 0;
  uint64_t backpressure = 0;  // lane-cycles a ready word waited for its link layer (credits, replays, framing)
  uint64_t lane_words = 0;    // words the lanes carried
  bool completed = false;
};

struct CollectiveBenchResult {
  CollectiveBenchConfig config;
  double clock_mhz = 0;
  double lane_gbps = 0;        // a lane's raw data path: 64 bits per clock
  int tx_lanes_per_rank = 0;   // lanes each rank sends on (rings x 1)
  uint64_t bringup_cycles = 0; // commit to every circuit Active
  std::vector<CollectiveRow> rows;
  bool passed() const;
};

// Throws std::invalid_argument on a bad configuration (naming it), std::runtime_error when the
// circuits do not come up.
CollectiveBenchResult run_collective_bench(const CollectiveBenchConfig& config);
nlohmann::json to_json(const CollectiveBenchResult& r);

}  // namespace mxtb::sim
