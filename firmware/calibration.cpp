#include "firmware/calibration.h"

#include <string>

namespace mxtb::firmware {

std::string check_calibration(int elements, const std::vector<ElementCal>& table) {
  if (table.size() != static_cast<size_t>(elements))
    return "calibration table has " + std::to_string(table.size()) + " elements, the mesh has " +
           std::to_string(elements);
  for (size_t e = 0; e < table.size(); ++e) {
    const ElementCal& c = table[e];
    if (c.bar_code > kDacMax || c.cross_code > kDacMax)
      return "calibration of element " + std::to_string(e) + ": code out of the " + std::to_string(kDacBits) +
             "-bit DAC range (bar " + std::to_string(c.bar_code) + ", cross " + std::to_string(c.cross_code) + ")";
    if (c.bar_code == c.cross_code)
      return "calibration of element " + std::to_string(e) + ": bar and cross codes are both " +
             std::to_string(c.bar_code);
  }
  return "";
}

std::vector<ElementCal> nominal_calibration(int elements) {
  return std::vector<ElementCal>(static_cast<size_t>(elements), ElementCal{});
}

Result<std::vector<uint16_t>> dac_codes(const std::vector<ElementState>& states, const std::vector<ElementCal>& table) {
  std::string why = check_calibration(static_cast<int>(states.size()), table);
  if (!why.empty()) return Result<std::vector<uint16_t>>::failure(why);
  std::vector<uint16_t> codes(states.size());
  for (size_t e = 0; e < states.size(); ++e)
    codes[e] = states[e] == ElementState::Bar ? table[e].bar_code : table[e].cross_code;
  return Result<std::vector<uint16_t>>::success(std::move(codes));
}

}  // namespace mxtb::firmware
