// The rack campaign's blast-radius summary (apps/mxtb/rack_blast.h) over seed JSONs written here:
// failovers land in their case, only clean ones (committed, no second death, no silent board)
// count towards the blast radius and times, and seeds that are not a rack's are left out.
#include "apps/mxtb/rack_blast.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

using nlohmann::json;

namespace {

json record(bool same_server, const char* outcome, int boards, int outside, double placed_us, const json& job) {
  json outside_xpus = json::array();
  for (int i = 0; i < outside; ++i) outside_xpus.push_back("9." + std::to_string(i));
  return {{"failed", "0.1"},
          {"spare", "0.4"},
          {"same_server", same_server},
          {"outcome", outcome},
          {"blast_radius",
           {{"boards_touched", std::vector<int>(static_cast<size_t>(boards), 0)},
            {"xpus_left_active", {"0.0", "0.1"}},
            {"xpus_left_active_outside_circuits", outside_xpus},
            {"lanes_left_active_by_server", {6, 4}},
            {"scoreboard_errors", 0},
            {"words_lost", 0}}},
          {"placed_ns", placed_us * 1e3},
          {"total_ns", job.is_null() ? placed_us * 1e3 : placed_us * 1e3 + 50e3},
          {"job", job}};
}

std::string write_seed(const std::filesystem::path& dir, int seed, const json& j) {
  const auto path = dir / ("seed-" + std::to_string(seed) + ".json");
  std::ofstream(path) << j.dump();
  return path.string();
}

}  // namespace

