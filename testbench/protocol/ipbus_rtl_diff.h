// Differential fuzzing of the IPbus 2.0 target: the RTL transactor (rtl/ipbus/ipbus_transactor.sv,
// verilated) against the C++ target (protocol/ipbus/target.h) that it mirrors. Both get the same
// datagrams and a bus over identical register files; they must give the same reply byte for byte
// (or both none), the same datagram kind and fault, the same bus accesses in the same order and
// the same register contents afterwards.
//
// Pieces, usable alone:
//   BoardRegisters     the board's bus: controller and emulator windows with the generated access
//                      rules, the scratch RAM, and a set of words that refuse their access
//                      (SLVERR) although the map allows it; every access is logged.
//   BoardPort          the C++ target's BusPort over it, with the emulator's rules exactly
//                      (sim/emulator/ipbus_server.cpp execute(), sim/emulator/cpp_target.cpp handle()).
//   CppSide, RtlSide   a target and its board: the C++ Target, or the verilated transactor driven
//                      cycle by cycle (AXI4-Stream in and out, an AXI4-Lite slave over its board
//                      that also checks the AXI rules), both answering handle(datagram).
//   DatagramGenerator  seeded datagrams of every class: valid control packets, status and resend
//                      requests, and each kind of malformed input.
//   DiffRunner         one datagram into a reference and a device side, compared.
#pragma once

