// Collectives on the emulated server: the XPUs' own program behind their lanes, with real data.
// Each rank's input is a pure function of (seed, rank, element); the ring algorithms move it over
// the lanes the controller's circuits connect (every word through the RTL link layers), the
// receiving XPU reduces into its buffer, and at the end every element of every rank is compared
// with the result computed here. Inputs are small integers, so every partial sum is exact in the
// data type and the order of additions cannot change a result: a mismatch is a lost, duplicated,
// reordered or corrupted word, never rounding.
//
// Rings. A ring is an order of the tenant's XPUs and, for each hop, one circuit from an XPU's lane
// to the next XPU's lane. The rings of a collective share its buffer: each chunk of the buffer is
// split among the rings, so every circuit the rings use carries its share at once, and a circuit
// is used once in each direction (a ring and its reverse). ring_plan() builds them from the
// active circuit map. NCCL calls these channels.
//
// The algorithms are the ring ones nccl-tests measures: reduce-scatter (n - 1 steps: a rank sends
// a chunk to the next and adds the chunk it receives), all-gather (n - 1 steps: forward the chunk
// received), all-reduce (both). A rank sends a word of step s only once it has received that
// word's position of step s - 1 (the data it forwards), so the ring pipelines word by word, as a
// real XPU's DMA engine would with chunks of one word. All-to-all goes round the same rings by
// store and forward (n - 1 steps: a rank sends the blocks of its origin not yet delivered, the
// next keeps the first, its own, and forwards the rest), so a block travels up to n - 1 hops: each
// ring carries its slice of every block, in its own direction, not the shorter way round.
#pragma once

#include "protocol/fabric_map.h"
#include "sim/server/lane_program.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::sim {

enum class CollectiveOp { AllReduce, ReduceScatter, AllGather, AllToAll };
enum class DataType { F32, BF16 };
// Ring: the rings above. Chain (all-reduce only): for XPUs joined in a line but not a ring (three
// XPUs of a 2x2 torus), each stream reduces along the line and broadcasts the sum back, word by
// word; streams alternate direction, so a circuit carries one stream's reduce one way and its
// broadcast the other.
enum class Algorithm { Ring, Chain };
const char* to_string(Algorithm a);  // "ring", "chain"
const char* to_string(CollectiveOp op);  // nccl-tests' names: all_reduce, reduce_scatter, all_gather, alltoall
const char* to_string(DataType t);       // float, bfloat16 (nccl-tests' type column)
std::optional<CollectiveOp> collective_op_from_string(const std::string& s);  // also "allreduce" etc.
std::optional<DataType> data_type_from_string(const std::string& s);          // float|fp32, bfloat16|bf16
uint32_t element_bytes(DataType t);
// nccl-tests' bus bandwidth factor: busbw = algbw x this (2(n-1)/n for all-reduce, (n-1)/n else).
double busbw_factor(CollectiveOp op, int ranks);

struct RingHop {
  int tx_link = -1;  // the sending XPU's lane (link = XPU x lanes + lane)
  int rx_link = -1;  // the next XPU's lane at the other end of the circuit
};
struct Ring {
  std::vector<int> order;     // XPUs, ring order (a rank's position in it)
  std::vector<RingHop> hops;  // hops[p]: order[p] -> order[(p + 1) % n] (a chain: n - 1 hops, no way back)
};

// Rings over the tenant's XPUs (`xpus`, in ring order) from the circuit map (`port_target`: mesh
// port -> port, XPU lanes first): as many rings as the hop with the fewest circuits allows, in
// each direction when `both_directions`. Throws std::invalid_argument naming a hop without a
// circuit.
std::vector<Ring> ring_plan(const protocol::ServerShape& shape, const std::vector<int>& port_target,
                            const std::vector<int>& xpus, bool both_directions = true);

// The rings over `order` (XPUs, ring order) given each hop's circuits (hop_circuits[p]: order[p]
// to order[p + 1], wrapping): as many as the hop with the fewest circuits allows, and, when
// `both_directions`, their reverses on each circuit's other direction. ring_plan's, and the rack's
// (sim/rack/rack_collective.h) over its own circuits. Throws std::invalid_argument when the hops
// do not match the order.
std::vector<Ring> rings_over(const std::vector<int>& order, const std::vector<std::vector<RingHop>>& hop_circuits,
                             bool both_directions = true);

// Chains over XPUs joined in a line (`xpus` in line order): one stream per circuit of the hop with
// the fewest, alternately in each direction. Throws std::invalid_argument naming a missing hop.
std::vector<Ring> chain_plan(const protocol::ServerShape& shape, const std::vector<int>& port_target,
                             const std::vector<int>& xpus);

struct CollectiveSpec {
  CollectiveOp op = CollectiveOp::AllReduce;
  DataType type = DataType::F32;
  uint64_t count = 0;      // elements of the whole buffer (nccl-tests' count): a multiple of ranks
  std::vector<int> ranks;  // XPU of each rank
  std::vector<Ring> rings;
  uint64_t seed = 1;
  // Pipeline grain: a rank forwards a word only once the whole grain of words it lies in has
  // arrived (a DMA engine moving chunks of this many words). 1: word by word.
  uint32_t grain_words = 1;
  Algorithm algorithm = Algorithm::Ring;  // Chain: `rings` are chain_plan()'s streams
};

