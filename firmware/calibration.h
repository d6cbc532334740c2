// Calibration lookup: each Mach-Zehnder element needs its own DAC code to be exactly bar or
// cross (fabrication spreads the phase-shifter response), so the firmware turns element states
// into codes through a per-element table. The table arrives as plain data; the JSON file loader
// lives in sim/mesh/photonic_mesh.h (the firmware stays free of parsers). Format: docs/mesh.md.
#pragma once

#include "firmware/benes.h"
#include "firmware/result.h"

#include <cstdint>
#include <vector>

namespace mxtb::firmware {

constexpr int kDacBits = 12;
constexpr uint16_t kDacMax = (1u << kDacBits) - 1;  // 4095

// The design values the elements scatter around; what a controller uses without calibration.
constexpr uint16_t kNominalBarCode = 800;
constexpr uint16_t kNominalCrossCode = 2600;

struct ElementCal {
  uint16_t bar_code = kNominalBarCode;
  uint16_t cross_code = kNominalCrossCode;
  bool operator==(const ElementCal& o) const { return bar_code == o.bar_code && cross_code == o.cross_code; }
  bool operator!=(const ElementCal& o) const { return !(*this == o); }
};

// Empty when the table has one entry per element, every code fits kDacBits and each element's
// bar and cross codes differ; otherwise what is wrong, naming the element.
std::string check_calibration(int elements, const std::vector<ElementCal>& table);

// Every element at the nominal codes.
std::vector<ElementCal> nominal_calibration(int elements);

// The DAC code of every element for these states.
Result<std::vector<uint16_t>> dac_codes(const std::vector<ElementState>& states, const std::vector<ElementCal>& table);

}  // namespace mxtb::firmware
