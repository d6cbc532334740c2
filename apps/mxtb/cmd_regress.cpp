// `mxtb regress`: seeded random failover scenarios, one child process each (host/report/regress.h).
// The child is `mxtb demo --scenario-seed {seed}`: the emulator on loopback and the failover
// manager over IPbus, as in the main job, for a scenario drawn from the seed.
#include "apps/mxtb/args.h"
#include "apps/mxtb/commands.h"

#include "host/fabric/emulator_process.h"
#include "host/report/regress.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace mxtb::app {

namespace {

void write_text(const std::string& path, const std::string& text) {
  auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir);
  std::ofstream out(path);
  if (!out || !(out << text)) throw std::runtime_error(fmt::format("cannot write {}", path));
}

}  // namespace

int cmd_regress(const ArgList& argv) {
  Args args(argv, {"--seeds", "--jobs", "--first-seed", "--json", "--junit", "--out"}, {"--quiet"});
  if (!args.has("--seeds")) throw UsageError("--seeds N is required (how many random failover scenarios)");
  host::report::RegressConfig cfg;
  cfg.seeds = args.u64("--seeds", 0);
  if (cfg.seeds < 1 || cfg.seeds > 100000) throw UsageError(fmt::format("--seeds must be in [1, 100000], got {}", cfg.seeds));
  uint64_t jobs = args.u64("--jobs", 0);
  if (args.has("--jobs") && (jobs < 1 || jobs > 256)) throw UsageError(fmt::format("--jobs must be in [1, 256], got {}", jobs));
  cfg.jobs = static_cast<unsigned>(jobs);
  cfg.first_seed = args.u64("--first-seed", 1);
  cfg.work_dir = args.str("--out", "out/regress");
  cfg.progress = !args.has("--quiet");
  cfg.child_template = {host::fabric::self_executable(), "demo", "--scenario-seed", "{seed}", "--json", "{json}",
                        "--out", cfg.work_dir + "/seed-{seed}", "--no-waves"};
  std::string json_path = args.str("--json", cfg.work_dir + "/regress.json");
  std::string junit_path = args.str("--junit", cfg.work_dir + "/junit.xml");

  fmt::print("mxtb regress: seeds {}..{} ({} runs), child: {}\n", cfg.first_seed, cfg.first_seed + cfg.seeds - 1, cfg.seeds,
             host::report::shell_quote(cfg.child_template));
  std::fflush(stdout);
  host::report::RegressResult r = host::report::run_regress(cfg);
  fmt::print("{}", host::report::format_summary(r));
  write_text(json_path, host::report::to_json(r).dump(2) + "\n");
  write_text(junit_path, host::report::junit_xml(r));
  fmt::print("  wrote {} and {}\n", json_path, junit_path);
  fmt::print("{}\n", r.failed() == 0 ? "PASS" : fmt::format("FAIL: {} of {} seeds", r.failed(), r.runs.size()));
  return r.failed() == 0 ? 0 : 1;
}

}  // namespace mxtb::app
