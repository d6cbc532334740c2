// mxtb::host::alloc: torus datacenter model, the baseline (contiguous torus) allocator and the
// Morphlux (server-scale photonic fabric) allocator, metrics and spare sizing.
// See docs/alloc.md for the model and every metric's definition.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace mxtb::host::alloc {

// ---------------------------------------------------------------------------------------------
// Geometry. A rack is a 4x4x4 chip torus (wrap-around through the optical circuit switches); a
// server is 2x2x1 chips, so a rack holds 16 servers laid out as a 2x2x4 server grid.
constexpr int kRackDim = 4;
constexpr int kChipsPerRack = kRackDim * kRackDim * kRackDim;  // 64
constexpr int kServersPerRack = 16;
constexpr int kChipsPerServer = 4;
constexpr int kPortsPerChip = 6;
constexpr int kLinksPerRack = 32;  // server-to-server neighbour pairs in the 2x2x4 server torus

struct Shape {
  std::array<int, 3> d{1, 1, 1};
  int volume() const { return d[0] * d[1] * d[2]; }
  std::string str() const;
  bool operator==(const Shape& o) const { return d == o.d; }
};
// Parses "AxBxC" (or a single integer N, meaning 1x1xN). Throws std::invalid_argument.
Shape parse_shape(const std::string& s);
// The smallest slice shape holding n chips: dims in {1,2,4} inside a rack, 4x4x(4k) beyond.
Shape shape_for_chips(int n);

// Local chip coordinates inside a rack.
inline int local_chip(int x, int y, int z) { return x + kRackDim * (y + kRackDim * z); }
inline std::array<int, 3> chip_coords(int local) {
  return {local % kRackDim, (local / kRackDim) % kRackDim, local / (kRackDim * kRackDim)};
}
inline int server_of_local(int local) {
  auto c = chip_coords(local);
  return c[0] / 2 + 2 * (c[1] / 2 + 2 * c[2]);
}
// The 4 local chips of a server.
std::array<int, 4> server_chips(int server);
// Link id between two servers of a rack (neighbours in the 2x2x4 server torus), or -1.
int server_link(int s, int t);
// Endpoints of a link id.
std::array<int, 2> link_ends(int link);

// ---------------------------------------------------------------------------------------------
// Logical torus of a slice: chips numbered l = i + a*(j + b*k) for shape a x b x c.
struct LogicalEdge {
  int u = 0, v = 0;
  int dim = 0;
  int mult = 1;    // 2 for a dimension of extent 2 (both ring directions reach the same peer)
  int wanted = 1;  // lanes the Morphlux fabric wants on this edge (all 6 ports spread out)
};
std::vector<LogicalEdge> logical_edges(const Shape& s);

struct Circuit {
  int u = 0, v = 0;        // logical endpoints
  std::vector<int> path;   // server links crossed from u's server to v's; empty inside one server
  int lanes = 0;           // lanes (ports per endpoint) carried; each lane holds a fibre on every link of the path
  int hops() const { return static_cast<int>(path.size()); }
};

enum class SliceKind { RackTorus, RackFabric, MultiRack };

struct Slice {
  int id = -1;
  Shape shape;           // requested logical shape
  SliceKind kind = SliceKind::RackTorus;
  int rack = -1;         // in-rack slices
  std::vector<int> chips;  // global chip id of each logical chip
  std::vector<Circuit> circuits;  // Morphlux fabric slices only
  // Contiguous in-rack slices: one entry per fibre their native torus links hold on a server link
  // (a torus edge between chips of two servers is one of that link's fibres).
  std::vector<int> torus_fibres;
  int requested = 0;       // chips asked for (the aligned baseline rounds a request up to its canonical shape)
  std::string decided_by;  // "first-fit", "aligned", "ilp", "heuristic", "server", "torus-box", "ocs-cubes", ...
};

// ---------------------------------------------------------------------------------------------
class Datacenter {
 public:
  Datacenter(int racks, int fibres_per_link);
  int racks() const { return racks_; }
  int chips() const { return racks_ * kChipsPerRack; }
  int fibres() const { return fibres_; }
  int free_chips() const { return free_total_; }
  int rack_free(int r) const { return rack_free_[r]; }
  uint64_t rack_used_mask(int r) const { return used_mask_[r]; }
  bool chip_free(int g) const { return owner_[g] < 0; }
  int owner(int g) const { return owner_[g]; }
  // Fibres of a link not held as a slice's first lane: what a new placement may claim. Lanes
  // beyond the first on a circuit are opportunistic and are taken back when a newer slice needs
  // the fibre for its first lane.
  int link_residual(int r, int link) const { return fibres_ - link_hard_[r * kLinksPerRack + link]; }
  // Fibres of a link carrying nothing at all (for granting extra lanes).
  int link_idle(int r, int link) const {
    return fibres_ - link_hard_[r * kLinksPerRack + link] - link_extra_[r * kLinksPerRack + link];
  }
  long lanes_revoked() const { return revoked_; }
  // Changes whenever a slice is committed to or released from rack r.
  uint64_t rack_version(int r) const { return rack_version_[r]; }
  // Commits a slice (assigns its id); throws std::logic_error if it overlaps or overbooks fibre.
  int commit(Slice s);
  void release(int id);
  const std::vector<std::optional<Slice>>& slices() const { return slices_; }
  std::vector<int> live_ids() const;
  const Slice& slice(int id) const { return *slices_.at(id); }

