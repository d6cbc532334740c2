#include "protocol/ipbus/target.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace mxtb::protocol::ipbus {

const char* to_string(Fault f) {
  switch (f) {
    case Fault::Oversized: return "oversized";
    case Fault::Truncated: return "truncated";
    case Fault::BadPacketHeader: return "bad packet header";
    case Fault::BadStatus: return "bad status request";
    case Fault::BadResend: return "bad resend request";
    case Fault::OutOfSequence: return "out of sequence";
    case Fault::BadTransaction: return "bad transaction";
    case Fault::BusError: return "bus error";
    case Fault::kCount: break;
  }
  return "?";
}

uint64_t TargetStats::dropped() const {
  uint64_t n = 0;
  for (size_t i = 0; i < faults.size(); ++i)
    if (i != static_cast<size_t>(Fault::BadTransaction) && i != static_cast<size_t>(Fault::BusError)) n += faults[i];
  return n;
}

namespace {
// Traffic-history codes (status reply words 4-7), one per datagram.
constexpr uint8_t kHistControl = 0x01, kHistStatus = 0x02, kHistResend = 0x03, kHistDropped = 0x0F;
constexpr size_t kHeaderHistory = 4, kTrafficHistory = 16;
}  // namespace

void Target::note_history(uint8_t kind) {
  history_.push_front(kind);
  if (history_.size() > kTrafficHistory) history_.pop_back();
}

std::optional<std::vector<uint8_t>> Target::drop(Fault f, const std::string& what) {
  ++stats_.faults[static_cast<size_t>(f)];
  note_history(kHistDropped);
  if (on_fault_) on_fault_(f, what);
  return std::nullopt;
}

std::optional<std::vector<uint8_t>> Target::handle(const uint8_t* data, size_t size) {
  Intake in = accept(data, size);
  if (!in.control) return std::move(in.reply);
  TargetStats counts;
  std::vector<uint8_t> reply = execute(*in.control, counts);
  finish(*in.control, reply, counts);
  return reply;
}

Target::Intake Target::accept(const uint8_t* data, size_t size) {
  ++stats_.datagrams;
  if (size > kMtuBytes) return {drop(Fault::Oversized, fmt::format("{} bytes, MTU is {}", size, kMtuBytes)), {}};
  std::string why;
  auto in = to_words(data, size, &why);
  if (!in) {
    bool header = size >= 4 && size % 4 == 0;
    return {drop(header ? Fault::BadPacketHeader : Fault::Truncated, fmt::format("{} bytes: {}", size, why)), {}};
  }
  auto h = decode_packet_header(in->words[0], &why);
  if (!h) return {drop(Fault::BadPacketHeader, fmt::format("header {:#010x}: {}", in->words[0], why)), {}};

  switch (h->type) {
    case PacketType::Status: {
      if (in->words.size() != kStatusWords)
        return {drop(Fault::BadStatus, fmt::format("status request of {} words, want {}", in->words.size(), kStatusWords)), {}};
      ++stats_.status;
      StatusReply s{kMtuBytes, n_buffers_, next_id_, {received_.begin(), received_.end()}, {sent_.begin(), sent_.end()}};
      auto reply = encode_status_reply(s, {history_.begin(), history_.end()});
      note_history(kHistStatus);
      return {to_bytes(reply, ByteOrder::Big), {}};  // status replies are always big-endian
    }
    case PacketType::Resend: {
      if (in->words.size() != 1)
        return {drop(Fault::BadResend, fmt::format("resend request of {} words, want 1", in->words.size())), {}};
      for (auto it = replies_.rbegin(); it != replies_.rend(); ++it)
        if (it->first == h->id) {
          ++stats_.resends_served;
          note_history(kHistResend);
          return {it->second, {}};
        }
      // Not an error: the client timed out before the packet finished; the reply is on its way.
      if (h->id != 0 && std::find(running_.begin(), running_.end(), h->id) != running_.end()) {
        ++stats_.resends_while_running;
        note_history(kHistResend);
        return {};
      }
      return {drop(Fault::BadResend, fmt::format("resend of packet id {} which has no stored reply", h->id)), {}};
    }
    case PacketType::Control: break;
  }

  if (h->id != 0 && h->id != next_id_)
    return {drop(Fault::OutOfSequence, fmt::format("control packet id {}, expected {}", h->id, next_id_)), {}};
  ++stats_.control;
  received_.push_front(in->words[0]);
  if (received_.size() > kHeaderHistory) received_.pop_back();
  note_history(kHistControl);
  if (h->id != 0) {
    running_.push_back(h->id);
    next_id_ = next_packet_id(h->id);
  }
  return {{}, AcceptedPacket{std::move(in->words), in->order, h->id}};
}

