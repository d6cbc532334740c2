#include "firmware/benes.h"

#include <string>

namespace mxtb::firmware {

const char* to_string(ElementState s) { return s == ElementState::Bar ? "bar" : "cross"; }

namespace {
int log2_of(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}
}  // namespace

std::string check_port_count(int ports) {
  if (ports < kMinPorts || ports > kMaxPorts)
    return "port count " + std::to_string(ports) + " is out of range " + std::to_string(kMinPorts) + ".." +
           std::to_string(kMaxPorts);
  if ((ports & (ports - 1)) != 0) return "port count " + std::to_string(ports) + " is not a power of two";
  return "";
}

Result<BenesTopology> BenesTopology::create(int ports) {
  std::string why = check_port_count(ports);
  if (!why.empty()) return Result<BenesTopology>::failure(why);
  BenesTopology t;
  t.ports_ = ports;
  t.stages_ = 2 * log2_of(ports) - 1;
  t.wiring_.assign(static_cast<size_t>((t.stages_ - 1) * ports), -1);
  t.wire(0, 0, ports);
  return Result<BenesTopology>::success(std::move(t));
}

// The recursive construction. A sub-network of `size` ports starts at `first_stage`, occupies
// rows [row_offset, row_offset + size / 2) and stages [first_stage, first_stage + 2 log2(size) - 2].
// Its first-stage element i sends out0 to the upper half-size sub-network's input i and out1 to
// the lower one's input i; its last stage mirrors that (upper output i -> element i's in0, lower
// output i -> element i's in1). The upper half occupies the first size / 4 rows, the lower the rest.
void BenesTopology::wire(int first_stage, int row_offset, int size) {
  if (size == 2) return;  // one element, no inner wiring
  const int last_stage = first_stage + 2 * log2_of(size) - 2;
  const int half_rows = size / 4;  // rows of each half-size sub-network
  for (int i = 0; i < size / 2; ++i) {
    for (int half = 0; half < 2; ++half) {
      const int sub_row = row_offset + half * half_rows + i / 2;  // the half's element for its port i
      // Into the half: first-stage element i, output `half` -> half's input i.
      wiring_[static_cast<size_t>(first_stage * ports_ + 2 * (row_offset + i) + half)] = 2 * sub_row + i % 2;
      // Out of the half: half's output i -> last-stage element i, input `half`.
      wiring_[static_cast<size_t>((last_stage - 1) * ports_ + 2 * sub_row + i % 2)] = 2 * (row_offset + i) + half;
    }
  }
  wire(first_stage + 1, row_offset, size / 2);
  wire(first_stage + 1, row_offset + half_rows, size / 2);
}

int BenesTopology::trace(const std::vector<ElementState>& states, int port) const {
  int position = port;  // input position 2 * row + in at the current stage
  for (int stage = 0; stage < stages_; ++stage) {
    const int row = position / 2;
    const int out = output_side(states[static_cast<size_t>(element_index(stage, row))], position % 2);
    const int out_position = 2 * row + out;
    if (stage == stages_ - 1) return port_of_output(row, out);
    position = next_input_position(stage, out_position);
  }
  return -1;  // unreachable: stages_ >= 3
}

}  // namespace mxtb::firmware
