// The Beneš network of 2x2 switch elements that the photonic mesh is built from: the one
// definition of its wiring, used by the router (routing.h), the calibration lookup and the
// light-tracing mesh model (sim/mesh/photonic_mesh.h). Layout and numbering: docs/mesh.md.
#pragma once

#include "firmware/result.h"

#include <cstdint>
#include <vector>

namespace mxtb::firmware {

// bar: in0 -> out0, in1 -> out1; cross: in0 -> out1, in1 -> out0.
enum class ElementState : uint8_t { Bar = 0, Cross = 1 };
const char* to_string(ElementState s);

// One side (input or output, by context) of one element.
struct ElementPort {
  int element;  // stage * (ports / 2) + row
  int side;     // 0 or 1
  bool operator==(const ElementPort& o) const { return element == o.element && side == o.side; }
};

constexpr int kMinPorts = 4;
constexpr int kMaxPorts = 64;

// Empty when `ports` is a power of two in [kMinPorts, kMaxPorts]; otherwise why it is not.
std::string check_port_count(int ports);

class BenesTopology {
 public:
  // Fails when check_port_count(ports) does.
  static Result<BenesTopology> create(int ports);

  int ports() const { return ports_; }
  int stages() const { return stages_; }          // 2 * log2(ports) - 1
  int rows() const { return ports_ / 2; }         // elements per stage
  int elements() const { return stages_ * rows(); }
  int element_index(int stage, int row) const { return stage * rows() + row; }
  int stage_of(int element) const { return element / rows(); }
  int row_of(int element) const { return element % rows(); }

  // Where input port p enters: first-stage element p / 2, input p % 2.
  ElementPort input_of_port(int port) const { return {port / 2, port % 2}; }
  // The port that last-stage element `row`'s output `side` leaves by: 2 * row + side.
  int port_of_output(int row, int side) const { return 2 * row + side; }

  // Wiring between stage `boundary` and stage `boundary + 1` (boundary in [0, stages - 1)):
  // output position 2 * row + out of stage `boundary` feeds input position 2 * row' + in of
  // the next stage. A permutation of [0, ports).
  int next_input_position(int boundary, int output_position) const {
    return wiring_[static_cast<size_t>(boundary * ports_ + output_position)];
  }

  // Where the light entering an element's input `in_side` leaves, for a state.
  static int output_side(ElementState s, int in_side) { return s == ElementState::Bar ? in_side : 1 - in_side; }

  // The output port that input `port` reaches with these element states (size elements()).
  int trace(const std::vector<ElementState>& states, int port) const;

 private:
  BenesTopology() = default;
  void wire(int first_stage, int row_offset, int size);

  int ports_ = 0;
  int stages_ = 0;
  std::vector<int> wiring_;  // (stages - 1) * ports entries
};

}  // namespace mxtb::firmware
