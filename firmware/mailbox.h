// Host-to-firmware mailbox in the controller's scratch RAM (SCRATCH window), so the host reaches
// the firmware over the same register protocol as everything else. The host writes the opcode
// and arguments, then a new sequence number into kDoorbell; the firmware answers by writing the
// status and any data, then echoing the sequence number into kReplySeq. Commands: docs/firmware.md.
#pragma once

#include <cstdint>

namespace mxtb::firmware::mailbox {

inline constexpr uint32_t kDoorbell = 0;     // host: sequence number of the new command
inline constexpr uint32_t kOpcode = 1;
inline constexpr uint32_t kArgs = 2;         // up to 2 + ports words
inline constexpr uint32_t kReplySeq = 128;   // firmware: sequence number of the command answered
inline constexpr uint32_t kReplyStatus = 129;
inline constexpr uint32_t kReplyData = 130;
inline constexpr uint32_t kUnusedPort = 0xFFFFFFFFu;

enum class Opcode : uint32_t {
  SetPortMap = 1,   // args: ports words, target port or kUnusedPort
  ArmBackup = 2,    // args: failed-XPU, spare, then ports words of the backup map
  Report = 3,       // reply data: see Report* below
};

// Report reply words after kReplyData.
inline constexpr uint32_t kReportActiveGen = 0;
inline constexpr uint32_t kReportArmedXpu = 1;      // kUnusedPort when nothing is armed
inline constexpr uint32_t kReportFailovers = 2;
inline constexpr uint32_t kReportLastFailed = 3;
inline constexpr uint32_t kReportLastSpare = 4;
inline constexpr uint32_t kReportLastDetectToCommitNs = 5;
inline constexpr uint32_t kReportLastCommitToDoneNs = 6;

}  // namespace mxtb::firmware::mailbox
