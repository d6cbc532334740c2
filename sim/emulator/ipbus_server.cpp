#include "sim/emulator/ipbus_server.h"

#include "protocol/board_map.h"

#include <boost/asio.hpp>
#include <fmt/format.h>

#include <sys/ioctl.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace mxtb::sim {

namespace asio = boost::asio;
using asio::ip::udp;
using ipbus::InfoCode;
using ipbus::TxType;

namespace {

bool is_write(TxType t) { return t == TxType::Write || t == TxType::NonIncWrite; }
bool incrementing(TxType t) { return t == TxType::Read || t == TxType::Write; }

// The socket thread waits for its job's answer. A job dropped without one (the simulation thread
// unwinding from an exception mid-job) answers a bus timeout as it goes, so that the socket thread
// returns and the server can stop: before, it waited forever and hid the exception behind a hang.
struct Answer {
  explicit Answer(TxType type) : type(type) {}
  Answer(const Answer&) = delete;
  Answer& operator=(const Answer&) = delete;
  ~Answer() {
    if (!given) result.set_value({is_write(type) ? InfoCode::WriteTimeout : InfoCode::ReadTimeout, {}});
  }
  void give(InfoCode code, std::vector<uint32_t> data) {
    if (given) return;
    given = true;
    result.set_value({code, std::move(data)});
  }
  TxType type;
  bool given = false;
  std::promise<std::pair<InfoCode, std::vector<uint32_t>>> result;
};

}  // namespace

struct IpbusServer::Impl : ipbus::BusPort {
  asio::io_context io;
  udp::socket sock{io};
  std::thread thread;
  std::vector<uint8_t> rx = std::vector<uint8_t>(65536);
  udp::endpoint from;
  // The socket thread answers status, resend and bad packets itself (accept) and hands control
  // packets, in order, to the transactor thread, which executes them (waiting for the simulation
  // thread where they reach it) and sends their replies. So a request that runs long never
  // silences the target: a status request still says the packet arrived and is executing.
  ipbus::Target target{*this};
  std::mutex target_mu;  // accept(), finish(), stats()
  struct Queued {
    ipbus::AcceptedPacket packet;
    udp::endpoint from;
  };
  std::thread transactor;
  std::mutex packets_mu;
  std::condition_variable packets_cv;
  std::deque<Queued> packets;
  bool packets_stop = false;
  // Control packets handed to the transactor whose replies the socket thread has not yet sent.
  // The socket thread's alone: it hands them over and sends their replies.
  size_t replies_owed = 0;
  std::vector<uint32_t> ram = std::vector<uint32_t>(protocol::kRamWords, 0);  // the transactor's

  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<Job> jobs;
  bool stopping = false;
  IpbusServer::Mode mode = IpbusServer::Mode::Target;
  std::deque<IpbusServer::Datagram> datagrams;  // raw mode, under mu
  size_t raw_bytes = 0;                         // raw mode: the size of the datagram being answered, under mu

  // What the stall watchdog reads. Steady-clock nanoseconds; 0: none. The transactor waits for
  // one job at a time, so one request is outstanding at most.
  std::atomic<int64_t> job_queued_ns{0}, job_taken_ns{0}, last_rx_ns{0};
  Access job_access{};  // the outstanding request's header fields, under mu (body not kept)
  std::thread watchdog;
  std::mutex watch_mu;
  std::condition_variable watch_cv;
  bool watch_stop = false;

