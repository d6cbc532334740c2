#include "apps/mxtb/engine_options.h"

#include <fmt/format.h>

#include <cstdlib>

namespace mxtb::app {

void apply_engine_options(const Args& args, sim::ServerConfig& cfg) {
  const char* env_engine = std::getenv("MXTB_ENGINE");
  const char* env_threads = std::getenv("MXTB_THREADS");
  std::string engine = args.str("--engine", env_engine ? env_engine : "fast");
  auto e = sim::server_engine_from_string(engine);
  if (!e)
    throw UsageError(fmt::format("{} must be reference or fast, got '{}'", args.has("--engine") ? "--engine" : "MXTB_ENGINE",
                                 engine));
  cfg.engine = *e;
  uint64_t threads = 1;
  if (args.has("--threads")) {
    threads = args.u64("--threads", 1);
  } else if (env_threads) {
    char* end = nullptr;
    threads = std::strtoull(env_threads, &end, 10);
    if (*env_threads == '\0' || *end != '\0' || threads == 0)
      throw UsageError(fmt::format("MXTB_THREADS must be a thread count, got '{}'", env_threads));
  }
  const char* which = args.has("--threads") ? "--threads" : "MXTB_THREADS";
  if (threads < 1 || threads > 64) throw UsageError(fmt::format("{} must be in 1..64, got {}", which, threads));
  if (threads > 1 && cfg.engine == sim::ServerEngine::Reference)
    throw UsageError(fmt::format("{} {}: the reference engine runs on one thread", which, threads));
  cfg.threads = static_cast<int>(threads);
}

std::string resolve_ipbus_target(const Args& args, const std::optional<std::string>& scenario_target) {
  const char* env_target = std::getenv("MXTB_IPBUS_TARGET");
  const char* from = "--ipbus-target";
  std::string target;
  if (args.has("--ipbus-target")) {
    target = args.str("--ipbus-target");
  } else if (scenario_target) {
    from = "the scenario's ipbus_target";
    target = *scenario_target;
  } else if (env_target) {
    from = "MXTB_IPBUS_TARGET";
    target = env_target;
  } else {
    target = "rtl";
  }
  if (target != "rtl" && target != "cpp") throw UsageError(fmt::format("{} must be rtl or cpp, got '{}'", from, target));
  return target;
}

std::pair<uint32_t, uint32_t> parse_inject_stall(const std::string& value) {
  auto bad = [&](const std::string& why) { return UsageError(fmt::format("--inject-stall '{}': {} (want MS/EVERY, e.g. 1500/40)", value, why)); };
  auto slash = value.find('/');
  if (slash == std::string::npos) throw bad("no '/'");
  auto number = [&](const std::string& t, uint64_t max, const char* name) {
    bool digits = !t.empty() && t.size() <= 9 && t.find_first_not_of("0123456789") == std::string::npos;
    uint64_t v = digits ? std::stoull(t) : 0;
    if (v == 0 || v > max) throw bad(fmt::format("{} must be 1..{}", name, max));
    return static_cast<uint32_t>(v);
  };
  return {number(value.substr(0, slash), 600'000, "MS"), number(value.substr(slash + 1), 1'000'000, "EVERY")};
}

}  // namespace mxtb::app