 private:
  int racks_;
  int fibres_;
  int free_total_;
  std::vector<int> owner_;
  std::vector<int> rack_free_;
  std::vector<uint64_t> used_mask_;
  std::vector<int> link_hard_, link_extra_;
  std::vector<std::vector<int>> rack_slices_;
  std::vector<uint64_t> rack_version_;
  long revoked_ = 0;
  std::vector<std::optional<Slice>> slices_;
};

// ---------------------------------------------------------------------------------------------
// Allocators. place() never mutates the datacenter; it returns a slice to commit, or nothing.
enum class Policy { Baseline, Morphlux };
enum class Solver { Auto, Ilp, Heuristic };
const char* policy_name(Policy p);
// How the baseline places an in-rack slice: every rotation and origin with wrap-around, first fit
// (mxtb's torus allocator), or only the canonical grid-aligned shapes 2x2x1, 2x2x2, 2x2x4, 2x4x4,
// 4x4x4 at origins that are multiples of their extents, no rotation (the Morphlux authors'
// baseline; docs/alloc.md).
enum class BaselineMode { TorusFirstFit, Aligned };
// How Morphlux places an in-rack slice: chips on any servers, circuits only between neighbouring
// servers (kNeighbour, mxtb's fabric model), or whole free servers anywhere in the rack with
// circuits routed over several server links (kServer, the authors' allocator).
enum class FabricMode { Neighbour, Server };
const char* baseline_mode_name(BaselineMode m);
const char* fabric_mode_name(FabricMode m);
BaselineMode parse_baseline_mode(const std::string& s);  // std::invalid_argument names the choices
FabricMode parse_fabric_mode(const std::string& s);

struct IlpStats {
  int calls = 0, optimal = 0, infeasible = 0, timeouts = 0, skipped_large = 0;
  std::vector<double> solve_ms;
};

struct AllocOptions {
  Policy policy = Policy::Morphlux;
  Solver solver = Solver::Auto;
  int ilp_time_limit_ms = 100;
  int ilp_max_chips = 8;  // auto: larger slices go straight to the heuristic
  BaselineMode baseline = BaselineMode::TorusFirstFit;
  FabricMode fabric = FabricMode::Neighbour;
};
// "baseline(aligned)", "morphlux(server)", ...: the policy with the mode that applies to it.
std::string allocator_label(const AllocOptions& o);

class Allocator {
 public:
  explicit Allocator(AllocOptions o) : opt_(o) {}
  std::optional<Slice> place(const Datacenter& dc, const Shape& shape);
  IlpStats& ilp_stats() { return ilp_; }
  const AllocOptions& options() const { return opt_; }

 private:
  AllocOptions opt_;
  IlpStats ilp_;
  std::map<long, std::vector<uint64_t>> failed_;  // shape -> per rack: version + 1 when refused
};

// Whole-cube placement through the optical circuit switches (both policies).
std::optional<Slice> place_multirack(const Datacenter& dc, const Shape& shape);
// Fibres a contiguous in-rack slice's native torus links hold: one entry (server link) per torus
// edge between chips of two servers, at most the link's fibre count per link.
std::vector<int> torus_fibre_links(const Shape& shape, const std::vector<int>& chips, int fibres_per_link);
// The aligned baseline's canonical shape for a request of n chips (n <= 64): 2x2x1 (one server),
// 2x2x2, 2x2x4, 2x4x4 or 4x4x4; throws std::invalid_argument beyond a rack.
Shape aligned_shape(int n);
// Aligned placement in rack r: the canonical shape of n chips at a grid-aligned origin, scanned
// from position `start` (0: first fit). The slice's shape is the canonical one.
std::optional<Slice> aligned_place_in_rack(const Datacenter& dc, int r, int n, int start = 0);
// Aligned placement with a random rack order and a random first position (to build fill states).
std::optional<Slice> aligned_place_random(const Datacenter& dc, int n, std::mt19937_64& rng);
// Morphlux at server granularity in rack r: a slice of n <= 4 chips in one server (best fit); a
// larger slice on ceil(n/4) wholly free servers anywhere in the rack, logical chips grouped into
// compact blocks of 4, blocks mapped to servers to keep circuits short, every circuit routed on a
// shortest path of server links with a fibre left (a circuit of h hops holds a fibre on each of
// its h links), wanted lanes granted afterwards from idle fibres along whole paths.
std::optional<Slice> server_place_in_rack(const Datacenter& dc, int r, const Shape& shape);
// Hops between two servers of a rack over server links (2x2x4 server torus).
int server_distance(int s, int t);
// Baseline: first fit over every rotation and origin, with wrap-around, inside rack r. Origins
// are scanned cyclically from local chip `origin_start` (0: plain first fit).
std::optional<Slice> baseline_place_in_rack(const Datacenter& dc, int r, const Shape& shape,
                                            int origin_start = 0);
