#include "host/fabric/client.h"

#include <boost/asio.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <optional>

namespace mxtb::host::fabric {

using namespace protocol::ipbus;

namespace asio = boost::asio;
using asio::ip::udp;

uint32_t Pending::value() const {
  if (!s_->done || s_->data.empty()) throw std::logic_error("IPbus: value() of a transaction that was not dispatched");
  return s_->data[0];
}
const std::vector<uint32_t>& Pending::values() const {
  if (!s_->done) throw std::logic_error("IPbus: values() of a transaction that was not dispatched");
  return s_->data;
}
bool Pending::ready() const { return s_->done; }

std::pair<std::string, uint16_t> parse_target(const std::string& target) {
  std::string t = target;
  if (t.rfind("udp://", 0) == 0) t = t.substr(6);
  else if (t.find("://") != std::string::npos)
    throw std::invalid_argument(fmt::format("target '{}': only udp:// is supported", target));
  auto colon = t.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == t.size())
    throw std::invalid_argument(fmt::format("target '{}': want udp://HOST:PORT", target));
  std::string port = t.substr(colon + 1);
  if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 || std::stoul(port) == 0 ||
      std::stoul(port) > 65535)
    throw std::invalid_argument(fmt::format("target '{}': port '{}' is not 1..65535", target, port));
  return {t.substr(0, colon), static_cast<uint16_t>(std::stoul(port))};
}

namespace {

struct Tx {
  TxHeader header;
  uint32_t addr;
  uint32_t total_words;        // as queued: split into transactions of at most 255 words at dispatch
  std::vector<uint32_t> body;  // after the address
  std::shared_ptr<void> sink;  // Pending state, or null for writes
  std::vector<uint32_t>* out;  // where the reply body goes
  uint32_t request_words() const { return 2 + static_cast<uint32_t>(body.size()); }
  uint32_t reply_words() const { return 1 + reply_body_words(header.type, header.words); }
};

struct Packet {
  uint16_t id;
  std::vector<size_t> txs;
  std::vector<uint8_t> bytes;
  bool answered = false;
  std::chrono::steady_clock::time_point sent;
};

bool has_packet_id(const std::vector<uint32_t>& headers, uint16_t id) {
  return std::any_of(headers.begin(), headers.end(), [&](uint32_t w) {
    auto h = decode_packet_header(w, nullptr);
    return h && h->id == id;
  });
}

}  // namespace

struct Client::Impl {
  asio::io_context io;
  udp::socket sock{io};
  udp::endpoint remote;
  uint16_t next_id = 1;
  // An exchange gave up (TimeoutError): packets it numbered may never have reached the target,
  // which then still expects the first of them. The next exchange takes its first id from the
  // target's status instead of going on from next_id.
  bool out_of_step = false;
  uint16_t next_tx_id = 0;
  uint32_t window = 1;
  std::vector<Tx> queue;
  std::vector<std::shared_ptr<Pending::State>> sinks;
  std::vector<uint8_t> rx = std::vector<uint8_t>(65536);

  // One datagram from the target within `timeout`, or nullopt.
  std::optional<std::vector<uint8_t>> receive(std::chrono::milliseconds timeout) {
    std::optional<std::vector<uint8_t>> got;
    udp::endpoint from;
    sock.async_receive_from(asio::buffer(rx), from, [&](const boost::system::error_code& ec, size_t n) {
      if (!ec) got = std::vector<uint8_t>(rx.begin(), rx.begin() + static_cast<long>(n));
    });
    io.restart();
    io.run_for(timeout);
    if (!io.stopped()) {
      sock.cancel();
      io.restart();
      io.run();
    }
    return got;
  }

  void send(const std::vector<uint8_t>& bytes) { sock.send_to(asio::buffer(bytes), remote); }

  // One dispatch(): the queued requests packed into packets, sent in a window, their replies
  // taken in any order, lost ones recovered through status and resend (docs/protocol.md).
  struct Exchange {
    Exchange(Client& client, const std::vector<Tx>& queued);
    void run(std::chrono::milliseconds timeout);  // until every packet is answered
    void deliver();                               // the words to their Pending, the first error thrown