TEST_CASE("rack blast radius: each failover in its case, only clean ones measured, other seeds left out") {
  const auto dir = std::filesystem::temp_directory_path() / ("mxtb-blast-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const json job{{"collectives_aborted", 1}, {"collectives_wrong", 0}};
  json second_death = record(true, "committed", 1, 0, 100, job);
  second_death["killed_during_transaction"] = "1.1";
  json no_spare = record(false, "committed", 0, 0, 0, nullptr);
  no_spare["spare"] = nullptr;
  no_spare["outcome"] = nullptr;
  mxtb::host::regress::RegressResult r;
  auto add = [&](int seed, const json& j) {
    mxtb::host::regress::SeedResult s;
    s.seed = static_cast<uint64_t>(seed);
    s.json_path = write_seed(dir, seed, j);
    r.runs.push_back(s);
  };
  // Each board's circuits moved though they stayed (ReportWord CircuitsMoved), where read: an
  // outside XPU with none moved is what a mesh's rearrangement does not explain.
  json outside_unmoved = record(true, "committed", 1, 1, 150, job);
  outside_unmoved["circuits_moved_by_server"] = {0, 0};
  add(1, {{"rack", "rack-2x1"}, {"failovers", {outside_unmoved, record(false, "committed", 2, 3, 250, job)}}});
  add(2, {{"rack", "rack-2x1"}, {"failovers", {record(true, "committed", 1, 0, 130, nullptr), second_death, no_spare}}});
  add(3, {{"rack", "rack-2x2"}, {"failovers", {record(false, "rolled back", 2, 0, 400, job)}}});
  // The migration baseline's records: its own case, "migrated" as its clean outcome, its ranks
  // relaunched and its modeled state counted; one that found no free block is counted, not measured.
  json migrated = record(false, "migrated", 4, 0, 0, job);
  migrated["baseline"] = "migration";
  migrated["spare"] = nullptr;
  migrated["placed_ns"] = nullptr;
  migrated["blast_radius"]["ranks_relaunched"] = 8;
  migrated["state"] = {{"ns", 3.4e9}};
  json stuck = migrated;
  stuck["outcome"] = nullptr;
  json restored = record(true, "committed", 1, 0, 120, job);
  restored["state"] = {{"ns", 0.86e9}};
  restored["circuits_moved_by_server"] = {0, 0, 0, 0};
  // Beside other tenants (their jobs checked): counted with their aborts.
  json beside = record(true, "committed", 1, 0, 110, job);
  beside["blast_radius"]["other_tenants"] = 2;
  beside["blast_radius"]["other_tenants_collectives_aborted"] = 1;
  beside["circuits_moved_by_server"] = {0, 3, 0, 0};  // a mesh moved: not counted as unexplained
  add(5, {{"rack", "rack-2x2"}, {"failovers", {migrated, stuck, restored, beside}}});
  add(4, {{"scenario", "a single server's demo"}, {"failovers", {record(true, "committed", 1, 0, 1, job)}}});  // not a rack seed
  mxtb::host::regress::SeedResult missing;
  missing.json_path = (dir / "none.json").string();
  r.runs.push_back(missing);

  const json s = mxtb::app::rack_blast_summary(r);
  CHECK(s["seeds"] == 4);
  const json& same = s["cases"][0];
  CHECK(same["case"] == "spare in the same server");
  CHECK(same["failovers"] == 5);
  CHECK(same["committed"] == 5);
  CHECK(same["clean"] == 4);  // the one with a second death is not measured
  CHECK(same["with_job"] == 3);
  CHECK(same["beside_other_tenants"] == 1);
  CHECK(same["other_tenants_collectives_aborted"] == 1);
  CHECK(s["cases"][1]["beside_other_tenants"] == 0);
  CHECK(same["ranks_restarted"]["mean"].get<double>() == doctest::Approx(1.0));
  CHECK(same["state_ms_modeled"]["n"] == 1);
  CHECK(same["boards_touched"]["mean"].get<double>() == doctest::Approx(1.0));
  CHECK(same["xpus_left_active_outside_circuits"]["max"].get<double>() == doctest::Approx(1.0));
  CHECK(same["no_mesh_moved"]["failovers"] == 2);  // seed 1's and `restored`; `beside` moved circuits
  CHECK(same["no_mesh_moved"]["with_outside_xpus"] == 1);
  CHECK(same["no_mesh_moved"]["outside_xpus_max"].get<double>() == doctest::Approx(1.0));
  CHECK(same["lanes_left_active"]["p50"].get<double>() == doctest::Approx(10.0));
  CHECK(same["placed_us"]["n"] == 4);
  CHECK(same["first_collective_us"]["n"] == 3);
  CHECK(same["first_collective_us"]["p50"].get<double>() == doctest::Approx(170.0));
  const json& other = s["cases"][1];
  CHECK(other["failovers"] == 2);
  CHECK(other["committed"] == 1);  // the rolled-back one is counted, not measured
  CHECK(other["xpus_left_active_outside_circuits"]["max"].get<double>() == doctest::Approx(3.0));
  CHECK(other["no_mesh_moved"].is_null());  // its moves were never read
  CHECK(s["cases"][2]["failovers"] == 1);
  CHECK(s["cases"][2]["committed"] == 0);
  const json& migration = s["cases"][3];
  CHECK(migration["case"] == "migration (static torus)");
  CHECK(migration["failovers"] == 2);
  CHECK(migration["committed"] == 1);
  CHECK(migration["clean"] == 1);
  CHECK(migration["boards_touched"]["mean"].get<double>() == doctest::Approx(4.0));
  CHECK(migration["ranks_restarted"]["mean"].get<double>() == doctest::Approx(8.0));
  CHECK(migration["state_ms_modeled"]["p50"].get<double>() == doctest::Approx(3400.0));
  CHECK(migration["placed_us"].is_null());
  const std::string table = mxtb::app::format_rack_blast(s);
  CHECK(table.find("spare in another server") != std::string::npos);
  CHECK(table.find("4 seeds") != std::string::npos);
  CHECK(table.find("migration (static torus)") != std::string::npos);
  CHECK(table.find("other tenants aborted") != std::string::npos);
  CHECK(table.find("1 in 1") != std::string::npos);
  CHECK(table.find("outside, no mesh moved") != std::string::npos);
  CHECK(table.find("1 in 2") != std::string::npos);
  std::filesystem::remove_all(dir);
}
