// The one way sim/ reads a JSON input file: errors name the file and say whether it could not be
// opened or is not JSON, as the caller's own error type (ScenarioError, MeshError, ...).
#pragma once

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

namespace mxtb::sim {

template <class Error>
nlohmann::json read_json_file(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot open {}", path, what));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }
}

}  // namespace mxtb::sim
