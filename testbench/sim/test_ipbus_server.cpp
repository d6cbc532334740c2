// The emulator's IPbus endpoint on loopback, with the host's client: a job answered by the
// simulation thread reaches the client; a job dropped unanswered (the simulation thread unwinding
// from an exception, as a failed RTL assertion or firmware error mid-job does) is answered with a
// bus timeout, and the server still stops. Before, the socket thread waited for that answer
// forever: the client saw a target that answered nothing, and the emulator hung in its destructor.
#include "host/fabric/client.h"
#include "protocol/board_map.h"
#include "sim/emulator/ipbus_server.h"

#include <boost/asio.hpp>
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <optional>
#include <random>
#include <stdexcept>

using mxtb::host::fabric::Client;
using mxtb::host::fabric::ClientOptions;
using mxtb::host::fabric::TransactionError;
using mxtb::protocol::ipbus::InfoCode;
using mxtb::sim::IpbusServer;
namespace protocol = mxtb::protocol;

namespace {

ClientOptions quick() {
  ClientOptions o;
  o.timeout = std::chrono::milliseconds(2000);
  o.retries = 1;
  return o;
}

// A second client beside the test's own: unsequenced, so that it leaves the first one's packet
// sequence alone.
ClientOptions unsequenced(std::chrono::milliseconds timeout) {
  ClientOptions o;
  o.sequenced = false;
  o.timeout = timeout;
  return o;
}

// The address a job is for: the emulator block's first word (no RAM: the transactor serves that).
constexpr uint32_t kSimAddr = protocol::kEmulatorBase;

namespace asio = boost::asio;
namespace ipbus = mxtb::protocol::ipbus;

// A bare UDP socket to the server, as a client other than host::fabric::Client talks to it (uHAL,
// a tool that pipelines): datagrams out, replies polled up to a deadline.
struct BareClient {
  asio::io_context io;
  asio::ip::udp::socket sock{io, asio::ip::udp::endpoint(asio::ip::make_address_v4("127.0.0.1"), 0)};
  asio::ip::udp::endpoint board;

