#include "host/comm/communicator.h"
#include "host/comm/rank.h"
#include "host/comm/rank_group.h"

#include <doctest/doctest.h>

#if MXTB_HAVE_NCCL
#include <cuda_runtime_api.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>
#include <vector>
#include <csignal>
#include <unistd.h>

using namespace mxtb::host::comm;
using namespace std::chrono_literals;

namespace {

// What the unknown-library error lists: the backends this build has.
#if MXTB_HAVE_NCCL
const std::string kBuilt = "gloo, nccl";
#else
const std::string kBuilt = "gloo";
#endif

// The rank processes' folders (rendezvous store, rank logs), removed when the program ends unless
// MXTB_KEEP_SCRATCH is set (to read a failed run's rank logs): each run left 18 behind in /tmp.
struct ScratchDirs {
  std::vector<std::filesystem::path> dirs;
  ~ScratchDirs() {
    if (std::getenv("MXTB_KEEP_SCRATCH")) return;
    std::error_code ec;
    for (const auto& d : dirs) std::filesystem::remove_all(d, ec);
  }
};
ScratchDirs scratch;

std::string fresh_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("mxtb-comm-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  scratch.dirs.push_back(d);
  return d.string();
}

RankGroupConfig group_config(const std::string& name, Restart restart) {
  RankGroupConfig c;
  c.executable = MXTB_EXE;
  c.work_dir = fresh_dir(name);
  c.restart = restart;
  c.count = 4096;
  c.checkpoint_bytes = 1 << 20;
  c.timeout = 8s;
  return c;
}

}  // namespace

