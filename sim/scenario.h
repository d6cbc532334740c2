// Scenario files: the one loader that turns a JSON scenario into a run's configuration, with
// errors that name the file, the field and what was wrong. Format: docs/scenarios.md.
#pragma once

#include "link_pair.h"

#include <nlohmann/json_fwd.hpp>

#include <stdexcept>
#include <string>

namespace mxtb::sim {

struct ScenarioError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

LinkPairConfig load_link_pair_scenario(const std::string& path);
LinkPairConfig parse_link_pair_scenario(const nlohmann::json& j, const std::string& source);

// The seeded random regression's scenario: channel impairments, traffic shapes and faults drawn
// from the seed, all of which the link must survive with exactly-once delivery.
LinkPairConfig random_link_pair_scenario(uint64_t seed);

// Sets the run's seed and everything derived from it (each channel's own error stream).
void set_seed(LinkPairConfig& cfg, uint64_t seed);

nlohmann::json to_json(const LinkPairConfig& cfg);
nlohmann::json to_json(const LinkPairResult& r);

}  // namespace mxtb::sim
