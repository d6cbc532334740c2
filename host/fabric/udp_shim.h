// A UDP shim between a host client and an IPbus target on loopback: datagrams lost, duplicated
// and reordered, or none at all while it is down (a board's network unplugged). The network's
// fault injector: the bridge's tests put loss on it; the rack commit's tests and the rack campaign
// (`mxtb rack-failover --scenario-seed`) unplug a board with it in the middle of a transaction.
#pragma once

#include "host/fabric/client.h"

#include <boost/asio.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace mxtb::host::fabric {

// A UDP proxy that drops, duplicates and reorders datagrams both ways, from a seed; set_down(true)
// drops every datagram both ways until set_down(false) (a board's network unplugged).
class LossyShim {
  using udp = boost::asio::ip::udp;

 public:
  LossyShim(const std::string& target, double drop, double dup, double reorder, uint64_t seed)
      : front_(io_, udp::endpoint(boost::asio::ip::make_address_v4("127.0.0.1"), 0)),
        back_(io_, udp::endpoint(boost::asio::ip::make_address_v4("127.0.0.1"), 0)),
        drop_(drop), dup_(dup), reorder_(reorder), rng_(seed) {
    auto [host, port] = parse_target(target);
    board_ = udp::endpoint(boost::asio::ip::make_address_v4(host), port);
    receive_front();
    receive_back();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~LossyShim() {
    io_.stop();
    thread_.join();
  }
  std::string target() const { return "udp://127.0.0.1:" + std::to_string(front_.local_endpoint().port()); }
  void set_down(bool down) { down_ = down; }
  uint64_t dropped = 0, duplicated = 0, reordered = 0;

 private:
  struct Held {
    std::optional<std::vector<uint8_t>> bytes;
  };
  void pass(udp::socket& out, const udp::endpoint& to, std::vector<uint8_t> b, Held& held) {
    double r = std::uniform_real_distribution<double>(0, 1)(rng_);
    if (r < drop_ || down_) {
      ++dropped;
      return;
    }
    if (r < drop_ + reorder_ && !held.bytes) {
      held.bytes = std::move(b);  // goes out after the next datagram this way
      ++reordered;
      return;
    }
    out.send_to(boost::asio::buffer(b), to);
    if (r < drop_ + reorder_ + dup_) {
      out.send_to(boost::asio::buffer(b), to);
      ++duplicated;
    }
    if (held.bytes) {
      out.send_to(boost::asio::buffer(*held.bytes), to);
      held.bytes.reset();
    }
  }
  void receive_front() {
    front_.async_receive_from(boost::asio::buffer(buf_f_), client_, [this](const boost::system::error_code& ec, size_t n) {
      if (ec) return;
      pass(back_, board_, std::vector<uint8_t>(buf_f_.begin(), buf_f_.begin() + static_cast<long>(n)), held_up_);
      receive_front();
    });
  }
  void receive_back() {
    back_.async_receive_from(boost::asio::buffer(buf_b_), from_board_, [this](const boost::system::error_code& ec, size_t n) {
      if (ec) return;
      pass(front_, client_, std::vector<uint8_t>(buf_b_.begin(), buf_b_.begin() + static_cast<long>(n)), held_down_);
      receive_back();
    });
  }
  boost::asio::io_context io_;
  udp::socket front_, back_;
  udp::endpoint board_, client_, from_board_;
  std::array<uint8_t, 65536> buf_f_{}, buf_b_{};
  double drop_, dup_, reorder_;
  std::mt19937_64 rng_;
  Held held_up_, held_down_;
  std::atomic<bool> down_{false};
  std::thread thread_;
};

}  // namespace mxtb::host::fabric
