#include "sim/collective/state_transfer.h"

#include <fmt/format.h>

#include <stdexcept>

namespace mxtb::sim {

uint64_t state_word(uint64_t seed, int dest, uint64_t index) {
  uint64_t h = seed * 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(dest) + 1) * 0xD6E8FEB86659FD93ull ^ index;
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 29;
  h *= 0x94D049BB133111EBull;
  return h ^ (h >> 32);
}

std::vector<RingHop> transfer_circuits(const protocol::ServerShape& shape, const std::vector<int>& port_target,
                                       const std::vector<int>& sources, int dest) {
  std::vector<RingHop> out;
  const int lanes = shape.lanes_per_xpu;
  for (int s : sources)
    for (int i = 0; i < lanes; ++i) {
      const int tx = s * lanes + i;
      const int rx = port_target[static_cast<size_t>(tx)];
      if (rx >= 0 && rx < shape.links() && rx / lanes == dest) out.push_back({tx, rx});
    }
  return out;
}

StateTransfer::StateTransfer(TransferSpec spec, const protocol::ServerShape& shape) : spec_(std::move(spec)) {
  if (spec_.circuits.empty()) throw std::invalid_argument(fmt::format("no circuit into XPU {} to restore over", spec_.dest));
  if (spec_.bytes == 0 || spec_.bytes % 8) throw std::invalid_argument(fmt::format("{} bytes is not a whole number of 8-byte lane words", spec_.bytes));
  if (spec_.message_words == 0) throw std::invalid_argument("messages of 0 words");
  words_ = spec_.bytes / 8;
  const size_t n = spec_.circuits.size();
  tx_share_.assign(static_cast<size_t>(shape.links()), -1);
  rx_share_.assign(static_cast<size_t>(shape.links()), -1);
  for (size_t c = 0; c < n; ++c) {
    const RingHop& h = spec_.circuits[c];
    if (h.tx_link < 0 || h.tx_link >= shape.links() || h.rx_link < 0 || h.rx_link >= shape.links() ||
        h.rx_link / shape.lanes_per_xpu != spec_.dest || tx_share_[static_cast<size_t>(h.tx_link)] >= 0 ||
        rx_share_[static_cast<size_t>(h.rx_link)] >= 0)
      throw std::invalid_argument(fmt::format("circuit {} (link {} to link {}) is not a distinct circuit into XPU {}", c,
                                              h.tx_link, h.rx_link, spec_.dest));
    tx_share_[static_cast<size_t>(h.tx_link)] = static_cast<int>(c);
    rx_share_[static_cast<size_t>(h.rx_link)] = static_cast<int>(c);
    Share s;
    s.first = words_ * c / n;
    s.words = words_ * (c + 1) / n - s.first;
    shares_.push_back(s);
  }
}

bool StateTransfer::owns(int link) const {
  return tx_share_[static_cast<size_t>(link)] >= 0 || rx_share_[static_cast<size_t>(link)] >= 0;
}

LaneProgram::Drive StateTransfer::drive(int link) {
  const int c = tx_share_[static_cast<size_t>(link)];
  if (c < 0) return {false, 0, false};
  const Share& s = shares_[static_cast<size_t>(c)];
  if (s.sent >= s.words) return {false, 0, false};
  const bool last = (s.sent + 1) % spec_.message_words == 0 || s.sent + 1 == s.words;
  return {true, state_word(spec_.seed, spec_.dest, s.first + s.sent), last};
}

void StateTransfer::fire(int link) { ++shares_[static_cast<size_t>(tx_share_[static_cast<size_t>(link)])].sent; }

bool StateTransfer::message_open(int link) const {
  const int c = tx_share_[static_cast<size_t>(link)];
  if (c < 0) return false;
  const Share& s = shares_[static_cast<size_t>(c)];
  return s.sent % spec_.message_words != 0 && s.sent < s.words;
}

void StateTransfer::deliver(int link, uint64_t data, bool last, uint64_t cycle) {
  const int c = rx_share_[static_cast<size_t>(link)];
  auto bad = [&](const std::string& what) {
    if (wrong_++ == 0) first_error_ = what;
  };
  if (c < 0) return bad(fmt::format("link {} received a word but carries no share of the state", link));
  Share& s = shares_[static_cast<size_t>(c)];
  if (s.got >= s.words) return bad(fmt::format("link {} received a word after its share's last", link));
  const bool want_last = (s.got + 1) % spec_.message_words == 0 || s.got + 1 == s.words;
  if (data != state_word(spec_.seed, spec_.dest, s.first + s.got) || last != want_last)
    bad(fmt::format("link {}: state word {} arrived {}", link, s.first + s.got,
                    last != want_last ? "with the wrong end-of-message flag" : "different"));
  if (last) ++messages_;
  ++s.got;
  ++received_;
  end_cycle_ = cycle;
}

}  // namespace mxtb::sim