   private:
    void pack(const std::vector<Tx>& queued);
    bool take_reply(const Packet& p, const std::vector<uint32_t>& w);  // false: not a valid answer to p
    void take(const std::vector<uint8_t>& datagram);
    void recover(std::chrono::milliseconds timeout);

    Client& c;
    std::vector<Tx> txs;
    std::vector<Packet> packets;
    std::vector<std::vector<uint32_t>> tx_data;
    std::optional<TransactionError> first_error;
    size_t first_error_tx = SIZE_MAX;
    size_t next_to_send = 0, answered = 0;
    std::deque<size_t> in_flight;
    int rounds = 0;
  };
};

Client::Client(const std::string& target, ClientOptions opts)
    : impl_(std::make_unique<Impl>()), target_(target), opts_(std::move(opts)) {
  auto [host, port] = parse_target(target);
  udp::resolver resolver(impl_->io);
  boost::system::error_code ec;
  auto results = resolver.resolve(udp::v4(), host, std::to_string(port), ec);
  if (ec || results.empty()) throw std::invalid_argument(fmt::format("target '{}': cannot resolve '{}': {}", target, host, ec.message()));
  impl_->remote = *results.begin();
  impl_->sock.open(udp::v4());
  StatusReply s = status();
  impl_->next_id = s.next_expected_id == 0 ? 1 : s.next_expected_id;
  impl_->window = std::max<uint32_t>(1, std::min(opts_.max_in_flight, s.n_buffers));
}

Client::~Client() = default;

StatusReply Client::status() {
  std::vector<uint32_t> req(kStatusWords, 0);
  req[0] = encode(PacketHeader{PacketType::Status, 0});
  auto bytes = to_bytes(req, ByteOrder::Big);
  const auto start = std::chrono::steady_clock::now();
  bool alive = false;
  for (int attempt = 0;; ++attempt) {
    if (attempt > opts_.retries) {
      alive = opts_.target_alive && opts_.target_alive();
      if (!alive || std::chrono::steady_clock::now() - start > opts_.busy_limit) break;
      ++stats_.silent_waits;
      attempt = 0;
    }
    impl_->send(bytes);
    ++stats_.status_requests;
    auto deadline = std::chrono::steady_clock::now() + opts_.timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      auto got = impl_->receive(std::max(left, std::chrono::milliseconds{1}));
      if (!got) break;
      auto w = to_words(got->data(), got->size(), nullptr);
      if (w && w->words.size() == kStatusWords) {
        if (auto s = decode_status_reply(w->words)) return *s;
      }
      ++stats_.stray_replies;  // a late control reply: not what we wait for
    }
    ++stats_.timeouts;
  }
  if (alive)
    throw TimeoutError(fmt::format("no IPbus 2.0 target answers a status request at {} for {:.1f} s although its process is alive "
                                   "(limit {} ms)", target_,
                                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                                   opts_.busy_limit.count()));
  throw TimeoutError(fmt::format("no IPbus 2.0 target answers a status request at {} ({} attempts of {} ms)", target_,
                                 opts_.retries + 1, opts_.timeout.count()));
}

Pending Client::queue_read(uint32_t addr, uint32_t words, bool incrementing) {
  Pending p;
  impl_->queue.push_back(Tx{TxHeader{0, 0, incrementing ? TxType::Read : TxType::NonIncRead, InfoCode::Request}, addr, words,
                            {}, p.s_, &p.s_->data});
  return p;
}

void Client::queue_write(uint32_t addr, std::vector<uint32_t> data, bool incrementing) {
  uint32_t words = static_cast<uint32_t>(data.size());
  impl_->queue.push_back(Tx{TxHeader{0, 0, incrementing ? TxType::Write : TxType::NonIncWrite, InfoCode::Request}, addr,
                            words, std::move(data), nullptr, nullptr});
}