  static int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  void watch(IpbusServer::StallWatch w) {
    const int64_t threshold = std::chrono::duration_cast<std::chrono::nanoseconds>(w.threshold).count();
    int64_t stall_since = 0, last_report = 0;
    std::string what;
    std::unique_lock<std::mutex> lock(watch_mu);
    while (!watch_stop) {
      watch_cv.wait_for(lock, w.threshold / 4);
      if (watch_stop) break;
      const int64_t now = now_ns(), queued = job_queued_ns.load(), taken = job_taken_ns.load(), rx = last_rx_ns.load();
      int unread = 0;
      if (::ioctl(sock.native_handle(), FIONREAD, &unread) != 0) unread = 0;
      const bool job_stuck = queued != 0 && now - queued > threshold;
      const bool socket_stuck = unread > 0 && rx != 0 && now - rx > threshold;
      if (!job_stuck && !socket_stuck) {
        if (stall_since)
          w.report(fmt::format("IPbus stall over: answering again after {:.2f} s ({})", (now - stall_since) * 1e-9, what));
        stall_since = 0;
        continue;
      }
      if (stall_since && now - last_report < threshold) continue;
      if (!stall_since) stall_since = job_stuck ? queued : rx;
      last_report = now;
      {
        std::lock_guard<std::mutex> g(mu);
        if (!queued) what = "no request in the simulation";
        else if (mode == IpbusServer::Mode::Raw) what = fmt::format("a datagram of {} bytes for the RTL transactor", raw_bytes);
        else
          what = fmt::format("{} of {} word(s) at {:#010x}", ipbus::to_string(job_access.type), job_access.words, job_access.addr);
      }
      std::string line = fmt::format("IPbus stall: nothing answered for {:.2f} s", (now - stall_since) * 1e-9);
      if (queued)
        line += fmt::format("; request {} queued {:.2f} s ago, {}", what, (now - queued) * 1e-9,
                            taken ? fmt::format("taken by the simulation thread {:.2f} s ago", (now - taken) * 1e-9)
                                  : std::string("not yet taken by the simulation thread"));
      size_t behind = 0;
      {
        std::lock_guard<std::mutex> g(packets_mu);
        behind = packets.size();
      }
      if (behind) line += fmt::format("; {} control packet(s) queued behind it", behind);
      if (unread > 0)
        line += fmt::format("; {} bytes of datagrams unread, the socket thread last received {:.2f} s ago", unread, (now - rx) * 1e-9);
      if (w.describe_sim) line += "; simulation thread: " + w.describe_sim();
      w.report(line);
    }
  }

