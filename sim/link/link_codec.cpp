#include "sim/link/link_codec.h"

namespace mxtb::sim {

uint32_t crc32(const uint8_t* data, size_t len) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < len; ++i) {
    crc ^= data[i];
    for (int b = 0; b < 8; ++b) crc = (crc >> 1) ^ ((crc & 1u) ? 0xEDB88320u : 0u);
  }
  return ~crc;
}

uint32_t crc32_advance(uint32_t state, uint64_t word) {
  for (int byte = 0; byte < 8; ++byte) {
    state ^= static_cast<uint8_t>(word >> (8 * byte));
    for (int b = 0; b < 8; ++b) state = (state >> 1) ^ ((state & 1u) ? 0xEDB88320u : 0u);
  }
  return state;
}

uint64_t Scrambler58::scramble(uint64_t plain) {
  uint64_t out = 0;
  for (int i = 0; i < 64; ++i) {
    uint64_t bit = ((plain >> i) ^ (state_ >> 38) ^ (state_ >> 57)) & 1u;
    out |= bit << i;
    state_ = ((state_ << 1) | bit) & ((uint64_t{1} << 58) - 1);
  }
  return out;
}

uint64_t Descrambler58::descramble(uint64_t line) {
  uint64_t out = 0;
  for (int i = 0; i < 64; ++i) {
    uint64_t in = (line >> i) & 1u;
    out |= ((in ^ (state_ >> 38) ^ (state_ >> 57)) & 1u) << i;
    state_ = ((state_ << 1) | in) & ((uint64_t{1} << 58) - 1);
  }
  return out;
}

namespace {
uint64_t identity_bits(EndpointIdentity id) { return (uint64_t{id.xpu} << 48) | (uint64_t{id.lane} << 40); }

uint32_t ctl_check(uint64_t word) {
  uint8_t bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(word >> (8 * i));
  return crc32(bytes, 8) & 0xFFFFFFu;
}
}  // namespace

bool ctl_bound(link::CtlType type) {
  return type != link::CtlType::Idle && type != link::CtlType::Ts1 && type != link::CtlType::Ts2;
}

uint64_t make_ctl(link::CtlType type, uint32_t fields, EndpointIdentity sender) {
  uint64_t low40 = (uint64_t{fields} << 8) | static_cast<uint8_t>(type);
  uint64_t covered = ctl_bound(type) ? (identity_bits(sender) | low40) : low40;
  return (uint64_t{ctl_check(covered)} << 40) | low40;
}

std::optional<Ctl> parse_ctl(uint64_t payload, EndpointIdentity sender) {
  uint64_t low40 = payload & ((uint64_t{1} << 40) - 1);
  auto type = link::to_ctl_type(payload & 0xFFu);
  if (!type) return std::nullopt;
  uint64_t covered = ctl_bound(*type) ? (identity_bits(sender) | low40) : low40;
  if ((payload >> 40) != ctl_check(covered)) return std::nullopt;
  return Ctl{*type, static_cast<uint32_t>(low40 >> 8)};
}

std::vector<Block> encode_frame(uint16_t seq, const std::vector<uint64_t>& words, bool eom, EndpointIdentity sender) {
  std::vector<Block> out;
  uint32_t sof_fields = seq | (static_cast<uint32_t>(words.size() & 0xFF) << 16) |
                        (static_cast<uint32_t>(eom) << 24);
  uint64_t sof = make_ctl(link::CtlType::Sof, sof_fields, sender);
  out.push_back({static_cast<uint8_t>(link::kSyncCtrl), sof});
  uint32_t crc = crc32_advance(0xFFFFFFFFu, identity_bits(sender) | (sof & ((uint64_t{1} << 40) - 1)));
  for (uint64_t w : words) {
    out.push_back({static_cast<uint8_t>(link::kSyncData), w});
    crc = crc32_advance(crc, w);
  }
  out.push_back({static_cast<uint8_t>(link::kSyncCtrl), make_ctl(link::CtlType::Eof, ~crc, sender)});
  return out;
}

}  // namespace mxtb::sim