Pending Client::queue_rmw_bits(uint32_t addr, uint32_t and_term, uint32_t or_term) {
  Pending p;
  impl_->queue.push_back(Tx{TxHeader{0, 1, TxType::RmwBits, InfoCode::Request}, addr, 1, {and_term, or_term}, p.s_, &p.s_->data});
  return p;
}

Pending Client::queue_rmw_sum(uint32_t addr, uint32_t addend) {
  Pending p;
  impl_->queue.push_back(Tx{TxHeader{0, 1, TxType::RmwSum, InfoCode::Request}, addr, 1, {addend}, p.s_, &p.s_->data});
  return p;
}

void Client::dispatch(std::chrono::milliseconds timeout) {
  if (timeout.count() == 0) timeout = opts_.timeout;
  std::vector<Tx> queued = std::move(impl_->queue);
  impl_->queue.clear();
  if (queued.empty()) return;
  if (opts_.sequenced && impl_->out_of_step) {
    StatusReply s = status();  // throws while the target still does not answer: out of step still
    impl_->next_id = s.next_expected_id == 0 ? 1 : s.next_expected_id;
    impl_->out_of_step = false;
  }
  Impl::Exchange x(*this, queued);
  try {
    x.run(timeout);
  } catch (const TimeoutError&) {
    impl_->out_of_step = true;
    throw;
  }
  x.deliver();
}

Client::Impl::Exchange::Exchange(Client& client, const std::vector<Tx>& queued) : c(client) {
  pack(queued);
  for (auto& p : packets) {
    p.id = c.opts_.sequenced ? c.impl_->next_id : 0;
    if (c.opts_.sequenced) c.impl_->next_id = next_packet_id(c.impl_->next_id);
    std::vector<uint32_t> w{encode(PacketHeader{PacketType::Control, p.id})};
    for (size_t i : p.txs) {
      w.push_back(encode(txs[i].header));
      w.push_back(txs[i].addr);
      w.insert(w.end(), txs[i].body.begin(), txs[i].body.end());
    }
    p.bytes = to_bytes(w, c.opts_.order);
  }
  tx_data.resize(txs.size());
}

// Splits each request into transactions that fill the current packet: a packet ends where its
// request or its reply would pass the MTU, so a 1024-word read takes 3 packets, not 5.
void Client::Impl::Exchange::pack(const std::vector<Tx>& queued) {
  uint32_t req_words = kMtuWords, rep_words = kMtuWords;  // no packet yet
  auto new_packet = [&] {
    packets.push_back(Packet{0, {}, {}, false, {}});
    req_words = rep_words = 1;
  };
  for (const Tx& q : queued) {
    const bool write = q.header.type == TxType::Write || q.header.type == TxType::NonIncWrite;
    const bool inc = q.header.type == TxType::Read || q.header.type == TxType::Write;
    const bool rmw = q.header.type == TxType::RmwBits || q.header.type == TxType::RmwSum;
    uint32_t done = 0;
    for (;;) {
      // Room for one more transaction header in both directions, and how many words it may carry.
      uint32_t body_req = rmw ? static_cast<uint32_t>(q.body.size()) : 0;
      bool header_fits = req_words + 2 + body_req <= kMtuWords && rep_words + 1 + (rmw ? 1 : 0) <= kMtuWords;
      uint32_t room = !header_fits ? 0 : write ? kMtuWords - req_words - 2 : kMtuWords - rep_words - 1;
      uint32_t left = q.total_words - done;
      uint32_t n = rmw ? 1 : std::min({left, kMaxTransactionWords, room});
      if (!header_fits || (left > 0 && n == 0)) {
        new_packet();
        continue;
      }
      Tx t = q;
      t.header.id = static_cast<uint16_t>(c.impl_->next_tx_id++ & 0xFFF);
      t.header.words = static_cast<uint8_t>(n);
      t.addr = inc ? q.addr + done : q.addr;
      if (write) t.body.assign(q.body.begin() + done, q.body.begin() + done + n);
      txs.push_back(std::move(t));
      packets.back().txs.push_back(txs.size() - 1);
      req_words += txs.back().request_words();
      rep_words += txs.back().reply_words();
      done += n;
      if (done >= q.total_words) break;
    }
  }
}

