// IPbus 2.0 (the register protocol of CERN's uHAL suite and of many FPGA boards) as words on
// the wire: packet and transaction headers, the three packet types, byte order. Both ends of
// mxtb's socket bridge use this one codec: the board-side target (protocol/ipbus/target.h, which
// the emulator answers with) and the host's fabric client (host/fabric/client.h). docs/protocol.md
// describes the protocol as built.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::protocol::ipbus {

inline constexpr uint32_t kProtocolVersion = 2;
// What an Ethernet MTU of 1500 bytes leaves for an IPbus packet after the IP and UDP headers.
inline constexpr uint32_t kMtuBytes = 1472;
inline constexpr uint32_t kMtuWords = kMtuBytes / 4;
inline constexpr uint32_t kMaxTransactionWords = 255;  // 8-bit word count
inline constexpr uint32_t kStatusWords = 16;           // status request and reply

enum class PacketType : uint8_t { Control = 0, Status = 1, Resend = 2 };

enum class TxType : uint8_t {
  Read = 0,
  Write = 1,
  NonIncRead = 2,
  NonIncWrite = 3,
  RmwBits = 4,  // new = (old & and_term) | or_term; replies the old value
  RmwSum = 5,   // new = old + addend; replies the old value
};

enum class InfoCode : uint8_t {
  Success = 0x0,
  BadHeader = 0x1,
  ReadError = 0x4,
  WriteError = 0x5,
  ReadTimeout = 0x6,
  WriteTimeout = 0x7,
  Request = 0xF,
};

const char* to_string(TxType t);
const char* to_string(InfoCode c);
bool valid_tx_type(uint32_t raw);

// Byte order of a packet on the wire. The header's byte-order qualifier nibble (0xF) tells which:
// x86 clients send little-endian; the reply goes back in the request's order.
enum class ByteOrder { Big, Little };

struct PacketHeader {
  PacketType type = PacketType::Control;
  uint16_t id = 0;  // 0: never sequence-checked
};
uint32_t encode(const PacketHeader& h);
// nullopt: wrong version, reserved bits set, bad qualifier or unknown type (why says which).
std::optional<PacketHeader> decode_packet_header(uint32_t word, std::string* why);

struct TxHeader {
  uint16_t id = 0;  // 12 bits
  uint8_t words = 0;
  TxType type = TxType::Read;
  InfoCode info = InfoCode::Request;
};
uint32_t encode(const TxHeader& h);
// nullopt when the version nibble is not 2 or the type is unknown.
std::optional<TxHeader> decode_tx_header(uint32_t word);

// Words of a request body and of its reply body after the transaction header.
uint32_t request_body_words(TxType t, uint32_t words);
uint32_t reply_body_words(TxType t, uint32_t words);

// Whether every transaction of a control packet (`words`: host order, its packet header first)
// is a well-formed request addressing only [base, base + count). False for a packet with no
// transaction or one a target would answer with an error for its form (an unknown type, an info
// code other than Request, a transaction past the packet's end).
bool transactions_within(const std::vector<uint32_t>& words, uint32_t base, uint32_t count);

// The transactions a control reply answers that reached the bus (success or a bus error): what
// a target counts as `transactions` (TargetStats). 0 for anything but a control reply.
uint32_t executed_transactions(const std::vector<uint8_t>& reply);

// Raw datagram bytes <-> 32-bit words. Detects the order from the first word; nullopt when the
// length is not a whole number of words or the first word is no IPbus 2.0 header in either order.
struct Words {
  std::vector<uint32_t> words;
  ByteOrder order = ByteOrder::Big;
};
std::optional<Words> to_words(const uint8_t* data, size_t size, std::string* why);
std::vector<uint8_t> to_bytes(const std::vector<uint32_t>& words, ByteOrder order);

// The next control packet id after `id`: ids run 1..0xFFFF and wrap to 1 (0 is never used by a
// sequence-checked stream).
inline uint16_t next_packet_id(uint16_t id) { return id == 0xFFFF ? 1 : static_cast<uint16_t>(id + 1); }

// The status reply (always big-endian on the wire): what a client needs to recover from loss.
struct StatusReply {
  uint32_t mtu_bytes = 0;
  uint32_t n_buffers = 0;
  uint16_t next_expected_id = 0;
  std::vector<uint32_t> received_headers;  // last 4 control packet headers received, newest first
  std::vector<uint32_t> sent_headers;      // last 4 control packet headers replied, newest first
};
std::vector<uint32_t> encode_status_reply(const StatusReply& s, const std::vector<uint8_t>& history);
std::optional<StatusReply> decode_status_reply(const std::vector<uint32_t>& words);

}  // namespace mxtb::protocol::ipbus
