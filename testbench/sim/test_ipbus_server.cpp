// The emulator's IPbus endpoint on loopback, with the host's client: a job answered by the
// simulation thread reaches the client; a job dropped unanswered (the simulation thread unwinding
// from an exception, as a failed RTL assertion or firmware error mid-job does) is answered with a
// bus timeout, and the server still stops. Before, the socket thread waited for that answer
// forever: the client saw a target that answered nothing, and the emulator hung in its destructor.
#include "host/fabric/client.h"
#include "protocol/board_map.h"
#include "sim/ipbus_server.h"

#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <optional>
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

// The address a job is for: the emulator block's first word (no RAM: the socket thread serves that).
constexpr uint32_t kSimAddr = protocol::kEmulatorBase;

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
    // The socket thread is free again: the board answers, and the destructor joins it.
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
  job->done(InfoCode::Success, {5u});
  CHECK(read.get() == 5u);
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