// Why `spec` cannot run (empty: it can): each reason names the value.
std::string check_spec(const CollectiveSpec& spec, const protocol::ServerShape& shape);

// Rank r's input element e (e < count; all-gather: its chunk's elements), as the data type holds it.
float collective_input(const CollectiveSpec& spec, int rank, uint64_t element);

// One collective's run on the lanes (its rings, or a chain's streams: CollectiveSpec::algorithm):
// the per-lane calls ServerSim's engines make instead of a lane's traffic source and scoreboard
// (ServerSim::set_lane_program), or that a TenantJob forwards.
class RingCollective : public LaneProgram {
 public:
  RingCollective(const CollectiveSpec& spec, const protocol::ServerShape& shape);

  bool owns(int link) const override;  // the link is a hop's sender or receiver
  Drive drive(int link) override;
  void fire(int link) override;
  void deliver(int link, uint64_t data, bool last, uint64_t cycle) override;
  bool wants_attention() const override { return done(); }
  void attach(ServerSim& sim) override;
  uint64_t messages_delivered() const override { return messages_delivered_; }
  void start(uint64_t cycle) { start_cycle_ = cycle; }
  // A message on this sending link has words taken and its last not yet: stopping here would
  // leave the link layer holding half a message.
  bool message_open(int link) const;

  bool done() const { return pending_ == 0; }
  uint64_t start_cycle() const { return start_cycle_; }
  uint64_t end_cycle() const { return end_cycle_; }  // the last word's delivery
  // Elements of every rank's result that differ from the expected one (call once done); words
  // that arrived where none was expected or with the wrong end-of-message flag are counted in
  // framing_errors().
  uint64_t wrong() const;
  uint64_t framing_errors() const { return framing_errors_; }
  const std::string& first_error() const { return first_error_; }
  uint64_t words_sent() const { return words_sent_; }
  // Lane-cycles a word was ready but the link layer did not take it (credits, replays, framing).
  uint64_t backpressure() const { return offers_ - words_sent_; }
  uint64_t payload_bytes_per_rank() const;  // what one rank's lanes carried: the algorithm's bytes
  const CollectiveSpec& spec() const { return spec_; }

 private:
  struct Lane {  // one position of one ring: what it sends and receives
    int step_tx = 0, step_rx = 0;
    uint64_t word_tx = 0, word_rx = 0;
    uint64_t back_tx = 0, back_rx = 0;  // a chain's broadcast (word_*: its reduce)
  };
  struct Role {
    int ring = -1, pos = -1;
    bool back = false;  // a chain's broadcast link (towards position 0)
  };
  bool chain() const { return spec_.algorithm == Algorithm::Chain; }
  int rank_at(int ring, int pos) const;  // the rank at a ring's position
  uint64_t stream_element(int ring, uint64_t word) const;
  int steps() const;
  bool reduces(int step) const;              // the received words are added (reduce-scatter steps)
  int send_slot(int pos, int step) const;    // which chunk slot (ring position) a position sends
  uint64_t chunk_words(int ring) const;      // words per chunk slot on this ring (a chain: the stream's words)
  uint64_t step_words(int ring, int step) const;  // words of one step's message on this ring
  uint64_t grain_end(uint64_t word, uint64_t words) const;  // the last word of `word`'s grain in a message of `words`
  bool all_to_all() const { return spec_.op == CollectiveOp::AllToAll; }
  uint64_t first_element(int ring, int slot, uint64_t word) const;
  uint64_t pack(const std::vector<float>& b, uint64_t first) const;
  void unpack(std::vector<float>& b, uint64_t first, uint64_t data, bool add);
  void error(const std::string& what);

  CollectiveSpec spec_;
  int n_ = 0;
  uint32_t per_word_ = 2;  // elements in a 64-bit lane word
  uint64_t chunk_elems_ = 0;
  std::vector<uint64_t> ring_first_word_;  // ring k's words of a chunk: [first[k], first[k + 1])
  std::vector<std::vector<Lane>> lanes_;   // [ring][pos]
  std::vector<Role> tx_role_, rx_role_;    // per link
  std::vector<std::vector<float>> buf_;    // per rank (all-to-all: what it received)
  std::vector<std::vector<float>> send_;   // all-to-all: per rank, block d for rank d
  // All-to-all: per ring and position, the words of each step's message as received, forwarded
  // at the next step (every step kept: a fast neighbour's next message must not overwrite them).
  std::vector<std::vector<std::vector<std::vector<uint64_t>>>> transit_;
  std::vector<int> rank_of_xpu_;
  uint64_t pending_ = 0;  // sends and receives still to happen (steps x positions x rings x 2)
  uint64_t start_cycle_ = 0, end_cycle_ = 0, words_sent_ = 0, offers_ = 0, framing_errors_ = 0, messages_delivered_ = 0;
  std::string first_error_;
};

}  // namespace mxtb::sim