TEST_CASE("gloo: three ranks in threads form a communicator and all-reduce exactly") {
  const std::string dir = fresh_dir("threads");
  std::vector<std::vector<float>> data(3);
  std::vector<std::string> errors(3);
  // Closed only once every rank's all-reduce returned, as a job closes its communicator: a rank
  // that closes its connections as soon as its own part is done can fail a slower peer's receive
  // still in flight ("Connection closed by peer", seen under load).
  std::vector<std::unique_ptr<Communicator>> comms(3);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 3; ++r)
    ranks.emplace_back([&, r] {
      try {
        auto& c = comms[static_cast<size_t>(r)];
        c = connect("gloo", Rendezvous{dir, "gen-1", r, 3, 10s});
        CHECK(c->library() == "gloo");
        data[static_cast<size_t>(r)].resize(1000);
        for (uint64_t e = 0; e < 1000; ++e) data[static_cast<size_t>(r)][e] = check_input(5, r, e);
        c->all_reduce(data[static_cast<size_t>(r)]);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  for (auto& t : ranks) t.join();
  for (int r = 0; r < 3; ++r) {
    CHECK_MESSAGE(errors[static_cast<size_t>(r)].empty(), errors[static_cast<size_t>(r)]);
    CHECK(check_wrong(data[static_cast<size_t>(r)], 5, 3) == 0);
  }
  // The check catches a wrong element.
  data[0][17] += 1;
  CHECK(check_wrong(data[0], 5, 3) == 1);
  CHECK_THROWS_WITH_AS(connect("mpi", Rendezvous{dir, "x", 0, 1}),
                       ("unknown collective library 'mpi' (this build has: " + kBuilt + ")").c_str(),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(connect("gloo", Rendezvous{dir, "x", 2, 2}), "rank 2 of 2: not a rank of the communicator",
                       std::invalid_argument);
}

#if MXTB_HAVE_NCCL
// This build has NCCL; what it can show depends on the machine, so each case asks the CUDA runtime
// and asserts what must hold there: without a device, a prompt error naming its absence; with one,
// exact sums and a bounded wait.
namespace {
int cuda_devices(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  *why = e != cudaSuccess ? cudaGetErrorString(e) : "0 devices";
  return e == cudaSuccess ? n : 0;
}
}  // namespace

TEST_CASE("nccl: the build lists it; without a device connect names the device's absence, with one a rank all-reduces 64K floats exactly") {
  const auto have = backends();
  CHECK(std::find(have.begin(), have.end(), "nccl") != have.end());
  const std::string dir = fresh_dir("nccl-one");
  std::string why;
  const auto t0 = std::chrono::steady_clock::now();
  if (cuda_devices(&why) == 0) {
    MESSAGE("no CUDA device here (" << why << "): checking the backend's refusal");
    CHECK_THROWS_WITH_AS(connect("nccl", Rendezvous{dir, "gen-1", 0, 1, 300ms}),
                         ("nccl: no CUDA device: cudaGetDeviceCount: " + why).c_str(), CommError);
    CHECK(std::chrono::steady_clock::now() - t0 < 1s);  // refused at once, no rendezvous wait
    return;
  }
  auto c = connect("nccl", Rendezvous{dir, "gen-1", 0, 1, 5s});
  CHECK(c->library() == "nccl");
  CHECK(c->rank() == 0);
  CHECK(c->size() == 1);
  CHECK(std::filesystem::file_size(dir + "/gen-1.nccl-id") == 128u);  // NCCL_UNIQUE_ID_BYTES
  std::vector<float> data(64 << 10);
  for (uint64_t e = 0; e < data.size(); ++e) data[e] = check_input(7, 0, e);
  c->all_reduce(data);
  CHECK(check_wrong(data, 7, 1) == 0);
  data[3] += 1;
  CHECK(check_wrong(data, 7, 1) == 1);  // the check would see a wrong sum
  data.resize(1000);  // a smaller all-reduce reuses the device buffer
  for (uint64_t e = 0; e < data.size(); ++e) data[e] = check_input(8, 0, e);
  c->all_reduce(data);
  CHECK(check_wrong(data, 8, 1) == 0);
  c.reset();
  // The same through the rank protocol, as `mxtb rank --library nccl` serves it.
  std::istringstream in("form g1 0 1\nallreduce 65536 7\nexit\n");
  std::ostringstream out;
  CHECK(serve_rank(in, out, "nccl", dir, 5s) == 0);
  std::istringstream lines(out.str());
  std::string formed, done, word;
  std::getline(lines, formed);
  std::getline(lines, done);
  CHECK(formed.rfind("formed ", 0) == 0);
  std::istringstream answer(done);  // done NS WRONG
  uint64_t ns = 0, wrong = 1;
  answer >> word >> ns >> wrong;
  CHECK_MESSAGE(word == "done", done);
  CHECK(ns > 0);
  CHECK(wrong == 0);
}

TEST_CASE("nccl: a rank waiting for a unique id nobody publishes ends in CommError within its timeout") {
  const std::string dir = fresh_dir("nccl-never");
  std::string why;
  const int devices = cuda_devices(&why);
  const bool device = devices > 0;
  if (device) {  // the CUDA context is made before the clock starts: the rank's wait is what is timed
    REQUIRE(cudaSetDevice(1 % devices) == cudaSuccess);
    REQUIRE(cudaFree(nullptr) == cudaSuccess);
  }
  const auto t0 = std::chrono::steady_clock::now();
  // Without a device the rank is refused before it waits; with one it waits 300 ms for the file.
  const std::string expected = device ? "no NCCL unique id in " + dir + "/never.nccl-id after 300 ms"
                                      : "nccl: no CUDA device: cudaGetDeviceCount: " + why;
  CHECK_THROWS_WITH_AS(connect("nccl", Rendezvous{dir, "never", 1, 2, 300ms}), doctest::Contains(expected.c_str()),
                       CommError);
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(took < 1s);
  if (device) CHECK(took >= 300ms);  // it waited as long as it was told
}
#else
TEST_CASE("nccl: not built here: backends() has only gloo, and connect(\"nccl\") names what the build has") {
  CHECK(backends() == std::vector<std::string>{"gloo"});
  CHECK_THROWS_WITH_AS(connect("nccl", Rendezvous{fresh_dir("nccl-none"), "x", 0, 1}),
                       "unknown collective library 'nccl' (this build has: gloo)", std::invalid_argument);
}
#endif

TEST_CASE("a rank whose peer never comes answers an error naming the rendezvous, not a hang") {
  const std::string dir = fresh_dir("alone");
  std::istringstream in("form gen-1 0 2\nallreduce 10 1\nbogus\nform gen-1\nexit\nform never 0 1\n");
  std::ostringstream out;
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(serve_rank(in, out, "gloo", dir, 400ms) == 0);
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);
  std::istringstream lines(out.str());
  std::string l1, l2, l3, l4, l5;
  std::getline(lines, l1);
  std::getline(lines, l2);
  std::getline(lines, l3);
  std::getline(lines, l4);
  CHECK(l1.rfind("error gloo rendezvous gen-1 as rank 0 of 2", 0) == 0);
  CHECK(l2 == "error no communicator formed");
  CHECK(l3 == "error unknown request 'bogus'");
  CHECK(l4 == "error usage: form PREFIX RANK SIZE");
  CHECK(!std::getline(lines, l5));  // nothing after exit
}

TEST_CASE("rank processes: a hot spare and a relaunch re-form the communicator after a rank dies, measured and exact") {
  for (Restart restart : {Restart::HotSpare, Restart::Relaunch}) {
    CAPTURE(to_string(restart));
    RankGroup g(group_config(to_string(restart), restart), {0, 1, 3, 2}, {4});
    CHECK(g.generation() == 1);
    g.kill(3);
    Reform r = g.reform({0, 1, 4, 2});
    CHECK(g.generation() == 2);
    CHECK(r.wrong == 0);
    CHECK(r.ranks == 4);
    CHECK(r.library == "gloo");
    CHECK(r.abort_s > 0);  // the survivors saw their collective fail, after the rank died
    CHECK(r.form_s > 0);
    CHECK(r.first_s > 0);
    if (restart == Restart::Relaunch) {
      CHECK(r.start_s > 0);
      CHECK(r.total_s() > r.start_s);
    } else {
      CHECK(r.start_s == 0);
      CHECK(r.stop_s == 0);
    }
    // A second failure and re-form on what is left (three ranks).
    g.kill(1);
    Reform again = g.reform({0, 4, 2});
    CHECK(again.wrong == 0);
    CHECK(g.generation() == 3);
  }
}

TEST_CASE("the survivors stop at once when a rank dies, wherever it sits in the ring and whenever it dies (the host's revoke)") {
  // The library alone can leave a survivor waiting out its whole timeout (6 s here): a survivor
  // whose peers are all alive, or whose buffer met an already failed connection. Every position, a
  // death at once and one a few steps in.
  for (int victim : {0, 1, 3, 2})
    for (auto after : {0ms, 30ms}) {
      CAPTURE(victim);
      CAPTURE(after.count());
      RankGroup g(group_config("abort-" + std::to_string(victim), Restart::HotSpare), {0, 1, 3, 2}, {4});
      std::this_thread::sleep_for(after);
      g.kill(victim);
      std::vector<int> ring{0, 1, 3, 2};
      std::replace(ring.begin(), ring.end(), victim, 4);
      const Reform r = g.reform(ring);
      CHECK(r.abort_s < 1.0);
      CHECK(r.wrong == 0);
    }
}

TEST_CASE("gloo: revoke ends an all-reduce that waits for a peer, from another thread, and every later one") {
  const std::string dir = fresh_dir("revoke");
  std::unique_ptr<Communicator> comms[2];
  std::thread other([&] { comms[1] = connect("gloo", Rendezvous{dir, "gen-1", 1, 2, 10s}); });
  comms[0] = connect("gloo", Rendezvous{dir, "gen-1", 0, 2, 10s});
  other.join();
  std::string error;
  std::thread waiting([&] {
    std::vector<float> data(1024, 1.0f);
    try {
      comms[0]->all_reduce(data);  // rank 1 never joins this one
    } catch (const CommError& e) {
      error = e.what();
    }
  });
  std::this_thread::sleep_for(100ms);
  const auto t0 = std::chrono::steady_clock::now();
  comms[0]->revoke();
  waiting.join();
  CHECK(std::chrono::steady_clock::now() - t0 < 2s);  // not the 10 s timeout
  CHECK(error.find("revoked") != std::string::npos);
  std::vector<float> later(4, 1.0f);
  CHECK_THROWS_WITH_AS(comms[0]->all_reduce(later), doctest::Contains("the communicator was revoked"), CommError);
  // (That the peers see it at once, in processes of their own, is the test above.)
}

TEST_CASE("a group started where an earlier run left its store still forms (the stale addresses are gone)") {
  RankGroupConfig c = group_config("rerun", Restart::HotSpare);
  { RankGroup first(c, {0, 1}, {}); }
  RankGroup again(c, {0, 1}, {});
  CHECK(again.generation() == 1);
}

TEST_CASE("faults in the re-form end in a named error, never a hang") {
  SUBCASE("the spare's rank process is gone when the communicator is formed again") {
    RankGroup g(group_config("spare-gone", Restart::HotSpare), {0, 1}, {4});
    g.kill(1);
    g.kill(4);
    CHECK_THROWS_WITH_AS(g.reform({0, 4}), doctest::Contains("no rank process for XPU 4"), CommError);
  }
  SUBCASE("a rank that stops answering (its process frozen) is named once the timeout passes") {
    RankGroupConfig c = group_config("frozen", Restart::HotSpare);
    c.timeout = 1500ms;
    RankGroup g(c, {0, 1, 2}, {});
    REQUIRE(g.pid(1) > 0);
    ::kill(g.pid(1), SIGSTOP);
    g.kill(2);
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH_AS(g.reform({0, 1}), doctest::Contains("rank of XPU 1 did not answer"), CommError);
    CHECK(std::chrono::steady_clock::now() - t0 < 6s);
    ::kill(g.pid(1), SIGCONT);
  }
  SUBCASE("a rank frozen once its step loop ended is named, not the peer whose rendezvous waited for it") {
    // XPU 0's rendezvous waits for XPU 1 (Gloo gives a first connect five times its timeout):
    // reading rank by rank, the host used to name XPU 0 alone, the one that was not frozen.
    RankGroupConfig c = group_config("frozen-at-form", Restart::HotSpare);
    c.timeout = 1500ms;
    RankGroup* group = nullptr;
    pid_t frozen = -1;
    c.on_step = [&](const std::string& step) {
      if (group && step == "form-sent" && group->generation() == 2) {
        frozen = group->pid(1);
        ::kill(frozen, SIGSTOP);
      }
    };
    RankGroup g(c, {0, 1, 2}, {});
    group = &g;
    g.kill(2);
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH_AS(g.reform({0, 1}), doctest::Contains("rank of XPU 1 did not answer"), CommError);
    CHECK(std::chrono::steady_clock::now() - t0 < 6s);
    REQUIRE(frozen > 0);
    ::kill(frozen, SIGCONT);
  }
  SUBCASE("a rank that dies during the re-form (the spare, killed once every rank was asked to form) is named") {
    for (Restart restart : {Restart::HotSpare, Restart::Relaunch}) {
      CAPTURE(to_string(restart));
      RankGroupConfig c = group_config(std::string("dies-during-") + to_string(restart), restart);
      c.timeout = 2000ms;
      RankGroup* group = nullptr;
      int killed = 0;
      c.on_step = [&](const std::string& step) {
        if (group && step == "form-sent" && group->generation() == 2) {
          ::kill(group->pid(4), SIGKILL);
          ++killed;
        }
      };
      RankGroup g(c, {0, 1, 2}, {4});
      group = &g;
      g.kill(2);
      const auto t0 = std::chrono::steady_clock::now();
      // Whoever notices first is named: the dead rank itself, or a survivor whose rendezvous waited for it.
      CHECK_THROWS_WITH_AS(g.reform({0, 1, 4}), doctest::Contains("rank of XPU"), CommError);
      CHECK(killed == 1);
      CHECK(std::chrono::steady_clock::now() - t0 < 8s);
    }
  }
  SUBCASE("a rank process that cannot start is named") {
    RankGroupConfig c = group_config("no-exe", Restart::HotSpare);
    c.executable = "/nonexistent/mxtb";
    CHECK_THROWS_WITH_AS(RankGroup(c, {0, 1}, {}), doctest::Contains("rank of XPU 0: cannot start /nonexistent/mxtb"), CommError);
  }
}

TEST_CASE("a re-form on the failover path: after the survivors stop; a hot spare beside the restore, a relaunch after it") {
  using mxtb::host::comm::place_reform;
  using mxtb::host::comm::Restart;
  // Restore from 100 to 1100 ns; the survivors stopped at 50 ns.
  auto hs = place_reform(Restart::HotSpare, 50, 100, 1100, 600);
  CHECK(hs.start_ns == 100);
  CHECK(hs.on_path_ns == 0);  // hidden behind the restore
  CHECK(place_reform(Restart::HotSpare, 50, 100, 1100, 1500).on_path_ns == 500);
  // Survivors that stop late hold the hot spare back, and push it past the restore.
  auto late = place_reform(Restart::HotSpare, 900, 100, 1100, 600);
  CHECK(late.start_ns == 900);
  CHECK(late.on_path_ns == 400);
  auto rl = place_reform(Restart::Relaunch, 50, 100, 1100, 600);
  CHECK(rl.start_ns == 1100);
  CHECK(rl.on_path_ns == 600);  // all of it
  CHECK(place_reform(Restart::Relaunch, 1300, 100, 1100, 600).on_path_ns == 800);
}
