#include "sim/collective/collective.h"

#include "sim/server/server_sim.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace mxtb::sim {

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::AllReduce: return "all_reduce";
    case CollectiveOp::ReduceScatter: return "reduce_scatter";
    case CollectiveOp::AllGather: return "all_gather";
    case CollectiveOp::AllToAll: return "alltoall";
  }
  return "?";
}

const char* to_string(Algorithm a) { return a == Algorithm::Ring ? "ring" : "chain"; }

const char* to_string(DataType t) { return t == DataType::F32 ? "float" : "bfloat16"; }

std::optional<CollectiveOp> collective_op_from_string(const std::string& s) {
  if (s == "all_reduce" || s == "allreduce") return CollectiveOp::AllReduce;
  if (s == "reduce_scatter" || s == "reducescatter") return CollectiveOp::ReduceScatter;
  if (s == "all_gather" || s == "allgather") return CollectiveOp::AllGather;
  if (s == "alltoall" || s == "all_to_all") return CollectiveOp::AllToAll;
  return std::nullopt;
}

std::optional<DataType> data_type_from_string(const std::string& s) {
  if (s == "float" || s == "fp32" || s == "f32") return DataType::F32;
  if (s == "bfloat16" || s == "bf16") return DataType::BF16;
  return std::nullopt;
}

uint32_t element_bytes(DataType t) { return t == DataType::F32 ? 4 : 2; }

double busbw_factor(CollectiveOp op, int ranks) {
  double n = ranks;
  return op == CollectiveOp::AllReduce ? 2 * (n - 1) / n : (n - 1) / n;
}