  explicit BareClient(const IpbusServer& server) {
    auto [host, port] = mxtb::sim::parse_listen_address(server.local_address());
    board = asio::ip::udp::endpoint(asio::ip::make_address_v4(host), port);
    sock.non_blocking(true);
  }
  void send(const std::vector<uint8_t>& bytes) { sock.send_to(asio::buffer(bytes), board); }
  // The next reply's bytes, waiting up to `wait`; empty when none came.
  std::vector<uint8_t> next_reply(std::chrono::microseconds wait) {
    std::vector<uint8_t> rx(2000);
    const auto deadline = std::chrono::steady_clock::now() + wait;
    for (;;) {
      boost::system::error_code ec;
      const size_t n = sock.receive(asio::buffer(rx), 0, ec);
      if (!ec) return std::vector<uint8_t>(rx.begin(), rx.begin() + static_cast<long>(n));
      if (std::chrono::steady_clock::now() > deadline) return {};
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
};

// A control packet, id 0 (as uHAL sends them), of one transaction of one word at `addr`.
std::vector<uint8_t> one_word_packet(ipbus::TxType type, uint16_t tx_id, uint32_t addr, std::vector<uint32_t> body = {}) {
  std::vector<uint32_t> w{ipbus::encode(ipbus::PacketHeader{ipbus::PacketType::Control, 0}),
                          ipbus::encode(ipbus::TxHeader{tx_id, 1, type, ipbus::InfoCode::Request}), addr};
  w.insert(w.end(), body.begin(), body.end());
  return ipbus::to_bytes(w, ipbus::ByteOrder::Big);
}

// A one-word reply's transaction id and data word.
std::pair<uint16_t, uint32_t> one_word_reply(const std::vector<uint8_t>& rx) {
  auto w = ipbus::to_words(rx.data(), rx.size(), nullptr);
  REQUIRE(w.has_value());
  REQUIRE(w->words.size() == 3u);
  return {ipbus::decode_tx_header(w->words[1])->id, w->words[2]};
}

}  // namespace

TEST_CASE("a job the simulation thread answers reaches the client") {
  IpbusServer server("127.0.0.1:0", nullptr);
  Client client("udp://" + server.local_address(), quick());
  auto read = std::async(std::launch::async, [&] { return client.read(kSimAddr); });
  auto job = server.next_job(std::chrono::seconds(5));
  REQUIRE(job.has_value());
  CHECK(job->access.addr == kSimAddr);
  job->done(InfoCode::Success, {0xC0FFEEu});
  CHECK(read.get() == 0xC0FFEEu);
}

TEST_CASE("a job dropped unanswered answers a bus timeout and the server still stops") {
  for (bool write : {false, true}) {
    CAPTURE(write);
    auto server = std::make_unique<IpbusServer>("127.0.0.1:0", nullptr);
    Client client("udp://" + server->local_address(), quick());
    auto access = std::async(std::launch::async, [&] {
      if (write) client.write(kSimAddr, 7);
      else client.read(kSimAddr);
    });
    {
      // As serve() unwinds from an exception in handle(): the job goes out of scope unanswered.
      auto job = server->next_job(std::chrono::seconds(5));
      REQUIRE(job.has_value());
    }
    try {
      access.get();
      FAIL("the dropped job was answered with success");
    } catch (const TransactionError& e) {
      CHECK(e.code == (write ? InfoCode::WriteTimeout : InfoCode::ReadTimeout));
      CHECK(e.addr == kSimAddr);
    }
    // The transactor is free again: the board answers, and the destructor joins its threads.
    CHECK(client.status().n_buffers > 0);
    server.reset();
  }
}

TEST_CASE("a job answered once is not answered again when dropped") {
  IpbusServer server("127.0.0.1:0", nullptr);
  Client client("udp://" + server.local_address(), quick());
  auto read = std::async(std::launch::async, [&] { return client.read(kSimAddr); });
  std::optional<IpbusServer::Job> job = server.next_job(std::chrono::seconds(5));
  REQUIRE(job.has_value());
  job->done(InfoCode::Success, {42u});
  job->done(InfoCode::ReadError, {});  // a second call changes nothing
  job.reset();
  CHECK(read.get() == 42u);
}

// The failure class behind issue 27's silent emulator: while one request ran, the single socket
// thread waited for it and answered nothing, status requests included, so a client whose
// timeout x (retries + 1) was shorter than the request declared the target dead. Now the socket
// thread answers status while the transactor waits, and the client waits for a packet the
// status says is executing.
TEST_CASE("a request that outlasts the client's whole retry budget completes: status is answered while it runs") {
  IpbusServer server("127.0.0.1:0", nullptr);
  ClientOptions o;
  o.timeout = std::chrono::milliseconds(50);
  o.retries = 2;  // 150 ms of retries; the request runs 600 ms
  Client client("udp://" + server.local_address(), o);
  auto read = std::async(std::launch::async, [&] { return client.read(kSimAddr + 1); });
  auto job = server.next_job(std::chrono::seconds(5));
  REQUIRE(job.has_value());
  // Meanwhile a second client sees the packet taken and not answered.
  Client observer("udp://" + server.local_address(), unsequenced(std::chrono::milliseconds(200)));
  auto s = observer.status();
  REQUIRE_FALSE(s.received_headers.empty());
  auto newest = mxtb::protocol::ipbus::decode_packet_header(s.received_headers[0], nullptr);
  REQUIRE(newest);
  CHECK(s.next_expected_id == mxtb::protocol::ipbus::next_packet_id(newest->id));
  CHECK(std::find(s.sent_headers.begin(), s.sent_headers.end(), s.received_headers[0]) == s.sent_headers.end());
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  job->done(InfoCode::Success, {0xFEEDu});
  CHECK(read.get() == 0xFEEDu);
  CHECK(client.stats().busy_waits >= 2);
  CHECK(client.stats().packets_resent == 0);  // nothing was executed twice
  CHECK(client.stats().worst_answer_ms >= 600);
  CHECK(server.stats().faults[static_cast<size_t>(mxtb::protocol::ipbus::Fault::OutOfSequence)] == 0);
}

TEST_CASE("a block read of six packets held at its first: waited for, though the first left the received history") {
  // Six packets in flight, all taken: the status's received history (4 deep) no longer holds the
  // first, which is still executing; the client must still see it as executing, not lost.
  IpbusServer server("127.0.0.1:0", nullptr);
  ClientOptions o;
  o.timeout = std::chrono::milliseconds(50);
  o.retries = 2;
  Client client("udp://" + server.local_address(), o);
  auto read = std::async(std::launch::async, [&] { return client.read_block(kSimAddr, 6 * 255); });
  auto first = server.next_job(std::chrono::seconds(5));
  REQUIRE(first.has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  // Each word read answers its own address, so order and completeness show in the result.
  auto answer = [](IpbusServer::Job& job) {
    std::vector<uint32_t> data(job.access.words);
    for (uint32_t i = 0; i < job.access.words; ++i) data[i] = job.access.addr + i;
    job.done(InfoCode::Success, std::move(data));
  };
  answer(*first);
  while (read.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready)
    if (auto job = server.next_job(std::chrono::milliseconds(100))) answer(*job);
  auto words = read.get();
  REQUIRE(words.size() == 6u * 255u);
  for (uint32_t i = 0; i < words.size(); ++i) REQUIRE(words[i] == kSimAddr + i);
  CHECK(client.stats().busy_waits >= 2);
  CHECK(client.stats().packets_resent == 0);
}

TEST_CASE("a request still running after the client's busy limit ends in a TimeoutError that says so") {
  IpbusServer server("127.0.0.1:0", nullptr);
  ClientOptions o;
  o.timeout = std::chrono::milliseconds(50);
  o.retries = 2;
  o.busy_limit = std::chrono::milliseconds(300);
  Client client("udp://" + server.local_address(), o);
  auto read = std::async(std::launch::async, [&] { return client.read(kSimAddr + 2); });
  auto job = server.next_job(std::chrono::seconds(5));
  REQUIRE(job.has_value());
  try {
    read.get();
    FAIL("a request running past the busy limit was answered");
  } catch (const mxtb::host::fabric::TimeoutError& e) {
    CHECK(std::string(e.what()).find("still executing packet") != std::string::npos);
  }
  job->done(InfoCode::Success, {1u});  // late: the server still stops cleanly
}

// A target that answers nothing at all, status included: gone, unless the caller can see that its
// process is alive (an emulator the machine has not scheduled): then the client keeps asking, up
// to busy_limit. A bound socket that never answers stands for both.
TEST_CASE("a silent target: declared gone after its retries, or waited for up to busy_limit while its process is alive") {
  boost::asio::io_context io;
  boost::asio::ip::udp::socket silent(io, boost::asio::ip::udp::endpoint(boost::asio::ip::make_address_v4("127.0.0.1"), 0));
  const std::string target = fmt::format("udp://127.0.0.1:{}", silent.local_endpoint().port());
  ClientOptions o;
  o.timeout = std::chrono::milliseconds(20);
  o.retries = 1;
  o.busy_limit = std::chrono::milliseconds(300);
  for (bool alive : {false, true}) {
    CAPTURE(alive);
    int asked = 0;
    o.target_alive = [&] {
      ++asked;
      return alive;
    };
    const auto t0 = std::chrono::steady_clock::now();
    try {
      Client c(target, o);
      FAIL("a silent target was answered");
    } catch (const mxtb::host::fabric::TimeoutError& e) {
      const auto waited = std::chrono::steady_clock::now() - t0;
      const std::string what = e.what();
      if (alive) {
        CHECK(what.find("although its process is alive") != std::string::npos);
        CHECK(waited >= std::chrono::milliseconds(300));
        CHECK(asked >= 2);
      } else {
        CHECK(what.find("(2 attempts of 20 ms)") != std::string::npos);
        CHECK(waited < std::chrono::milliseconds(300));
        CHECK(asked == 1);
      }
    }
  }
}

TEST_CASE("a request the simulation thread leaves waiting is reported as a stall, with what the simulation does") {
  IpbusServer server("127.0.0.1:0", nullptr);
  std::mutex mu;
  std::vector<std::string> lines;
  server.watch_stalls({std::chrono::milliseconds(100), [] { return std::string("busy in a long RUN_UNTIL"); },
                       [&](const std::string& l) {
                         std::lock_guard<std::mutex> lock(mu);
                         lines.push_back(l);
                       }});
  Client client("udp://" + server.local_address(), quick());
  const auto t0 = std::chrono::steady_clock::now();
  auto read = std::async(std::launch::async, [&] { return client.read(kSimAddr + 3); });
  // The simulation thread takes the job but answers only after 450 ms: a stall of 4.5 thresholds.
  auto job = server.next_job(std::chrono::seconds(5));
  REQUIRE(job.has_value());
  // A second client's packet waits behind it for the transactor.
  Client second("udp://" + server.local_address(), unsequenced(std::chrono::milliseconds(3000)));
  auto second_read = std::async(std::launch::async, [&] { return second.read(kSimAddr + 4); });
  std::this_thread::sleep_for(std::chrono::milliseconds(450));
  {
    std::lock_guard<std::mutex> lock(mu);
    REQUIRE_FALSE(lines.empty());
    const std::string& first = lines.front();
    CHECK(first.find("IPbus stall: nothing answered for") != std::string::npos);
    CHECK(first.find("read of 1 word(s) at 0x00010003") != std::string::npos);
    CHECK(first.find("taken by the simulation thread") != std::string::npos);
    CHECK(first.find("simulation thread: busy in a long RUN_UNTIL") != std::string::npos);
    // Repeated every threshold while it lasts, not every look (a look is every 25 ms).
    const auto waited = std::chrono::steady_clock::now() - t0;
    CHECK(lines.size() >= 2);
    CHECK(lines.size() <= static_cast<size_t>(waited / std::chrono::milliseconds(100)) + 1);
  }
  // The stall lasts while the job is held: a later line counts the second client's packet.
  bool behind = false;
  for (int i = 0; i < 100 && !behind; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu);
      behind = lines.back().find("; 1 control packet(s) queued behind it") != std::string::npos;
    }
    if (!behind) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(behind);
  job->done(InfoCode::Success, {5u});
  CHECK(read.get() == 5u);
  auto job2 = server.next_job(std::chrono::seconds(5));
  REQUIRE(job2.has_value());
  CHECK(job2->access.addr == kSimAddr + 4);
  job2->done(InfoCode::Success, {6u});
  CHECK(second_read.get() == 6u);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  std::lock_guard<std::mutex> lock(mu);
  CHECK(lines.back().find("IPbus stall over: answering again after") != std::string::npos);
}

TEST_CASE("requests answered in time are no stall") {
  IpbusServer server("127.0.0.1:0", nullptr);
  std::mutex mu;
  std::vector<std::string> lines;
  server.watch_stalls({std::chrono::milliseconds(200), nullptr, [&](const std::string& l) {
                         std::lock_guard<std::mutex> lock(mu);
                         lines.push_back(l);
                       }});
  Client client("udp://" + server.local_address(), quick());
  for (int i = 0; i < 5; ++i) {
    auto read = std::async(std::launch::async, [&] { return client.read(kSimAddr); });
    auto job = server.next_job(std::chrono::seconds(5));
    REQUIRE(job.has_value());
    std::this_thread::sleep_for(std::chrono::milliseconds(60));  // well under the threshold
    job->done(InfoCode::Success, {1u});
    CHECK(read.get() == 1u);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // idle: no request waits
  std::lock_guard<std::mutex> lock(mu);
  CHECK(lines.empty());
}

TEST_CASE("a stall watch with a threshold under 4 ms, or a second one, is refused") {
  IpbusServer server("127.0.0.1:0", nullptr);
  CHECK_THROWS_AS(server.watch_stalls({std::chrono::milliseconds(2), nullptr, [](const std::string&) {}}), std::invalid_argument);
  server.watch_stalls({std::chrono::milliseconds(100), nullptr, [](const std::string&) {}});
  CHECK_THROWS_AS(server.watch_stalls({std::chrono::milliseconds(100), nullptr, [](const std::string&) {}}), std::logic_error);
}

TEST_CASE("raw mode: every datagram goes whole and in order to the simulation thread, its reply to its sender") {
  IpbusServer server("127.0.0.1:0", nullptr, IpbusServer::Mode::Raw);
  BareClient client(server);
  // Any bytes at all: in raw mode the server does not look at them (the RTL transactor does).
  const std::vector<std::vector<uint8_t>> sent{{0x20, 0x00, 0x00, 0xF0}, {1, 2, 3}, std::vector<uint8_t>(1500, 0xAB), {9}};
  for (const auto& d : sent) client.send(d);
  for (size_t i = 0; i < sent.size(); ++i) {
    auto d = server.next_datagram(std::chrono::seconds(5));
    REQUIRE(d.has_value());
    CHECK(d->bytes == sent[i]);
    if (i == 1) {
      d->reply(std::nullopt);  // dropped: nothing goes back
      continue;
    }
    std::vector<uint8_t> reply = d->bytes;
    reply.push_back(static_cast<uint8_t>(i));
    d->reply(reply);
    CHECK(client.next_reply(std::chrono::seconds(5)) == reply);
  }
  CHECK_FALSE(server.next_datagram(std::chrono::milliseconds(50)).has_value());
  CHECK_FALSE(server.next_job(std::chrono::milliseconds(1)).has_value());  // the C++ target is not in the path
  CHECK(server.stats().datagrams == 0);
}

TEST_CASE("a RAM packet behind one the simulation holds is answered after it, in order; alone, at once") {
  // The socket thread runs a packet for the RAM alone itself, but only with no reply owed: a
  // client that pipelines (uHAL numbers every packet 0 and matches replies by order) must get
  // the replies in the order it sent the packets.
  IpbusServer server("127.0.0.1:0", nullptr);
  BareClient client(server);
  auto read_packet = [](uint32_t addr, uint16_t tx_id) { return one_word_packet(ipbus::TxType::Read, tx_id, addr); };
  auto receive = [&] {
    const std::vector<uint8_t> rx = client.next_reply(std::chrono::seconds(5));
    REQUIRE_FALSE(rx.empty());
    return one_word_reply(rx);
  };
  // Alone: answered without the simulation.
  client.send(read_packet(protocol::kRamBase + 3, 0x10));
  CHECK(receive() == std::make_pair(uint16_t{0x10}, 0u));
  // Behind a held one, sent once the transactor has taken it (its queue is empty then): the RAM
  // packet waits its turn.
  client.send(read_packet(kSimAddr, 0x20));
  auto job = server.next_job(std::chrono::seconds(5));
  REQUIRE(job.has_value());
  client.send(read_packet(protocol::kRamBase + 3, 0x21));
  REQUIRE_MESSAGE(client.next_reply(std::chrono::milliseconds(100)).empty(), "a reply came while the first packet was held");
  job->done(InfoCode::Success, {0xABCDu});
  CHECK(receive() == std::make_pair(uint16_t{0x20}, 0xABCDu));
  CHECK(receive() == std::make_pair(uint16_t{0x21}, 0u));
  // Owed nothing again: the next RAM packet is answered at once.
  client.send(read_packet(protocol::kRamBase + 3, 0x30));
  CHECK(receive() == std::make_pair(uint16_t{0x30}, 0u));
  CHECK_FALSE(server.next_job(std::chrono::milliseconds(50)).has_value());
}

TEST_CASE("pipelined RAM and simulation packets in random mixes: replies in the order sent, RAM packets executed in it") {
  // 300 packets, 2 to 32 in flight, each a RAM RMW-sum (returns the counter's old value: the order RAM
  // packets ran in) or a simulation read (answered with its index after a random delay). Replies
  // must come in the order sent, whatever the socket thread ran itself and what it queued.
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    CAPTURE(seed);
    IpbusServer server("127.0.0.1:0", nullptr);
    BareClient client(server);
    std::mt19937 rng(seed);
    constexpr uint32_t kPackets = 300, kCounter = protocol::kRamBase + 9;
    std::vector<bool> to_ram(kPackets);
    for (uint32_t i = 0; i < kPackets; ++i) to_ram[i] = rng() % 3 != 0;
    std::atomic<bool> stop{false};
    std::thread simulation([&] {
      std::mt19937 delays(seed * 7919);
      while (!stop)
        if (auto job = server.next_job(std::chrono::milliseconds(10))) {
          std::this_thread::sleep_for(std::chrono::microseconds(delays() % 300));
          job->done(InfoCode::Success, {job->access.addr - kSimAddr});
        }
    });
    struct StopAtEnd {  // also when a REQUIRE ends the case: a joinable thread must not be destroyed
      std::atomic<bool>& stop;
      std::thread& thread;
      ~StopAtEnd() {
        stop = true;
        thread.join();
      }
    } stop_at_end{stop, simulation};
    auto send = [&](uint32_t i) {
      const uint16_t tx_id = static_cast<uint16_t>(i);
      client.send(to_ram[i] ? one_word_packet(ipbus::TxType::RmwSum, tx_id, kCounter, {1})
                            : one_word_packet(ipbus::TxType::Read, tx_id, kSimAddr + i));
    };
    // Up to `window` in flight, as a client that pipelines keeps them (few enough that no socket
    // buffer overflows on a loaded machine). A small window is the searching one: a packet sent
    // as the previous reply arrives finds the transactor busy with the one before it and nothing
    // queued.
    const uint32_t window = std::vector<uint32_t>{2, 3, 8, 32}[seed - 1];
    uint32_t sent = 0, received = 0, ram_seen = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (received < kPackets) {
      while (sent < kPackets && sent - received < window) send(sent++);
      const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - std::chrono::steady_clock::now());
      const std::vector<uint8_t> rx = client.next_reply(std::max(left, std::chrono::microseconds(0)));
      if (rx.empty()) break;
      const auto [id, data] = one_word_reply(rx);
      REQUIRE_MESSAGE(id == received, "reply " << received << " out of order");
      CHECK(data == (to_ram[received] ? ram_seen++ : received));
      ++received;
    }
    CHECK(received == kPackets);
    CHECK(server.stats().control == kPackets);
  }
}