#include "protocol/ipbus/codec.h"
#include "protocol/ipbus/target.h"

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace mxtb::testbench::ipbus_diff {

namespace ipbus = mxtb::protocol::ipbus;

// ---- the board's bus ----

// One bus access as the board answered it.
struct BusAccess {
  bool write = false;
  uint32_t addr = 0;  // word address
  uint32_t data = 0;  // the data written, or read (0 when refused)
  bool ok = true;     // false: answered with an error response
  bool operator==(const BusAccess& o) const { return write == o.write && addr == o.addr && data == o.data && ok == o.ok; }
  bool operator!=(const BusAccess& o) const { return !(*this == o); }
};
std::string to_string(const BusAccess& a);

class BoardRegisters {
 public:
  enum class Window : uint8_t { None, Controller, Emulator, Ram };
  // Initial contents: pseudo-random from fill_seed, so that reads return something worth comparing.
  explicit BoardRegisters(uint64_t fill_seed = 1);

  static Window window_of(uint32_t addr);
  // What the generated register maps allow at a word address (the RAM allows everything; an
  // address outside the windows or in a register hole allows nothing).
  static bool readable(uint32_t addr);
  static bool writable(uint32_t addr);

  // Bus accesses, logged. A read that the map does not allow, or of a refused word, answers
  // nullopt; a write likewise answers false and stores nothing.
  std::optional<uint32_t> read(uint32_t addr);
  bool write(uint32_t addr, uint32_t data);
  // Contents without touching the log; 0 outside the windows.
  uint32_t peek(uint32_t addr) const;

  // Words whose accesses answer an error although the map allows them.
  std::set<uint32_t> refused;
  // Words whose writes alone answer an error (reads answer as ever): an RMW whose write fails.
  std::set<uint32_t> refused_writes;
  // Every access since the last clear, in order.
  std::vector<BusAccess> log;

  // Empty when the contents are equal, else the first difference ("ram[12]: 0x... vs 0x...").
  std::string compare_contents(const BoardRegisters& other) const;
  void copy_contents_from(const BoardRegisters& other);

 private:
  uint32_t* slot(uint32_t addr);
  std::vector<uint32_t> controller_, emulator_, ram_;
};

// The C++ target's bus: the emulator's checks before anything moves (windows, the RAM's span rule,
// the per-register access rules), then word by word over `board`, stopping at the first word that
// refuses with that transaction's error code. RMW is a read, then a write of the same word.
class BoardPort : public ipbus::BusPort {
 public:
  explicit BoardPort(BoardRegisters& board) : board_(board) {}
  ipbus::InfoCode execute(const Access& a, std::vector<uint32_t>& out) override;

 private:
  bool checks_pass(const Access& a) const;
  ipbus::InfoCode run_words(const Access& a, std::vector<uint32_t>& out);
  BoardRegisters& board_;
};

// ---- the two targets ----

// What a target did with one datagram. kind and fault as the transactor's stat port gives them.
struct Answer {
  static constexpr uint8_t kKindControl = 0, kKindStatus = 1, kKindResend = 2, kKindDropped = 3;
  static constexpr uint8_t kNoFault = 15;
  std::optional<std::vector<uint8_t>> reply;
  uint8_t kind = kKindDropped;
  uint8_t fault = kNoFault;  // ipbus::Fault as a number, or kNoFault
  uint64_t cycles = 0;       // clock cycles the datagram took (RTL only)
  std::string failure;       // the side broke a rule, hung or failed an assertion: what and where
};
std::string describe_kind(uint8_t kind, uint8_t fault);

class Side {
 public:
  virtual ~Side() = default;
  virtual Answer handle(const std::vector<uint8_t>& datagram) = 0;
  // The target's reset: back to its state after construction (no kept replies, next id 1, empty
  // history); the board keeps its contents. The RTL side pulses rst_ni on the running model.
  virtual void reset() = 0;
  virtual BoardRegisters& board() = 0;
  virtual const char* name() const = 0;
};

class CppSide : public Side {
 public:
  explicit CppSide(uint64_t fill_seed = 1, uint32_t n_buffers = 16);
  Answer handle(const std::vector<uint8_t>& datagram) override;
  void reset() override;
  BoardRegisters& board() override { return board_; }
  const char* name() const override { return "C++ target"; }
  const ipbus::Target& target() const { return *target_; }

 private:
  uint32_t n_buffers_;
  BoardRegisters board_;
  BoardPort port_{board_};
  std::unique_ptr<ipbus::Target> target_;
};

// How the RTL's environment behaves: probabilities per cycle and delays, from `seed`.
struct RtlTiming {
  uint64_t seed = 1;
  double in_gap = 0.25;           // the source holds tvalid low for a cycle between beats
  double out_stall = 0.25;        // the sink holds tready low for a cycle
  double axi_ready_stall = 0.35;  // the AXI slave holds awready/wready/arready low for a cycle
  uint32_t max_response_delay = 4;  // cycles from an accepted access to its response, drawn 0..this
  double decerr = 0.5;            // a refused access answers DECERR instead of SLVERR
  uint64_t cycle_bound = 400000;  // cycles one datagram may take before the transactor counts as hung
  // Word addresses whose accesses the slave takes but answers only silent_delay cycles later: past
  // the transactor's AXI_TIMEOUT (65535), a bus that does not answer (read and write timeouts).
  std::set<uint32_t> silent;
  std::set<uint32_t> silent_writes;  // the same for writes alone (an RMW whose write is not answered)
  uint32_t silent_delay = 100000;
  // The slave lowers awready once it has taken an address, and wready once it has taken data,
  // until the write's response (as a block RAM that takes one write at a time does).
  bool ready_only_when_free = false;
  // The slave takes a write's address only once it has its data (DataFirst), or its data only
  // once it has its address (AddressFirst), of a write not yet answered: one a cycle after the
  // other, at the earliest.
  enum class WriteOrder : uint8_t { Together, DataFirst, AddressFirst } write_order = WriteOrder::Together;
  // All ready, no gaps, no delays: for measuring the transactor's own speed.
  static RtlTiming eager(uint64_t seed = 1) {
    RtlTiming t;
    t.seed = seed;
    t.in_gap = t.out_stall = t.axi_ready_stall = t.decerr = 0;
    t.max_response_delay = 0;
    return t;
  }
};

class RtlSide : public Side {
 public:
  // n_buffers: the model's N_BUFFERS, 16 (the board's) or 3 (where the ring of kept replies
  // does not wrap at a power of two); another is refused (std::invalid_argument).
  explicit RtlSide(uint64_t fill_seed = 1, RtlTiming timing = {}, uint32_t n_buffers = 16);
  static bool has_model(uint32_t n_buffers);  // built into this program
  ~RtlSide() override;
  Answer handle(const std::vector<uint8_t>& datagram) override;
  void reset() override;
  BoardRegisters& board() override;
  const char* name() const override { return "RTL transactor"; }
  uint64_t cycles() const;  // since construction
  // `cycles` clock cycles with no datagram (the slave still answering, a late response among
  // them); empty, or what went wrong (an AXI rule, an assertion, output with nothing in).
  std::string idle(uint64_t cycles);
  // The slave holds an access not yet answered (or a write's address or data without the other).
  bool bus_outstanding() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// ---- datagrams ----

enum class DatagramClass : uint8_t {
  Control,          // valid control packet, 1-20 transactions of every type, id 0 or the next expected
  OutOfSequence,    // control packet with a wrong id
  Status,           // status request
  Resend,           // resend request: an id recently sent, an old one, 0 or random
  Truncated,        // a valid packet cut short
  StrayBytes,       // a valid packet and 1-3 bytes more
  BadVersion,       // packet header version not 2
  BadReserved,      // packet header reserved bits set
  BadQualifier,     // byte-order qualifier not 0xF
  BadPacketType,    // packet type 3..15
  BadStatusLength,  // status request of other than 16 words
  BadResendLength,  // resend request of more than 1 word
  BadTxHeader,      // a transaction of version not 2 or of an unknown type
  BadInfoCode,      // a transaction whose info code is not 0xF
  RmwWords,         // an RMW of other than 1 word
  BodyPastEnd,      // the last transaction's body runs past the packet's end
  ReplyPastMtu,     // transactions whose replies pass the MTU
  Oversized,        // 1473..1600 bytes
  RandomBytes,      // 1..1600 random bytes, sometimes behind a valid header
  kCount
};
const char* to_string(DatagramClass c);

struct Datagram {
  std::vector<uint8_t> bytes;
  DatagramClass cls = DatagramClass::Control;
};

class DatagramGenerator {
 public:
  explicit DatagramGenerator(uint64_t seed);
  // A datagram of a class drawn by weight. next_expected_id: the targets' (both agree, or the
  // comparison has failed already).
  Datagram next(uint16_t next_expected_id);
  Datagram make(DatagramClass c, uint16_t next_expected_id);

  // Building blocks, also for directed tests.
  std::vector<uint32_t> random_transaction();
  std::vector<uint32_t> control_packet(uint16_t id, size_t n_transactions);
  uint32_t interesting_address(uint32_t words, bool incrementing);
  std::mt19937_64& rng() { return rng_; }
  // Words some blocks are aimed across (the refused ones), so that bus errors happen mid-block.
  void aim_at(const std::set<uint32_t>& words) { hot_ = words; }

 private:
  std::vector<uint8_t> bytes_of(const std::vector<uint32_t>& words);  // in a random byte order
  uint16_t control_id(uint16_t next_expected_id);
  std::mt19937_64 rng_;
  std::vector<uint16_t> sent_ids_;  // sequence-checked ids this generator sent, newest last
  std::set<uint32_t> hot_;
};

// Transaction words, for directed tests.
uint32_t tx_header(ipbus::TxType t, uint32_t words, uint16_t id = 0, ipbus::InfoCode info = ipbus::InfoCode::Request);
uint32_t packet_header(ipbus::PacketType t, uint16_t id);
std::string hex(const std::vector<uint8_t>& bytes);

// ---- the comparison ----

struct Mismatch {
  std::string what;  // the first difference found
  std::vector<uint8_t> datagram;
  Answer expected, actual;
  std::vector<BusAccess> expected_bus, actual_bus;
};
// The datagram, both answers and both bus logs, for a report.
std::string describe(const Mismatch& m, size_t max_bus_lines = 40);

struct DiffStats {
  uint64_t datagrams = 0, mismatches = 0, skipped_empty = 0;
  double reference_seconds = 0, device_seconds = 0;
  uint64_t device_cycles = 0;
  std::array<uint64_t, 4> kinds{};                                           // by the reference's kind
  std::array<uint64_t, static_cast<size_t>(ipbus::Fault::kCount)> faults{};  // by the reference's fault
};

class DiffRunner {
 public:
  // Both boards get `refused`; they must have been built with the same fill seed.
  DiffRunner(std::unique_ptr<Side> reference, std::unique_ptr<Side> device, const std::set<uint32_t>& refused = {});
  // Both sides handle the datagram; nullopt when they agree in everything. After a mismatch both
  // targets are reset and the device's board is made the reference's again, so that one fault
  // does not make every later datagram differ.
  std::optional<Mismatch> run(const std::vector<uint8_t>& datagram);
  // libFuzzer-style: raw bytes as one datagram. An empty input cannot travel on AXI4-Stream and
  // is skipped (counted).
  std::optional<Mismatch> run_one(const uint8_t* data, size_t size);
  // Both targets reset between datagrams, as a board's reset button (their boards keep their contents).
  void reset_targets();

  Side& reference() { return *reference_; }
  Side& device() { return *device_; }
  uint16_t next_expected_id() const;  // the reference's, when it is a CppSide (else 1)
  const DiffStats& stats() const { return stats_; }
  // The answers to the last datagram run.
  const Answer& last_reference() const { return last_reference_; }
  const Answer& last_device() const { return last_device_; }

 private:
  std::unique_ptr<Side> reference_, device_;
  DiffStats stats_;
  Answer last_reference_, last_device_;
};

// A refused set for a fuzz campaign: a few words of the RAM and of readable-and-writable registers
// of both windows, drawn from `seed`.
std::set<uint32_t> random_refused_words(uint64_t seed, size_t n_ram = 6, size_t n_controller = 6, size_t n_emulator = 3);

// Shrinks a datagram that mismatches on fresh sides: drops words, then trailing bytes, while the
// mismatch stays. make_runner(attempt) builds a fresh pair, its device timing drawn from attempt;
// a candidate counts as failing when any of `attempts` pairs mismatches. A control packet's id is
// made 0 first when the fresh pair would drop it as out of sequence. Returns the datagram
// unchanged when it does not mismatch on fresh pairs (it needed earlier state).
std::vector<uint8_t> minimise(const std::vector<uint8_t>& datagram, const std::function<std::unique_ptr<DiffRunner>(uint64_t)>& make_runner,
                              uint64_t attempts = 4);

}  // namespace mxtb::testbench::ipbus_diff
