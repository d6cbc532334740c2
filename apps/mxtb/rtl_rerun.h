// The line `mxtb` prints when a model's RTL assertion stops a run (sim::RtlAssertionFailure):
// the same command again, with a waveform up to the failing cycle where the command can write one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mxtb::app {

// Cycles of waveform before the failure that the suggested --fst window covers.
inline constexpr uint64_t kAssertWaveCycles = 2000;

inline std::string rtl_assert_rerun(const std::string& command, const std::vector<std::string>& args,
                                    uint64_t cycle) {
  std::string line = "./mxtb " + command;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    // The rerun chooses its own waveform.
    if (a == "--fst" || a == "--fst-from" || a == "--fst-to") {
      ++i;
      continue;
    }
    const bool quote = a.empty() || a.find_first_of(" \t'\"$\\") != std::string::npos;
    if (quote) {
      std::string q = "'";
      for (char c : a) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
      line += " " + q + "'";
    } else {
      line += " " + a;
    }
  }
  if (command == "link-pair") {
    const uint64_t from = cycle > kAssertWaveCycles ? cycle - kAssertWaveCycles : 0;
    line += " --fst rtl-assert.fst --fst-from " + std::to_string(from) + " --fst-to " + std::to_string(cycle + 1);
  } else if (command == "sim") {
    // The emulator dumps the window its host asks for (emu.WAVE_CTRL) from the traced models.
    line += " --fst rtl-assert.fst";
  }
  return line;
}

}  // namespace mxtb::app
