// Shared by the mesh tests: route a permutation, program the mesh through the calibration table,
// let it settle, and check by tracing light which outputs are lit from which inputs.
#pragma once

#include "firmware/calibration.h"
#include "firmware/routing.h"
#include "sim/mesh/photonic_mesh.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace mxtb::testing {

// Empty when every mapped output is Lit from the input that maps to it and no other output is
// Lit; otherwise the first difference. Advances `now_ns` past the settle.
inline std::string realize_and_check(sim::PhotonicMesh& mesh, const std::vector<int>& perm,
                                     const std::vector<firmware::ElementCal>& table, double& now_ns) {
  auto states = firmware::route(mesh.topology(), perm);
  if (!states) return "route failed: " + states.error();
  auto codes = firmware::dac_codes(states.value(), table);
  if (!codes) return "calibration failed: " + codes.error();
  mesh.write_all(codes.value(), now_ns);
  now_ns += 40 * mesh.tau_ns();  // exp(-40): settled far below any leak that matters
  const sim::Propagation light = mesh.propagate(now_ns);
  std::vector<int> source(perm.size(), -1);
  for (size_t p = 0; p < perm.size(); ++p)
    if (perm[p] >= 0 && mesh.input_lit(static_cast<int>(p))) source[static_cast<size_t>(perm[p])] = static_cast<int>(p);
  for (size_t out = 0; out < perm.size(); ++out) {
    const sim::OutputReading& r = light.outputs[out];
    const bool want_lit = source[out] >= 0;
    const bool is_lit = r.verdict == sim::Verdict::Lit;
    if (want_lit != is_lit || (want_lit && r.dominant_input != source[out]))
      return fmt::format("output {}: want {} from input {}, got {} from input {} (signal {:.2f} dBm, SXR {:.2f} dB)", out,
                         want_lit ? "lit" : "not lit", source[out], sim::to_string(r.verdict), r.dominant_input,
                         r.signal_dbm, r.sxr_db);
  }
  return "";
}

inline std::string perm_text(const std::vector<int>& perm) {
  std::string s;
  for (int t : perm) s += fmt::format("{}{}", s.empty() ? "" : " ", t);
  return s;
}

}  // namespace mxtb::testing
