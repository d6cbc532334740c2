#include "sim/collective/collective_server.h"

#include "protocol/fabric_map.h"

#include <fmt/format.h>

namespace mxtb::sim {

std::vector<int> static_torus_map(const protocol::ServerShape& shape) {
  return protocol::torus_map(shape, protocol::TorusPlacement{2, 2, {0, 1, 2, 3}}).port_target;
}

CollectiveRow collective_row(const RingCollective& coll, uint64_t start, uint64_t now, double period_ns,
                             const std::vector<LinkReport>& before, const std::vector<LinkReport>& after) {
  const CollectiveSpec& spec = coll.spec();
  CollectiveRow row;
  row.op = spec.op;
  row.type = spec.type;
  row.size = spec.count * element_bytes(spec.type);
  row.count = spec.count;
  row.ranks = static_cast<int>(spec.ranks.size());
  row.rings = static_cast<int>(spec.rings.size());
  row.completed = coll.done();
  row.cycles = (row.completed ? coll.end_cycle() + 1 : now) - start;
  row.time_us = static_cast<double>(row.cycles) * period_ns / 1000;
  row.algbw_gbs = static_cast<double>(row.size) / (row.time_us * 1e3);
  row.busbw_gbs = row.algbw_gbs * busbw_factor(spec.op, row.ranks);
  row.wrong = row.completed ? coll.wrong() : spec.count * spec.ranks.size();
  row.framing_errors = coll.framing_errors();
  row.first_error = row.completed ? coll.first_error() : fmt::format("not done after {} cycles", row.cycles);
  row.backpressure = coll.backpressure();
  row.lane_words = coll.words_sent();
  for (size_t i = 0; i < before.size() && i < after.size(); ++i) {
    row.replays += after[i].replays - before[i].replays;
    row.crc_errors += after[i].crc_errors - before[i].crc_errors;
    row.retrains += after[i].retrains - before[i].retrains;
  }
  return row;
}

uint64_t collective_cycle_limit(const RingCollective& coll) {
  const uint64_t words_per_lane = coll.payload_bytes_per_rank() / 8 / coll.spec().rings.size() + 1;
  return 50 * words_per_lane + 200'000;
}

}  // namespace mxtb::sim