namespace {

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// Round to nearest even, as XPUs convert fp32 to bf16.
uint16_t to_bf16(float f) {
  uint32_t u = float_bits(f);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7FFF + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
float from_bf16(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }
float in_type(DataType t, float f) { return t == DataType::F32 ? f : from_bf16(to_bf16(f)); }

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Largest input magnitude whose sums over every rank stay exact: fp32 holds integers to 2^24,
// bf16 to 2^8.
int64_t input_bound(DataType t, int ranks) {
  return t == DataType::F32 ? 1024 : std::max<int64_t>(1, 256 / std::max(1, ranks));
}

}  // namespace

float collective_input(const CollectiveSpec& spec, int rank, uint64_t element) {
  const int64_t a = input_bound(spec.type, static_cast<int>(spec.ranks.size()));
  uint64_t h = mix(mix(spec.seed ^ (static_cast<uint64_t>(rank) << 48)) ^ element);
  return static_cast<float>(static_cast<int64_t>(h % static_cast<uint64_t>(2 * a + 1)) - a);
}

namespace {

// The circuits of each hop (xpus[p] to xpus[p + 1], `hops` of them, wrapping round) from the map,
// both directions lit; throws naming the first hop without one (`what`: ring or chain).
std::vector<std::vector<RingHop>> hop_circuits(const protocol::ServerShape& shape, const std::vector<int>& port_target,
                                               const std::vector<int>& xpus, int hops, const char* what) {
  const int n = static_cast<int>(xpus.size());
  const int lanes = shape.lanes_per_xpu;
  std::vector<std::vector<RingHop>> out(static_cast<size_t>(hops));
  for (int p = 0; p < hops; ++p) {
    int from = xpus[static_cast<size_t>(p)], to = xpus[static_cast<size_t>((p + 1) % n)];
    for (int l = 0; l < lanes; ++l) {
      int a = from * lanes + l;
      if (a >= static_cast<int>(port_target.size())) break;
      int b = port_target[static_cast<size_t>(a)];
      if (b >= 0 && b < shape.links() && b / lanes == to && port_target[static_cast<size_t>(b)] == a)
        out[static_cast<size_t>(p)].push_back({a, b});
    }
    if (out[static_cast<size_t>(p)].empty())
      throw std::invalid_argument(fmt::format("no circuit from XPU {} to XPU {}: the {} cannot be formed", from, to, what));
  }
  return out;
}

size_t fewest(const std::vector<std::vector<RingHop>>& hops) {
  size_t k = std::numeric_limits<size_t>::max();
  for (const auto& h : hops) k = std::min(k, h.size());
  return k;
}

}  // namespace

std::vector<Ring> ring_plan(const protocol::ServerShape& shape, const std::vector<int>& port_target,
                            const std::vector<int>& xpus, bool both_directions) {
  const int n = static_cast<int>(xpus.size());
  if (n < 2) throw std::invalid_argument(fmt::format("a ring needs at least 2 XPUs, not {}", n));
  return rings_over(xpus, ::mxtb::sim::hop_circuits(shape, port_target, xpus, n, "ring"), both_directions);
}

std::vector<Ring> rings_over(const std::vector<int>& order, const std::vector<std::vector<RingHop>>& hop_circuits,
                             bool both_directions) {
  const int n = static_cast<int>(order.size());
  if (hop_circuits.size() != order.size())
    throw std::invalid_argument(fmt::format("rings over {} XPUs given the circuits of {} hops", n, hop_circuits.size()));
  const size_t k = fewest(hop_circuits);
  std::vector<Ring> rings;
  for (size_t r = 0; r < k; ++r) {
    Ring ring;
    ring.order = order;
    for (int p = 0; p < n; ++p) ring.hops.push_back(hop_circuits[static_cast<size_t>(p)][r]);
    rings.push_back(ring);
  }
  // The reverse rings use each circuit's other direction. Two XPUs' ring already does (its two
  // hops are the same circuits, one each way).
  if (both_directions && n > 2)
    for (size_t r = 0; r < k; ++r) {
      Ring ring;
      for (int p = 0; p < n; ++p) ring.order.push_back(order[static_cast<size_t>((n - p) % n)]);
      // Position p sends to p + 1, which is XPU index (n - p - 1): the forward hop (n - p - 1) reversed.
      for (int p = 0; p < n; ++p) {
        const RingHop& f = hop_circuits[static_cast<size_t>((2 * n - p - 1) % n)][r];
        ring.hops.push_back({f.rx_link, f.tx_link});
      }
      rings.push_back(ring);
    }
  return rings;
}

std::vector<Ring> chain_plan(const protocol::ServerShape& shape, const std::vector<int>& port_target,
                             const std::vector<int>& xpus) {
  const int n = static_cast<int>(xpus.size());
  if (n < 2) throw std::invalid_argument(fmt::format("a chain needs at least 2 XPUs, not {}", n));
  const auto hop_circuits = ::mxtb::sim::hop_circuits(shape, port_target, xpus, n - 1, "chain");
  const size_t k = fewest(hop_circuits);
  std::vector<Ring> streams;
  for (size_t r = 0; r < k; ++r) {
    Ring s;
    if (r % 2 == 0) {
      s.order = xpus;
      for (int p = 0; p + 1 < n; ++p) s.hops.push_back(hop_circuits[static_cast<size_t>(p)][r]);
    } else {  // the other way along the line
      for (int p = n - 1; p >= 0; --p) s.order.push_back(xpus[static_cast<size_t>(p)]);
      for (int p = n - 2; p >= 0; --p) {
        const RingHop& f = hop_circuits[static_cast<size_t>(p)][r];
        s.hops.push_back({f.rx_link, f.tx_link});
      }
    }
    streams.push_back(s);
  }
  return streams;
}

namespace {

// The lane words the rings (or a chain's streams) share out: a rank's chunk, or a chain's whole buffer.
uint64_t words_to_split(const CollectiveSpec& spec) {
  const uint32_t per_word = 8 / element_bytes(spec.type);
  const uint64_t elements = spec.algorithm == Algorithm::Chain ? spec.count : spec.count / spec.ranks.size();
  return (elements + per_word - 1) / per_word;
}

}  // namespace

std::string check_spec(const CollectiveSpec& spec, const protocol::ServerShape& shape) {
  const int n = static_cast<int>(spec.ranks.size());
  if (n < 2) return fmt::format("a collective needs at least 2 ranks, not {}", n);
  for (int x : spec.ranks) {
    if (x < 0 || x >= shape.xpus) return fmt::format("rank XPU {} is not an XPU of the server (0..{})", x, shape.xpus - 1);
    if (std::count(spec.ranks.begin(), spec.ranks.end(), x) > 1) return fmt::format("XPU {} is two ranks", x);
  }
  if (spec.count == 0 || spec.count % static_cast<uint64_t>(n) != 0)
    return fmt::format("count {} is not a positive multiple of the {} ranks", spec.count, n);
  if (spec.rings.empty()) return "no ring to run on";
  if (spec.grain_words == 0) return "a pipeline grain of 0 words";
  if (spec.algorithm == Algorithm::Chain && spec.op != CollectiveOp::AllReduce)
    return fmt::format("the chain runs all_reduce only, not {}", to_string(spec.op));
  const uint64_t chunk_words = words_to_split(spec);
  if (chunk_words < spec.rings.size())
    return fmt::format("count {} gives {} lane words per rank's chunk, fewer than the {} rings", spec.count, chunk_words,
                       spec.rings.size());
  std::vector<int> sorted_ranks = spec.ranks;
  std::sort(sorted_ranks.begin(), sorted_ranks.end());
  std::vector<int> tx_used(static_cast<size_t>(shape.links()), 0), rx_used(static_cast<size_t>(shape.links()), 0);
  for (size_t k = 0; k < spec.rings.size(); ++k) {
    const Ring& r = spec.rings[k];
    std::vector<int> order = r.order;
    std::sort(order.begin(), order.end());
    if (order != sorted_ranks) return fmt::format("ring {} does not visit exactly the ranks' XPUs", k);
    const size_t hops = spec.algorithm == Algorithm::Chain ? r.order.size() - 1 : r.order.size();
    if (r.hops.size() != hops) return fmt::format("ring {} has {} hops for {} XPUs", k, r.hops.size(), r.order.size());
    for (size_t p = 0; p < r.hops.size(); ++p) {
      const RingHop& h = r.hops[p];
      int from = r.order[p], to = r.order[(p + 1) % r.order.size()];
      if (h.tx_link < 0 || h.tx_link >= shape.links() || h.tx_link / shape.lanes_per_xpu != from || h.rx_link < 0 ||
          h.rx_link >= shape.links() || h.rx_link / shape.lanes_per_xpu != to)
        return fmt::format("ring {} hop {}: links {} -> {} do not join XPU {} to XPU {}", k, p, h.tx_link, h.rx_link, from, to);
      if (tx_used[static_cast<size_t>(h.tx_link)]++ || rx_used[static_cast<size_t>(h.rx_link)]++)
        return fmt::format("ring {} hop {}: link {} -> {} already carries another ring", k, p, h.tx_link, h.rx_link);
      // A chain's broadcast comes back over the same circuit.
      if (spec.algorithm == Algorithm::Chain &&
          (tx_used[static_cast<size_t>(h.rx_link)]++ || rx_used[static_cast<size_t>(h.tx_link)]++))
        return fmt::format("ring {} hop {}: link {} -> {} already carries another ring", k, p, h.rx_link, h.tx_link);
    }
  }
  return "";
}

RingCollective::RingCollective(const CollectiveSpec& spec, const protocol::ServerShape& shape) : spec_(spec) {
  if (std::string why = check_spec(spec, shape); !why.empty()) throw std::invalid_argument(why);
  n_ = static_cast<int>(spec.ranks.size());
  per_word_ = 8 / element_bytes(spec.type);
  chunk_elems_ = spec.count / static_cast<uint64_t>(n_);
  const size_t k = spec.rings.size();
  const uint64_t split = words_to_split(spec);
  for (size_t r = 0; r <= k; ++r) ring_first_word_.push_back(split * r / k);
  rank_of_xpu_.assign(static_cast<size_t>(shape.xpus), -1);
  for (int r = 0; r < n_; ++r) rank_of_xpu_[static_cast<size_t>(spec.ranks[static_cast<size_t>(r)])] = r;
  tx_role_.assign(static_cast<size_t>(shape.links()), Role{});
  rx_role_.assign(static_cast<size_t>(shape.links()), Role{});
  lanes_.assign(k, std::vector<Lane>(static_cast<size_t>(n_)));
  for (size_t r = 0; r < k; ++r)
    for (int p = 0; p < static_cast<int>(spec.rings[r].hops.size()); ++p) {
      const RingHop& h = spec.rings[r].hops[static_cast<size_t>(p)];
      tx_role_[static_cast<size_t>(h.tx_link)] = {static_cast<int>(r), p, false};
      rx_role_[static_cast<size_t>(h.rx_link)] = {static_cast<int>(r), (p + 1) % n_, false};
      if (chain()) {  // the sum comes back over the same circuit
        tx_role_[static_cast<size_t>(h.rx_link)] = {static_cast<int>(r), p + 1, true};
        rx_role_[static_cast<size_t>(h.tx_link)] = {static_cast<int>(r), p, true};
        pending_ += 4 * chunk_words(static_cast<int>(r));
      } else {
        for (int st = 0; st < steps(); ++st) pending_ += 2 * step_words(static_cast<int>(r), st);
      }
    }
  const float unwritten = std::numeric_limits<float>::quiet_NaN();
  buf_.assign(static_cast<size_t>(n_), std::vector<float>(spec.count, unwritten));
  if (all_to_all()) {
    send_.assign(static_cast<size_t>(n_), std::vector<float>(spec.count));
    transit_.assign(k, std::vector<std::vector<std::vector<uint64_t>>>(static_cast<size_t>(n_),
                                                                         std::vector<std::vector<uint64_t>>(static_cast<size_t>(steps()))));
  }
  for (int r = 0; r < n_; ++r) {
    auto& b = buf_[static_cast<size_t>(r)];
    if (all_to_all()) {
      auto& out = send_[static_cast<size_t>(r)];
      for (uint64_t e = 0; e < spec.count; ++e) out[e] = collective_input(spec, r, e);
      // Its own block stays home.
      for (uint64_t i = 0; i < chunk_elems_; ++i) {
        uint64_t e = static_cast<uint64_t>(r) * chunk_elems_ + i;
        b[e] = out[e];
      }
    } else if (spec.op == CollectiveOp::AllGather) {
      for (uint64_t i = 0; i < chunk_elems_; ++i) {
        uint64_t e = static_cast<uint64_t>(r) * chunk_elems_ + i;
        b[e] = collective_input(spec, r, e);
      }
    } else {
      for (uint64_t e = 0; e < spec.count; ++e) b[e] = collective_input(spec, r, e);
    }
  }
}

bool RingCollective::owns(int link) const {
  return tx_role_[static_cast<size_t>(link)].ring >= 0 || rx_role_[static_cast<size_t>(link)].ring >= 0;
}

int RingCollective::steps() const { return spec_.op == CollectiveOp::AllReduce ? 2 * (n_ - 1) : n_ - 1; }

int RingCollective::rank_at(int ring, int pos) const {
  int xpu = spec_.rings[static_cast<size_t>(ring)].order[static_cast<size_t>(pos)];
  return rank_of_xpu_[static_cast<size_t>(xpu)];
}

uint64_t RingCollective::stream_element(int ring, uint64_t word) const {
  return (ring_first_word_[static_cast<size_t>(ring)] + word) * per_word_;
}

uint64_t RingCollective::grain_end(uint64_t word, uint64_t words) const {
  const uint64_t g = spec_.grain_words;
  return std::min(words, (word / g + 1) * g) - 1;
}

uint64_t RingCollective::step_words(int ring, int step) const {
  return all_to_all() ? static_cast<uint64_t>(n_ - 1 - step) * chunk_words(ring) : chunk_words(ring);
}

bool RingCollective::reduces(int step) const {
  return spec_.op == CollectiveOp::ReduceScatter || (spec_.op == CollectiveOp::AllReduce && step < n_ - 1);
}

// Reduce-scatter step s: position p sends slot p - s - 1, so that after n - 1 steps it holds slot
// p whole. All-gather step t: position p forwards slot p - t, starting with its own.
int RingCollective::send_slot(int pos, int step) const {
  int s = reduces(step) ? pos - step - 1 : pos - (spec_.op == CollectiveOp::AllReduce ? step - (n_ - 1) : step);
  return ((s % n_) + n_) % n_;
}

uint64_t RingCollective::chunk_words(int ring) const {
  return ring_first_word_[static_cast<size_t>(ring) + 1] - ring_first_word_[static_cast<size_t>(ring)];
}

uint64_t RingCollective::first_element(int ring, int slot, uint64_t word) const {
  uint64_t chunk = static_cast<uint64_t>(rank_at(ring, slot));
  return chunk * chunk_elems_ + (ring_first_word_[static_cast<size_t>(ring)] + word) * per_word_;
}

uint64_t RingCollective::pack(const std::vector<float>& b, uint64_t first) const {
  // The chunk's last word may be short (a chain's: the buffer's).
  const uint64_t end = chain() ? spec_.count : (first / chunk_elems_ + 1) * chunk_elems_;
  uint64_t w = 0;
  for (uint32_t j = 0; j < per_word_ && first + j < end; ++j) {
    float v = b[first + j];
    uint64_t bits = spec_.type == DataType::F32 ? float_bits(v) : to_bf16(v);
    w |= bits << (64 / per_word_ * j);
  }
  return w;
}

void RingCollective::unpack(std::vector<float>& b, uint64_t first, uint64_t data, bool add) {
  const uint64_t end = chain() ? spec_.count : (first / chunk_elems_ + 1) * chunk_elems_;
  for (uint32_t j = 0; j < per_word_ && first + j < end; ++j) {
    uint64_t bits = data >> (64 / per_word_ * j);
    float v = spec_.type == DataType::F32 ? bits_float(static_cast<uint32_t>(bits)) : from_bf16(static_cast<uint16_t>(bits));
    b[first + j] = add ? in_type(spec_.type, b[first + j] + v) : v;
  }
}

RingCollective::Drive RingCollective::drive(int link) {
  const Role& role = tx_role_[static_cast<size_t>(link)];
  if (role.ring < 0) return {false, 0, false};
  const Lane& lane = lanes_[static_cast<size_t>(role.ring)][static_cast<size_t>(role.pos)];
  if (chain()) {
    const uint64_t words = chunk_words(role.ring);
    const uint64_t word = role.back ? lane.back_tx : lane.word_tx;
    if (word >= words) return {false, 0, false};
    // The reduce forwards the partial sum once the word from the position before is added in;
    // the broadcast starts at the line's end with the sum, and forwards what came back.
    const bool own = !role.back && role.pos == 0;
    const uint64_t have = role.back && role.pos < n_ - 1 ? lane.back_rx : lane.word_rx;
    if (!own && !(have > grain_end(word, words))) return {false, 0, false};
    ++offers_;
    return {true, pack(buf_[static_cast<size_t>(rank_at(role.ring, role.pos))], stream_element(role.ring, word)), word + 1 == words};
  }
  if (lane.step_tx >= steps()) return {false, 0, false};
  // What this step forwards is what the step before brought in: wait for that word (all-to-all:
  // the message it came in also carried this rank's own block first).
  const uint64_t cw = chunk_words(role.ring);
  const uint64_t from = lane.word_tx + (all_to_all() ? cw : 0);
  bool forwards = lane.step_tx > 0;
  if (forwards && !(lane.step_rx > lane.step_tx - 1 ||
                    (lane.step_rx == lane.step_tx - 1 && lane.word_rx > grain_end(from, step_words(role.ring, lane.step_rx)))))
    return {false, 0, false};
  const bool last = lane.word_tx + 1 == step_words(role.ring, lane.step_tx);
  ++offers_;
  if (all_to_all() && forwards)
    return {true, transit_[static_cast<size_t>(role.ring)][static_cast<size_t>(role.pos)][static_cast<size_t>(lane.step_tx - 1)][from], last};
  const int rank = rank_at(role.ring, role.pos);
  if (all_to_all()) {  // its own blocks, for the ranks 1, 2, ... positions on
    uint64_t block = lane.word_tx / cw;
    int dest = (role.pos + 1 + static_cast<int>(block)) % n_;
    uint64_t first = first_element(role.ring, dest, lane.word_tx % cw);
    return {true, pack(send_[static_cast<size_t>(rank)], first), last};
  }
  uint64_t first = first_element(role.ring, send_slot(role.pos, lane.step_tx), lane.word_tx);
  return {true, pack(buf_[static_cast<size_t>(rank)], first), last};
}

void RingCollective::fire(int link) {
  const Role& role = tx_role_[static_cast<size_t>(link)];
  Lane& lane = lanes_[static_cast<size_t>(role.ring)][static_cast<size_t>(role.pos)];
  ++words_sent_;
  --pending_;
  if (chain()) {
    ++(role.back ? lane.back_tx : lane.word_tx);
    return;
  }
  if (++lane.word_tx == step_words(role.ring, lane.step_tx)) {
    lane.word_tx = 0;
    ++lane.step_tx;
  }
}

void RingCollective::deliver(int link, uint64_t data, bool last, uint64_t cycle) {
  const Role& role = rx_role_[static_cast<size_t>(link)];
  if (role.ring < 0) return error(fmt::format("link {} received a word but carries no ring", link));
  Lane& lane = lanes_[static_cast<size_t>(role.ring)][static_cast<size_t>(role.pos)];
  if (chain()) {
    const uint64_t words = chunk_words(role.ring);
    uint64_t& got = role.back ? lane.back_rx : lane.word_rx;
    if (got >= words)
      return error(fmt::format("link {} (stream {}, position {}) received a word after its {}'s last", link, role.ring, role.pos,
                               role.back ? "broadcast" : "reduce"));
    if (last != (got + 1 == words))
      error(fmt::format("link {} (stream {}, position {}): {} word {} of {} arrived with end-of-message {}", link, role.ring,
                        role.pos, role.back ? "broadcast" : "reduce", got, words, last ? 1 : 0));
    unpack(buf_[static_cast<size_t>(rank_at(role.ring, role.pos))], stream_element(role.ring, got), data, !role.back);
    --pending_;
    end_cycle_ = std::max(end_cycle_, cycle);  // a rack's boards deliver in any order within a window
    ++got;
    if (last) ++messages_delivered_;
    return;
  }
  if (lane.step_rx >= steps())
    return error(fmt::format("link {} (ring {}, position {}) received a word after the collective's last step", link,
                             role.ring, role.pos));
  const uint64_t words = step_words(role.ring, lane.step_rx);
  if (last != (lane.word_rx + 1 == words))
    error(fmt::format("link {} (ring {}, position {}): step {} word {} of {} arrived with end-of-message {}", link, role.ring,
                      role.pos, lane.step_rx, lane.word_rx, words, last ? 1 : 0));
  const int rank = rank_at(role.ring, role.pos);
  int prev = (role.pos + n_ - 1) % n_;
  if (all_to_all()) {
    auto& msg = transit_[static_cast<size_t>(role.ring)][static_cast<size_t>(role.pos)][static_cast<size_t>(lane.step_rx)];
    msg.push_back(data);
    const uint64_t cw = chunk_words(role.ring);
    if (lane.word_rx < cw) {  // the first block is this rank's, from the message's origin
      int origin = ((prev - lane.step_rx) % n_ + n_) % n_;
      unpack(buf_[static_cast<size_t>(rank)], first_element(role.ring, origin, lane.word_rx), data, false);
    }
  } else {
    uint64_t first = first_element(role.ring, send_slot(prev, lane.step_rx), lane.word_rx);
    unpack(buf_[static_cast<size_t>(rank)], first, data, reduces(lane.step_rx));
  }
  --pending_;
  end_cycle_ = std::max(end_cycle_, cycle);  // a rack's boards deliver in any order within a window
  if (last) ++messages_delivered_;
  if (++lane.word_rx == words) {
    lane.word_rx = 0;
    ++lane.step_rx;
  }
}

void RingCollective::attach(ServerSim& sim) { start(sim.cycle()); }

bool RingCollective::message_open(int link) const {
  const Role& role = tx_role_[static_cast<size_t>(link)];
  if (role.ring < 0) return false;
  const Lane& lane = lanes_[static_cast<size_t>(role.ring)][static_cast<size_t>(role.pos)];
  if (chain()) {
    const uint64_t word = role.back ? lane.back_tx : lane.word_tx;
    return word > 0 && word < chunk_words(role.ring);
  }
  return lane.word_tx > 0;
}

void RingCollective::error(const std::string& what) {
  if (framing_errors_++ == 0) first_error_ = what;
}

uint64_t RingCollective::wrong() const {
  uint64_t bad = 0;
  std::vector<float> sum(spec_.count);
  if (spec_.op != CollectiveOp::AllGather && !all_to_all())
    for (uint64_t e = 0; e < spec_.count; ++e) {
      double s = 0;
      for (int r = 0; r < n_; ++r) s += collective_input(spec_, r, e);
      sum[e] = in_type(spec_.type, static_cast<float>(s));
    }
  for (int r = 0; r < n_; ++r) {
    const auto& b = buf_[static_cast<size_t>(r)];
    uint64_t from = 0, to = spec_.count;
    if (spec_.op == CollectiveOp::ReduceScatter) {  // a rank's result is its own chunk
      from = static_cast<uint64_t>(r) * chunk_elems_;
      to = from + chunk_elems_;
    }
    for (uint64_t e = from; e < to; ++e) {
      const int block = static_cast<int>(e / chunk_elems_);
      float want = spec_.op == CollectiveOp::AllGather ? collective_input(spec_, block, e)
                   : all_to_all() ? collective_input(spec_, block, static_cast<uint64_t>(r) * chunk_elems_ + e % chunk_elems_)
                                  : sum[e];
      if (float_bits(b[e]) != float_bits(want)) ++bad;
    }
  }
  return bad;
}

uint64_t RingCollective::payload_bytes_per_rank() const {
  if (chain()) return 2 * spec_.count * element_bytes(spec_.type);  // a middle rank: the reduce and the broadcast
  uint64_t blocks = all_to_all() ? static_cast<uint64_t>(n_) * (n_ - 1) / 2 : static_cast<uint64_t>(steps());
  return blocks * chunk_elems_ * element_bytes(spec_.type);
}

}  // namespace mxtb::sim
