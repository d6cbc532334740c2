// `mxtb collective`: nccl-tests' sweep on the emulated server. The tenant's circuits are committed
// through the firmware and the controller RTL, every lane trains, and then each collective runs
// over the lanes with real data (sim/collective/collective.h), timed in emulated cycles and checked element
// for element. docs/collectives.md explains every column.
#pragma once

#include "sim/collective/collective_server.h"
#include "sim/mesh/photonic_mesh.h"

#include <fmt/format.h>

#include <nlohmann/json_fwd.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mxtb::app {

struct CollectiveBenchConfig {
  protocol::ServerShape shape;
  std::vector<int> port_map;  // the circuits the firmware commits (mesh port -> port, -1 unused)
  std::vector<int> tenant;    // the ranks' XPUs, in ring order
  bool both_directions = true;
  int max_rings = 0;          // 0: every ring the circuits allow
  uint32_t grain_words = 1;   // the pipeline grain (CollectiveSpec::grain_words)
  // Ring; Chain for XPUs in a line (all-reduce only). Auto: the ring when the circuits close one,
  // else the chain.
  enum class Algo { Auto, Ring, Chain } algo = Algo::Auto;
  double lane_ber = 0;        // bit errors on every receiver of the tenant's lanes once placed (replays, not wrong results)
  std::vector<sim::CollectiveOp> ops{sim::CollectiveOp::AllReduce};
  sim::DataType type = sim::DataType::F32;
  std::vector<uint64_t> sizes;  // bytes of the whole buffer, as nccl-tests' size column
  uint64_t seed = 1;
  std::string calibration_file;  // traces/calibration/meshN.json
  sim::ServerEngine engine = sim::ServerEngine::Fast;
  sim::SettlePreset settle = sim::SettlePreset::ElectroOptic;  // the mesh's: it sets only the bring-up's commit time
};

struct CollectiveBenchResult {
  CollectiveBenchConfig config;
  double clock_mhz = 0;
  double lane_gbps = 0;        // a lane's raw data path: 64 bits per clock
  int tx_lanes_per_rank = 0;   // lanes each rank sends on (rings x 1; a chain's middle rank: streams x 2)
  sim::Algorithm algorithm = sim::Algorithm::Ring;
  uint64_t bringup_cycles = 0; // commit to every circuit Active
  std::vector<sim::CollectiveRow> rows;
  bool passed() const;
};

// Throws std::invalid_argument on a bad configuration (naming it), std::runtime_error when the
// circuits do not come up.
CollectiveBenchResult run_collective_bench(const CollectiveBenchConfig& config);
nlohmann::json to_json(const CollectiveBenchResult& r);

// The prototype's finetuning measurements (Morphlux paper, Table 1: Llama-3.2-1B full finetune, two
// DDP workers, WikiText-103, 10 Gb/s links): epoch seconds at batch 2, 4 and 8 per GPU. Its NCCL
// all-reduce measured 1.79x.
struct FinetuneTable {
  std::vector<double> batch{2, 4, 8};
  std::vector<double> baseline_s{144.184, 75.222, 40.249};
  std::vector<double> morphlux_s{89.739, 46.361, 23.369};
  double allreduce_ratio = 1.79;
};
// An epoch as compute plus communication: T(b) = compute_s + comm_s / b (the samples an epoch
// computes are fixed; its steps, each one gradient all-reduce, are 1/b as many).
struct EpochModel {
  double compute_s = 0, comm_s = 0;
  double at(double batch) const { return compute_s + comm_s / batch; }
};
// The model through two measured points (batch b1: t1 s, b2: t2 s). Throws std::invalid_argument
// for equal batches.
EpochModel fit_epoch(double b1, double t1, double b2, double t2);

// Steering between the phases of a job: after an all-reduce phase on the static torus, a hot pair
// of the tenant exchanges an all-reduce of `size` bytes. Static: the pair keeps the torus's
// circuits between them. Steered: the firmware re-points every lane of the pair to each other
// (the tenant's other XPUs to each other likewise), at the reconfiguration's measured cost
// (routing, staging, program, settle, verify, retrain), and back to the torus for the next
// all-reduce phase. Per settle preset: where steering pays.
struct SteeringBenchConfig {
  protocol::ServerShape shape;
  std::vector<int> tenant{0, 1, 3, 2};  // on the static 2x2 torus of XPUs 0-3
  std::vector<int> pair{0, 1};          // the hot pair: two of the tenant's XPUs
  std::vector<uint64_t> sizes;          // the pair's all-reduce, bytes
  std::vector<sim::SettlePreset> presets{sim::SettlePreset::ElectroOptic, sim::SettlePreset::ThermoOptic, sim::SettlePreset::Mems};
  sim::DataType type = sim::DataType::F32;
  uint64_t seed = 1;
  std::string calibration_file;
  sim::ServerEngine engine = sim::ServerEngine::Fast;
};

struct SteeringPreset {
  sim::SettlePreset preset;
  double to_pair_us = 0, back_us = 0;  // torus -> pair lanes, and back: request to every circuit Active
  sim::CollectiveRow tenant_phase;                             // the job's all-reduce phase before, on the torus
  std::vector<sim::CollectiveRow> static_rows, steered_rows;  // the pair's all-reduce per size on each map
  // The smallest size at which steering pays, interpolated between the sizes measured (or
  // extrapolated from the two largest, then `extrapolated`): one way (steer and stay) and round
  // trip (steer for the phase and back). Negative: it never pays (the steered lanes are no faster).
  double break_even_bytes = -1, round_trip_break_even_bytes = -1;
  bool extrapolated = false, round_trip_extrapolated = false;
};

struct SteeringBenchResult {
  SteeringBenchConfig config;
  std::vector<SteeringPreset> presets;
  bool passed() const;  // every collective exact
};

SteeringBenchResult run_steering_bench(const SteeringBenchConfig& config);
nlohmann::json to_json(const SteeringBenchResult& r);

}  // namespace mxtb::app