  // The board's scratch RAM is the endpoint's own; everything else belongs to the simulation.
  InfoCode execute(const Access& a, std::vector<uint32_t>& out) override {
    uint32_t span = incrementing(a.type) ? a.words : 1;
    bool in_ram = a.addr >= protocol::kRamBase && uint64_t{a.addr} + span <= uint64_t{protocol::kRamBase} + protocol::kRamWords;
    if (in_ram) return ram_access(a, out);
    if (a.addr >= protocol::kRamBase && a.addr < protocol::kRamBase + protocol::kRamWords)
      return is_write(a.type) ? InfoCode::WriteError : InfoCode::ReadError;  // runs off the RAM's end
    auto answer = std::make_shared<Answer>(a.type);
    auto future = answer->result.get_future();
    Job job{a, std::vector<uint32_t>(a.body, a.body + ipbus::request_body_words(a.type, a.words) - 1), {}};
    job.access.body = nullptr;  // set by the receiver: the vector moves with the job
    // The job holds the only reference, so that dropping it answers.
    job.done = [answer = std::move(answer)](InfoCode c, std::vector<uint32_t> data) { answer->give(c, std::move(data)); };
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stopping) return is_write(a.type) ? InfoCode::WriteTimeout : InfoCode::ReadTimeout;
      job_access = a;
      job_access.body = nullptr;
      jobs.push_back(std::move(job));
      job_taken_ns = 0;
      job_queued_ns = now_ns();
    }
    cv.notify_one();
    auto [code, data] = future.get();
    job_queued_ns = 0;
    out.insert(out.end(), data.begin(), data.end());
    return code;
  }

  InfoCode ram_access(const Access& a, std::vector<uint32_t>& out) {
    uint32_t base = a.addr - protocol::kRamBase;
    switch (a.type) {
      case TxType::Read:
        out.insert(out.end(), ram.begin() + base, ram.begin() + base + a.words);
        break;
      case TxType::NonIncRead:
        out.insert(out.end(), a.words, ram[base]);
        break;
      case TxType::Write:
        std::copy(a.body, a.body + a.words, ram.begin() + base);
        break;
      case TxType::NonIncWrite:
        if (a.words) ram[base] = a.body[a.words - 1];
        break;
      case TxType::RmwBits:
        out.push_back(ram[base]);
        ram[base] = (ram[base] & a.body[0]) | a.body[1];
        break;
      case TxType::RmwSum:
        out.push_back(ram[base]);
        ram[base] += a.body[0];
        break;
    }
    return InfoCode::Success;
  }

  void send(std::vector<uint8_t> bytes, const udp::endpoint& to) {
    boost::system::error_code ec;
    sock.send_to(asio::buffer(bytes), to, 0, ec);  // a vanished client is not our problem
  }

  void receive() {
    sock.async_receive_from(asio::buffer(rx), from, [this](const boost::system::error_code& ec, size_t n) {
      if (ec == asio::error::operation_aborted) return;
      last_rx_ns = now_ns();
      if (!ec && mode == IpbusServer::Mode::Raw) {
        queue_raw(std::vector<uint8_t>(rx.begin(), rx.begin() + static_cast<long>(n)), from);
      } else if (!ec) {
        ipbus::Target::Intake in;
        {
          std::lock_guard<std::mutex> lock(target_mu);
          in = target.accept(rx.data(), n);
        }
        if (in.reply) send(std::move(*in.reply), from);
        // A packet for the RAM alone, with no reply owed ahead of it, runs here: it never waits
        // on the simulation, and handing it over cost each round trip two thread wake-ups. With
        // no reply owed the transactor is idle, and stays so: only this thread gives it packets.
        if (in.control && replies_owed == 0 &&
            ipbus::transactions_within(in.control->words, protocol::kRamBase, protocol::kRamWords)) {
          send(run_packet(*in.control), from);
        } else if (in.control) {
          ++replies_owed;
          std::lock_guard<std::mutex> lock(packets_mu);
          packets.push_back({std::move(*in.control), from});
          packets_cv.notify_one();
        }
      }
      receive();
    });
  }

  // Raw mode: the datagram waits for the simulation thread; its reply goes out from the io thread.
  // The watchdog times the oldest datagram not yet answered.
  void queue_raw(std::vector<uint8_t> bytes, const udp::endpoint& to) {
    if (bytes.empty()) return;  // a zero-length datagram cannot travel on AXI4-Stream: as a board's UDP core, drop it
    IpbusServer::Datagram d;
    d.bytes = std::move(bytes);
    d.reply = [this, to](std::optional<std::vector<uint8_t>> reply) {
      job_queued_ns = 0;
      if (reply) asio::post(io, [this, r = std::move(*reply), to]() mutable { send(std::move(r), to); });
    };
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stopping) return;
      datagrams.push_back(std::move(d));
      if (job_queued_ns == 0) {
        raw_bytes = datagrams.front().bytes.size();
        job_taken_ns = 0;
        job_queued_ns = now_ns();
      }
    }
    cv.notify_one();
  }

  void run_transactor() {
    for (;;) {
      Queued q;
      {
        std::unique_lock<std::mutex> lock(packets_mu);
        packets_cv.wait(lock, [&] { return packets_stop || !packets.empty(); });
        if (packets_stop) return;
        q = std::move(packets.front());
        packets.pop_front();
      }
      std::vector<uint8_t> reply = run_packet(q.packet);
      // The socket belongs to the io thread: sending from here could race its receive.
      asio::post(io, [this, reply = std::move(reply), to = q.from]() mutable {
        send(std::move(reply), to);
        --replies_owed;
      });
    }
  }

  // Executes a control packet and stores its reply for resends; the reply's bytes.
  std::vector<uint8_t> run_packet(const ipbus::AcceptedPacket& p) {
    ipbus::TargetStats counts;
    std::vector<uint8_t> reply = target.execute(p, counts);
    std::lock_guard<std::mutex> lock(target_mu);
    target.finish(p, reply, counts);
    return reply;
  }
};