// The baseline's contiguous placement with randomized search order (used to build fragmented
// states that are not artificially packed): racks in random order, then every rotation and
// origin, origins scanned from a random start; slices beyond a rack take whole cubes.
// With shuffle_racks false the racks are scanned first fit (only the origins are randomized).
std::optional<Slice> baseline_place_random(const Datacenter& dc, const Shape& shape, std::mt19937_64& rng,
                                           bool shuffle_racks = true);

// Morphlux in-rack placement problem: free chips per server and residual fibres per link.
struct RackView {
  std::array<int, kServersPerRack> free{};
  std::array<int, kLinksPerRack> res{};
};
RackView rack_view(const Datacenter& dc, int r);
// Server of each logical chip; empty on failure.
using ServerAssign = std::vector<int>;
ServerAssign fabric_heuristic(const RackView& v, const Shape& shape);
struct IlpResult {
  enum class Status { Optimal, FeasibleTimeout, Infeasible, Timeout, Error } status = Status::Error;
  ServerAssign assign;
  double objective = 0;
  double ms = 0;
};
IlpResult fabric_ilp(const RackView& v, const Shape& shape, int time_limit_ms);
// Fibre-weighted cost of an assignment (the ILP's objective).
double fabric_cost(const Shape& shape, const ServerAssign& a);
// Turns a server assignment into a committed-ready slice: chips and circuits with lanes granted.
Slice fabric_slice(const Datacenter& dc, int r, const Shape& shape, const ServerAssign& a);

// ---------------------------------------------------------------------------------------------
// Invariant checker: returns an empty string when the datacenter is consistent, else the problem.
std::string check_invariants(const Datacenter& dc);
std::string check_slice(const Datacenter& dc, const Slice& s);

// ---------------------------------------------------------------------------------------------
// Metrics.
double slice_bandwidth(const Slice& s);  // fraction of the slice's chips' ports carrying its traffic
struct StepModel {
  double grad_bytes = 2.6e9;       // fp16 gradients of a 1.3B-parameter model
  double port_gbps = 50.0;         // GB/s per torus port (per direction)
  double hop_latency_s = 5e-6;     // per ring step
  double compute_s = 0.02;         // per-chip compute per step (weak scaling, finetuning)
};
double allreduce_seconds(const Shape& shape, double bw_fraction, const StepModel& m = {});
double step_seconds(const Shape& shape, double bw_fraction, const StepModel& m = {});
// Fragmentation index of rack r: 1 - S/T for the given candidate shapes (descending volume).
double rack_fragmentation(const Datacenter& dc, int r, Policy p, const std::vector<Shape>& shapes,
                          int* largest = nullptr);
// The same with the policy's mode: the aligned baseline counts only its canonical shapes at
// aligned origins; Morphlux at server granularity uses server_place_in_rack.
double rack_fragmentation(const Datacenter& dc, int r, const AllocOptions& o, const std::vector<Shape>& shapes,
                          int* largest = nullptr);
// Chips disturbed when chip g fails: the whole slice for a contiguous torus, one chip when the
// fabric can swap in a free chip of the same rack.
int blast_radius(const Datacenter& dc, int g, Policy p);

// Spare sizing. prob_at_least[k] = P(k or more of the groups fail), by dynamic programming.
std::vector<double> failure_tail(const std::vector<double>& p);
std::vector<double> failure_tail_bruteforce(const std::vector<double>& p);
// Smallest K with P(K or more groups fail) <= target.
int spares_needed(const std::vector<double>& p, double target);

// ---------------------------------------------------------------------------------------------
// Workloads.
struct ShapeMix {
  std::vector<Shape> shapes;
  std::vector<double> weight;  // normalized to 1
  Shape sample(std::mt19937_64& rng) const;
};
struct Job {
  double arrival = 0;
  double duration = 0;
  Shape shape;
  int size = 0;  // chips requested in the trace (shape may round up)
};
ShapeMix load_shape_mix(const std::string& path);           // tpu_job_size.csv format
std::vector<Job> load_job_trace(const std::string& path, size_t max_jobs);  // philly format
struct IatMix {
  std::vector<double> iat, weight;
  double sample(std::mt19937_64& rng) const;
  double mean() const;
};
IatMix load_iat(const std::string& path);  // tpu_arrival_time.csv format
// `file` in the named workloads' folder `dir` (the program's traces/workloads/); throws
// std::invalid_argument when `dir` is empty.
std::string workload_path(const std::string& dir, const std::string& file);

}  // namespace mxtb::host::alloc