bool Client::Impl::Exchange::take_reply(const Packet& p, const std::vector<uint32_t>& w) {
  size_t pos = 1;
  for (size_t i : p.txs) {
    Tx& t = txs[i];
    if (pos >= w.size()) return false;
    auto h = decode_tx_header(w[pos]);
    if (!h || h->id != t.header.id || h->type != t.header.type) return false;
    if (h->info != InfoCode::Success) {
      if (i < first_error_tx) {
        first_error_tx = i;
        const std::string where = c.opts_.describe ? c.opts_.describe(t.addr) : fmt::format("{:#010x}", t.addr);
        first_error.emplace(fmt::format("IPbus {} of {} word(s) at {}: {} (target {})", to_string(t.header.type), t.header.words,
                                        where, to_string(h->info), c.target_),
                            t.addr, h->info);
      }
      return true;  // the target stopped at this transaction
    }
    uint32_t n = reply_body_words(t.header.type, t.header.words);
    if (pos + 1 + n > w.size()) return false;
    // Replies may arrive in any order: keep each transaction's words apart until all are in.
    tx_data[i].assign(w.begin() + static_cast<long>(pos) + 1, w.begin() + static_cast<long>(pos + 1 + n));
    pos += 1 + n;
  }
  return pos == w.size();
}

void Client::Impl::Exchange::run(std::chrono::milliseconds timeout) {
  while (answered < packets.size()) {
    // Unsequenced replies all carry id 0: one packet in flight, so that a reply names its packet.
    while (next_to_send < packets.size() && in_flight.size() < (c.opts_.sequenced ? c.impl_->window : 1u)) {
      c.impl_->send(packets[next_to_send].bytes);
      packets[next_to_send].sent = std::chrono::steady_clock::now();
      ++c.stats_.packets_sent;
      c.stats_.bytes_sent += packets[next_to_send].bytes.size();
      in_flight.push_back(next_to_send++);
    }
    if (auto got = c.impl_->receive(timeout)) take(*got);
    else recover(timeout);
  }
}

void Client::Impl::Exchange::take(const std::vector<uint8_t>& got) {
  auto w = to_words(got.data(), got.size(), nullptr);
  std::optional<PacketHeader> h;
  if (w) h = decode_packet_header(w->words[0], nullptr);
  auto it = h && h->type == PacketType::Control
                ? std::find_if(in_flight.begin(), in_flight.end(), [&](size_t k) { return packets[k].id == h->id; })
                : in_flight.end();
  if (it == in_flight.end()) {
    ++c.stats_.stray_replies;  // a duplicate, or a reply we already took
    return;
  }
  if (!take_reply(packets[*it], w->words))
    throw ProtocolError(fmt::format("IPbus target {} sent a malformed reply to packet {}", c.target_, packets[*it].id));
  ++c.stats_.replies;
  c.stats_.bytes_received += got.size();
  c.stats_.worst_answer_ms = std::max(
      c.stats_.worst_answer_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - packets[*it].sent).count());
  packets[*it].answered = true;
  ++answered;
  in_flight.erase(it);
  rounds = 0;
}