std::pair<std::string, uint16_t> parse_listen_address(const std::string& listen) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos) throw std::invalid_argument(fmt::format("--listen '{}': want ADDR:PORT", listen));
  std::string host = listen.substr(0, colon), port = listen.substr(colon + 1);
  if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 || std::stoul(port) > 65535)
    throw std::invalid_argument(fmt::format("--listen '{}': port '{}' is not 0..65535", listen, port));
  if (host == "localhost") host = "127.0.0.1";
  boost::system::error_code ec;
  asio::ip::make_address_v4(host, ec);
  if (ec) throw std::invalid_argument(fmt::format("--listen '{}': '{}' is not an IPv4 address", listen, host));
  return {host, static_cast<uint16_t>(std::stoul(port))};
}

IpbusServer::IpbusServer(const std::string& listen, std::function<void(ipbus::Fault, const std::string&)> on_fault, Mode mode)
    : impl_(std::make_unique<Impl>()) {
  impl_->mode = mode;
  auto [host, port] = parse_listen_address(listen);
  boost::system::error_code ec;
  impl_->sock.open(udp::v4());
  impl_->sock.bind(udp::endpoint(asio::ip::make_address_v4(host), port), ec);
  if (ec) throw std::runtime_error(fmt::format("--listen '{}': cannot bind: {}", listen, ec.message()));
  impl_->target.on_fault(std::move(on_fault));
  impl_->last_rx_ns = Impl::now_ns();
  impl_->receive();
  impl_->transactor = std::thread([this] { impl_->run_transactor(); });
  impl_->thread = std::thread([this] { impl_->io.run(); });
}

void IpbusServer::watch_stalls(StallWatch watch) {
  if (impl_->watchdog.joinable()) throw std::logic_error("IpbusServer::watch_stalls: called twice");
  if (watch.threshold.count() < 4) throw std::invalid_argument("IpbusServer::watch_stalls: threshold under 4 ms");
  impl_->watchdog = std::thread([this, w = std::move(watch)]() mutable { impl_->watch(std::move(w)); });
}

IpbusServer::~IpbusServer() {
  {
    std::lock_guard<std::mutex> lock(impl_->watch_mu);
    impl_->watch_stop = true;
  }
  impl_->watch_cv.notify_all();
  if (impl_->watchdog.joinable()) impl_->watchdog.join();
  {
    // Jobs still queued are answered with a timeout so that the transactor can finish.
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
    for (auto& j : impl_->jobs)
      j.done(is_write(j.access.type) ? InfoCode::WriteTimeout : InfoCode::ReadTimeout, {});
    impl_->jobs.clear();
    impl_->datagrams.clear();  // raw mode: unanswered, as a board that stops answers nothing
  }
  {
    std::lock_guard<std::mutex> lock(impl_->packets_mu);
    impl_->packets_stop = true;
  }
  impl_->packets_cv.notify_all();
  if (impl_->transactor.joinable()) impl_->transactor.join();
  asio::post(impl_->io, [this] { impl_->sock.close(); });
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::string IpbusServer::local_address() const {
  auto ep = impl_->sock.local_endpoint();
  return fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

std::optional<IpbusServer::Job> IpbusServer::next_job(std::chrono::microseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  if (!impl_->cv.wait_for(lock, timeout, [&] { return !impl_->jobs.empty(); })) return std::nullopt;
  Job j = std::move(impl_->jobs.front());
  impl_->jobs.pop_front();
  impl_->job_taken_ns = Impl::now_ns();
  j.access.body = j.body.data();
  return j;
}

std::optional<IpbusServer::Datagram> IpbusServer::next_datagram(std::chrono::microseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  if (!impl_->cv.wait_for(lock, timeout, [&] { return !impl_->datagrams.empty(); })) return std::nullopt;
  Datagram d = std::move(impl_->datagrams.front());
  impl_->datagrams.pop_front();
  impl_->raw_bytes = d.bytes.size();
  if (impl_->job_queued_ns == 0) impl_->job_queued_ns = Impl::now_ns();
  impl_->job_taken_ns = Impl::now_ns();
  return d;
}

bool IpbusServer::job_waiting() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return !impl_->jobs.empty();
}

ipbus::TargetStats IpbusServer::stats() const {
  std::lock_guard<std::mutex> lock(impl_->target_mu);
  return impl_->target.stats();
}

}  // namespace mxtb::sim
