#include "protocol/ipbus/codec.h"

#include <algorithm>

namespace mxtb::protocol::ipbus {

const char* to_string(TxType t) {
  switch (t) {
    case TxType::Read: return "read";
    case TxType::Write: return "write";
    case TxType::NonIncRead: return "non-incrementing read";
    case TxType::NonIncWrite: return "non-incrementing write";
    case TxType::RmwBits: return "read-modify-write bits";
    case TxType::RmwSum: return "read-modify-write sum";
  }
  return "?";
}

const char* to_string(InfoCode c) {
  switch (c) {
    case InfoCode::Success: return "success";
    case InfoCode::BadHeader: return "bad header";
    case InfoCode::ReadError: return "bus error on read";
    case InfoCode::WriteError: return "bus error on write";
    case InfoCode::ReadTimeout: return "bus timeout on read";
    case InfoCode::WriteTimeout: return "bus timeout on write";
    case InfoCode::Request: return "request";
  }
  return "reserved info code";
}

bool valid_tx_type(uint32_t raw) { return raw <= static_cast<uint32_t>(TxType::RmwSum); }

uint32_t encode(const PacketHeader& h) {
  return (kProtocolVersion << 28) | (uint32_t{h.id} << 8) | 0xF0u | static_cast<uint32_t>(h.type);
}

std::optional<PacketHeader> decode_packet_header(uint32_t w, std::string* why) {
  auto bad = [&](const char* what) -> std::optional<PacketHeader> {
    if (why) *why = what;
    return std::nullopt;
  };
  if ((w >> 28) != kProtocolVersion) return bad("protocol version is not 2");
  if (((w >> 24) & 0xF) != 0) return bad("reserved header bits set");
  if (((w >> 4) & 0xF) != 0xF) return bad("byte-order qualifier is not 0xF");
  uint32_t type = w & 0xF;
  if (type > static_cast<uint32_t>(PacketType::Resend)) return bad("unknown packet type");
  return PacketHeader{static_cast<PacketType>(type), static_cast<uint16_t>(w >> 8)};
}

uint32_t encode(const TxHeader& h) {
  return (kProtocolVersion << 28) | ((uint32_t{h.id} & 0xFFF) << 16) | (uint32_t{h.words} << 8) |
         (static_cast<uint32_t>(h.type) << 4) | static_cast<uint32_t>(h.info);
}

std::optional<TxHeader> decode_tx_header(uint32_t w) {
  if ((w >> 28) != kProtocolVersion) return std::nullopt;
  uint32_t type = (w >> 4) & 0xF;
  if (!valid_tx_type(type)) return std::nullopt;
  return TxHeader{static_cast<uint16_t>((w >> 16) & 0xFFF), static_cast<uint8_t>(w >> 8), static_cast<TxType>(type),
                  static_cast<InfoCode>(w & 0xF)};
}

uint32_t request_body_words(TxType t, uint32_t words) {
  switch (t) {
    case TxType::Read:
    case TxType::NonIncRead: return 1;
    case TxType::Write:
    case TxType::NonIncWrite: return 1 + words;
    case TxType::RmwBits: return 3;
    case TxType::RmwSum: return 2;
  }
  return 1;
}

bool transactions_within(const std::vector<uint32_t>& words, uint32_t base, uint32_t count) {
  if (words.size() < 3) return false;
  for (size_t pos = 1; pos < words.size();) {
    auto th = decode_tx_header(words[pos]);
    if (!th || th->info != InfoCode::Request || pos + 1 >= words.size()) return false;
    const uint32_t body = request_body_words(th->type, th->words);
    if (pos + 1 + body > words.size()) return false;
    const uint64_t addr = words[pos + 1];
    const bool incrementing = th->type == TxType::Read || th->type == TxType::Write;
    const uint64_t span = incrementing ? std::max<uint32_t>(th->words, 1) : 1;
    if (addr < base || addr + span > uint64_t{base} + count) return false;
    pos += 1 + body;
  }
  return true;
}

uint32_t reply_body_words(TxType t, uint32_t words) {
  switch (t) {
    case TxType::Read:
    case TxType::NonIncRead: return words;
    case TxType::Write:
    case TxType::NonIncWrite: return 0;
    case TxType::RmwBits:
    case TxType::RmwSum: return 1;
  }
  return 0;
}

namespace {

uint32_t load(const uint8_t* p, ByteOrder o) {
  if (o == ByteOrder::Big) return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
  return uint32_t{p[3]} << 24 | uint32_t{p[2]} << 16 | uint32_t{p[1]} << 8 | p[0];
}

bool looks_like_header(uint32_t w) { return (w >> 28) == kProtocolVersion && ((w >> 4) & 0xF) == 0xF; }

}  // namespace

std::optional<Words> to_words(const uint8_t* data, size_t size, std::string* why) {
  if (size < 4 || size % 4 != 0) {
    if (why) *why = size < 4 ? "shorter than one header word" : "length is not a whole number of 32-bit words";
    return std::nullopt;
  }
  Words out;
  if (looks_like_header(load(data, ByteOrder::Big))) out.order = ByteOrder::Big;
  else if (looks_like_header(load(data, ByteOrder::Little))) out.order = ByteOrder::Little;
  else {
    if (why) *why = "first word is no IPbus 2.0 packet header in either byte order";
    return std::nullopt;
  }
  out.words.reserve(size / 4);
  for (size_t i = 0; i < size; i += 4) out.words.push_back(load(data + i, out.order));
  return out;
}

std::vector<uint8_t> to_bytes(const std::vector<uint32_t>& words, ByteOrder order) {
  std::vector<uint8_t> out(words.size() * 4);
  for (size_t i = 0; i < words.size(); ++i) {
    uint32_t w = words[i];
    for (int b = 0; b < 4; ++b) {
      int shift = order == ByteOrder::Big ? 24 - 8 * b : 8 * b;
      out[i * 4 + static_cast<size_t>(b)] = static_cast<uint8_t>(w >> shift);
    }
  }
  return out;
}

// Status reply: header, MTU, response buffers, next expected control header, 4 words of traffic
// history (one byte per datagram, newest first), 4 received and 4 sent control headers.
std::vector<uint32_t> encode_status_reply(const StatusReply& s, const std::vector<uint8_t>& history) {
  std::vector<uint32_t> w(kStatusWords, 0);
  w[0] = encode(PacketHeader{PacketType::Status, 0});
  w[1] = s.mtu_bytes;
  w[2] = s.n_buffers;
  w[3] = encode(PacketHeader{PacketType::Control, s.next_expected_id});
  for (size_t i = 0; i < history.size() && i < 16; ++i) w[4 + i / 4] |= uint32_t{history[i]} << (24 - 8 * (i % 4));
  for (size_t i = 0; i < 4; ++i) {
    if (i < s.received_headers.size()) w[8 + i] = s.received_headers[i];
    if (i < s.sent_headers.size()) w[12 + i] = s.sent_headers[i];
  }
  return w;
}

std::optional<StatusReply> decode_status_reply(const std::vector<uint32_t>& w) {
  if (w.size() != kStatusWords) return std::nullopt;
  auto h = decode_packet_header(w[0], nullptr);
  auto next = decode_packet_header(w[3], nullptr);
  if (!h || h->type != PacketType::Status || !next) return std::nullopt;
  StatusReply s;
  s.mtu_bytes = w[1];
  s.n_buffers = w[2];
  s.next_expected_id = next->id;
  s.received_headers.assign(w.begin() + 8, w.begin() + 12);
  s.sent_headers.assign(w.begin() + 12, w.begin() + 16);
  return s;
}

uint32_t executed_transactions(const std::vector<uint8_t>& reply) {
  auto w = to_words(reply.data(), reply.size(), nullptr);
  if (!w || w->words.empty()) return 0;
  const auto& words = w->words;
  auto header = decode_packet_header(words[0], nullptr);
  if (!header || header->type != PacketType::Control) return 0;
  uint32_t n = 0;
  for (size_t pos = 1; pos < words.size();) {
    auto th = decode_tx_header(words[pos]);
    if (!th || th->info == InfoCode::BadHeader) break;  // refused before the bus
    ++n;
    if (th->info != InfoCode::Success) break;  // a bus error ends the packet
    pos += 1 + reply_body_words(th->type, th->words);
  }
  return n;
}

}  // namespace mxtb::protocol::ipbus
