// The one-process transport (nothing to send, its collectives the identity), and the MPI side
// that needs no launch: detecting a launcher, the launcher command.
#include <doctest/doctest.h>

#include <cstdlib>
#include <stdexcept>

#include "sim/rack/mpi_exchange.h"
#include "sim/rack/window_exchange.h"

namespace rack = mxtb::sim::rack;

TEST_CASE("local_exchange: one process, no peers, collectives on itself") {
  auto ex = rack::local_exchange();
  CHECK(ex->rank() == 0);
  CHECK(ex->size() == 1);
  ex->introduce("servers 0-15");
  ex->set_peers({});
  CHECK_THROWS_AS(ex->set_peers({1}), rack::RackTransportError);
  auto inbox = ex->exchange({{1, 2, 3}});
  REQUIRE(inbox.size() == 1);
  CHECK(inbox[0].empty());
  CHECK_THROWS_AS(ex->exchange({{}, {}}), rack::RackTransportError);
  CHECK(ex->gather("mine") == std::vector<std::string>{"mine"});
  CHECK(ex->min_all(42) == 42);
  CHECK_NOTHROW(ex->check_same("the rack file's digest", "abc"));
}

TEST_CASE("launched_by_mpiexec: hydra's, Open MPI's and Slurm's variables") {
  for (const char* v : {"PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID", "PMI_FD"}) unsetenv(v);
  CHECK_FALSE(rack::launched_by_mpiexec());
  setenv("PMI_RANK", "0", 1);
  CHECK_FALSE(rack::launched_by_mpiexec());  // PMI_RANK alone: not a launch
  setenv("PMI_SIZE", "2", 1);
  CHECK(rack::launched_by_mpiexec());
  unsetenv("PMI_RANK");
  unsetenv("PMI_SIZE");
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  CHECK(rack::launched_by_mpiexec());
  unsetenv("OMPI_COMM_WORLD_RANK");
  setenv("SLURM_PROCID", "3", 1);
  CHECK_FALSE(rack::launched_by_mpiexec());  // srun without PMI starts independent processes
  setenv("PMI_FD", "5", 1);
  CHECK(rack::launched_by_mpiexec());
  unsetenv("SLURM_PROCID");
  unsetenv("PMI_FD");
}

TEST_CASE("mpiexec_command: hydra, the process count, binding off, then the child's argv") {
  auto argv = rack::mpiexec_command(4, {"mxtb", "rack", "--file", "r.json"});
  REQUIRE(argv.size() == 9);
  CHECK(argv[0].find("mpiexec") != std::string::npos);
  CHECK(std::vector<std::string>(argv.begin() + 1, argv.end()) ==
        std::vector<std::string>{"-n", "4", "-bind-to", "none", "mxtb", "rack", "--file", "r.json"});
  CHECK_THROWS_AS(rack::mpiexec_command(0, {"mxtb"}), std::invalid_argument);
  CHECK_THROWS_AS(rack::mpiexec_command(2, {}), std::invalid_argument);
}