// Timeout: ask which requests arrived. Those before the next expected id were executed and their
// replies lost: ask for the stored reply. The rest are sent again, in order.
void Client::Impl::Exchange::recover(std::chrono::milliseconds timeout) {
  ++c.stats_.timeouts;
  if (std::getenv("MXTB_IPBUS_DEBUG"))
    fmt::print(stderr, "ipbus debug: timeout on packet {} (first tx {} at {:#x}, timeout {} ms)\n", packets[in_flight.front()].id,
               to_string(txs[packets[in_flight.front()].txs[0]].header.type), txs[packets[in_flight.front()].txs[0]].addr,
               timeout.count());
  if (!c.opts_.sequenced)
    throw TimeoutError(fmt::format("IPbus target {}: no reply to an unsequenced packet within {} ms (it may or may not have "
                                   "executed)", c.target_, timeout.count()));
  if (++rounds > c.opts_.retries)
    throw TimeoutError(fmt::format("IPbus target {}: no reply to packet {} after {} attempts of {} ms", c.target_,
                                   packets[in_flight.front()].id, c.opts_.retries + 1, timeout.count()));
  StatusReply s = c.status();
  // Taken (the next expected id is past it) and not yet replied to: the target is executing
  // it, and its reply and those of the packets queued behind it will come. Nothing to recover;
  // wait, up to busy_limit. The target runs packets in order, so had it replied to the oldest,
  // the sent history (4 deep) would hold it or a packet sent after it (answered since or not);
  // the received history alone may have lost it behind those.
  const Packet& oldest = packets[in_flight.front()];
  // How far the target is past the oldest packet waiting for its reply: 0, it never got it; up to
  // the packets sent since, it got that many. Anything else (it expects an id before this
  // exchange's) is a target out of step with the client, never a packet it is executing.
  const uint16_t expected = s.next_expected_id == 0 ? 1 : s.next_expected_id;  // 0: a target that took none yet
  const uint32_t past = (uint32_t{expected} + 0xFFFF - oldest.id) % 0xFFFF;
  if (past > next_to_send - in_flight.front())
    throw TimeoutError(fmt::format("IPbus target {}: expects packet {}, but the oldest packet waiting for a reply is {}: out of "
                                   "step with this client; its next request starts from the target's id", c.target_,
                                   expected, oldest.id));
  bool replied = false;
  for (size_t k = in_flight.front(); k < next_to_send && !replied; ++k) replied = has_packet_id(s.sent_headers, packets[k].id);
  if (past != 0 && !replied) {
    --rounds;
    ++c.stats_.busy_waits;
    auto now = std::chrono::steady_clock::now();
    if (now - oldest.sent > c.opts_.busy_limit)
      throw TimeoutError(fmt::format("IPbus target {}: still executing packet {} after {:.1f} s (it answers status requests; "
                                     "limit {} ms)", c.target_, oldest.id,
                                     std::chrono::duration<double>(now - oldest.sent).count(), c.opts_.busy_limit.count()));
    return;
  }
  bool received = true;
  for (size_t k : in_flight) {
    if (packets[k].id == expected) received = false;
    if (received) {
      std::vector<uint32_t> r{encode(PacketHeader{PacketType::Resend, packets[k].id})};
      c.impl_->send(to_bytes(r, c.opts_.order));
      ++c.stats_.resend_requests;
    } else {
      c.impl_->send(packets[k].bytes);
      ++c.stats_.packets_resent;
    }
  }
}

void Client::Impl::Exchange::deliver() {
  for (size_t i = 0; i < txs.size(); ++i) {
    if (txs[i].out) txs[i].out->insert(txs[i].out->end(), tx_data[i].begin(), tx_data[i].end());
    if (txs[i].sink) std::static_pointer_cast<Pending::State>(txs[i].sink)->done = true;
  }
  if (first_error) throw *first_error;
}

uint32_t Client::read(uint32_t addr) {
  auto p = queue_read(addr);
  dispatch();
  return p.value();
}

void Client::write(uint32_t addr, uint32_t value) {
  queue_write(addr, {value});
  dispatch();
}

std::vector<uint32_t> Client::read_block(uint32_t addr, uint32_t words, bool incrementing) {
  auto p = queue_read(addr, words, incrementing);
  dispatch();
  return p.values();
}

void Client::write_block(uint32_t addr, const std::vector<uint32_t>& data, bool incrementing) {
  queue_write(addr, data, incrementing);
  dispatch();
}

uint32_t Client::rmw_bits(uint32_t addr, uint32_t and_term, uint32_t or_term) {
  auto p = queue_rmw_bits(addr, and_term, or_term);
  dispatch();
  return p.value();
}

uint32_t Client::rmw_sum(uint32_t addr, uint32_t addend) {
  auto p = queue_rmw_sum(addr, addend);
  dispatch();
  return p.value();
}

}  // namespace mxtb::host::fabric
