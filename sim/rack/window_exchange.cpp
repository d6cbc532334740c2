// The transport of a rack held by one process (sim/rack/window_exchange.h): every server is local,
// so there is nothing to send, nobody to wait for and nobody to disagree with.
#include "sim/rack/window_exchange.h"

namespace mxtb::sim::rack {

namespace {

class LocalExchange final : public WindowExchange {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void introduce(const std::string&) override {}
  void check_same(const std::string&, const std::string&) override {}
  void set_peers(const std::vector<int>& peers) override {
    if (!peers.empty()) {
      throw RackTransportError("a rack held by one process has no peers, yet set_peers was given " +
                               std::to_string(peers.size()));
    }
  }
  std::vector<std::vector<uint8_t>> exchange(const std::vector<std::vector<uint8_t>>& outbox) override {
    if (outbox.size() != 1) {
      throw RackTransportError("exchange: the outbox holds " + std::to_string(outbox.size()) +
                               " entries, one per process expected (1)");
    }
    return {std::vector<uint8_t>{}};
  }
  bool window_arrives(std::chrono::microseconds) override { return false; }  // no peers, no messages
  std::vector<std::string> gather(const std::string& mine) override { return {mine}; }
  uint64_t min_all(uint64_t value) override { return value; }
};

}  // namespace

std::unique_ptr<WindowExchange> local_exchange() { return std::make_unique<LocalExchange>(); }

}  // namespace mxtb::sim::rack