std::vector<uint8_t> Target::execute(const AcceptedPacket& p, TargetStats& counts) {
  return to_bytes(run_control(p.words, p.id, counts), p.order);
}

void Target::finish(const AcceptedPacket& p, const std::vector<uint8_t>& reply, const TargetStats& counts) {
  if (p.id != 0 && (running_.empty() || running_.front() != p.id))
    throw std::logic_error(fmt::format("ipbus::Target::finish: packet {} is not the oldest one running", p.id));
  stats_.transactions += counts.transactions;
  for (size_t i = 0; i < stats_.faults.size(); ++i) stats_.faults[i] += counts.faults[i];
  sent_.push_front(p.words[0]);
  if (sent_.size() > kHeaderHistory) sent_.pop_back();
  if (p.id != 0) {
    running_.pop_front();
    replies_.emplace_back(p.id, reply);
    if (replies_.size() > n_buffers_) replies_.pop_front();
  }
}

// Executes transactions in order. The first one in error gets its error info code in the reply
// and ends the packet: later transactions are not executed. The reply never passes the MTU.
std::vector<uint32_t> Target::run_control(const std::vector<uint32_t>& in, uint16_t id, TargetStats& counts) {
  std::vector<uint32_t> out{in[0]};
  size_t pos = 1;
  auto fault = [&](Fault f, uint32_t header_word, InfoCode code, const std::string& what) {
    ++counts.faults[static_cast<size_t>(f)];
    if (on_fault_) on_fault_(f, fmt::format("packet id {}, transaction {:#010x}: {}", id, header_word, what));
    out.push_back((header_word & ~0xFu) | static_cast<uint32_t>(code));
  };
  while (pos < in.size()) {
    uint32_t hw = in[pos];
    auto th = decode_tx_header(hw);
    if (!th) {
      fault(Fault::BadTransaction, hw, InfoCode::BadHeader, (hw >> 28) != kProtocolVersion ? "version is not 2" : "unknown transaction type");
      return out;
    }
    if (th->info != InfoCode::Request) {
      fault(Fault::BadTransaction, hw, InfoCode::BadHeader, fmt::format("info code {:#x} in a request", static_cast<int>(th->info)));
      return out;
    }
    bool rmw = th->type == TxType::RmwBits || th->type == TxType::RmwSum;
    if (rmw && th->words != 1) {
      fault(Fault::BadTransaction, hw, InfoCode::BadHeader, fmt::format("{} of {} words (must be 1)", to_string(th->type), th->words));
      return out;
    }
    uint32_t body = request_body_words(th->type, th->words);
    if (pos + 1 + body > in.size()) {
      fault(Fault::BadTransaction, hw, InfoCode::BadHeader,
            fmt::format("{} needs {} body words, the packet has {}", to_string(th->type), body, in.size() - pos - 1));
      return out;
    }
    // While request words follow, keep one reply word free: the next transaction answers at
    // least its header (success or error), and a reply must never pass the MTU.
    bool more = pos + 1 + body < in.size();
    uint32_t reply_words = 1 + reply_body_words(th->type, th->words) + (more ? 1 : 0);
    if (out.size() + reply_words > kMtuWords) {
      fault(Fault::BadTransaction, hw, InfoCode::BadHeader, fmt::format("the reply would pass the MTU of {} bytes", kMtuBytes));
      return out;
    }
    ++counts.transactions;
    BusPort::Access a{th->type, in[pos + 1], th->words, in.data() + pos + 2};
    std::vector<uint32_t> data;
    InfoCode code = port_.execute(a, data);
    if (code != InfoCode::Success) {
      TxHeader eh = *th;
      eh.info = code;
      eh.words = 0;
      ++counts.faults[static_cast<size_t>(Fault::BusError)];
      if (on_fault_)
        on_fault_(Fault::BusError, fmt::format("packet id {}: {} of {} words at {:#010x}: {}", id, to_string(th->type), th->words,
                                               a.addr, to_string(code)));
      out.push_back(encode(eh));
      return out;
    }
    TxHeader rh = *th;
    rh.info = InfoCode::Success;
    out.push_back(encode(rh));
    out.insert(out.end(), data.begin(), data.end());
    pos += 1 + body;
  }
  return out;
}

}  // namespace mxtb::protocol::ipbus
