// Writes the calibration file of a mesh: the codes that make each element exactly bar and cross,
// i.e. the true codes the mesh model draws from its seed. Stands in for the lab's calibration
// sweep. traces/calibration/mesh32.json was made with:  mesh_gen_calibration traces/calibration/mesh32.json
#include "sim/mesh/photonic_mesh.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    fmt::print(stderr, "usage: mesh_gen_calibration OUT.json [PORTS (32)] [SEED (the default config's)]\n");
    return 2;
  }
  try {
    const int ports = argc > 2 ? std::atoi(argv[2]) : 32;
    const uint64_t seed = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : mxtb::sim::MeshConfig{}.seed;
    mxtb::sim::MeshCalibration cal{ports, mxtb::sim::draw_true_codes(ports, seed)};
    mxtb::sim::save_calibration(
        argv[1], cal,
        fmt::format("true element codes of the mesh model, {} ports, seed {}, default spread; "
                    "written by mesh_gen_calibration (testbench/sim/gen_calibration.cpp)",
                    ports, seed));
    fmt::print("wrote {} ({} elements)\n", argv[1], cal.elements.size());
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }
  return 0;
}
