// Host compute charged to board time: the least CPU time of a few runs, so that time the
// machine spent elsewhere (a hypervisor's steal, counted as the thread's own) is never charged.
#include "host/fabric/clock.h"

#include <doctest/doctest.h>

#include <deque>
#include <vector>

using namespace mxtb::host::fabric;

namespace {

// A CPU clock that reads the run's cost from a script: each run reads twice (before and after).
struct ScriptedCpu {
  explicit ScriptedCpu(std::vector<uint64_t> costs) {
    uint64_t t = 1'000'000;
    for (uint64_t c : costs) {
      reads.push_back(t);
      reads.push_back(t += c);
      t += 500;  // what the caller does between runs is not charged
    }
  }
  uint64_t operator()() {
    REQUIRE_FALSE(reads.empty());
    uint64_t v = reads.front();
    reads.pop_front();
    return v;
  }
  std::deque<uint64_t> reads;
};

// A lockstep clock: what is charged is what passes.
struct LockstepClock : Clock {
  uint64_t now = 0;
  std::vector<uint64_t> charges;
  uint64_t now_ns() override { return now; }
  void wait_ns(uint64_t ns) override { now += ns; }
  void charge_ns(uint64_t ns) override {
    charges.push_back(ns);
    now += ns;
  }
  bool charges_compute() const override { return true; }
  std::string mode() const override { return "lockstep"; }
};

}  // namespace

TEST_CASE("host compute: a run the hypervisor preempted is not what is charged") {
  // The first run read 5 ms of CPU time: a stolen slice, not the 20 us the decision costs.
  ScriptedCpu cpu({5'000'000, 20'000, 21'000});
  int runs = 0;
  CHECK(least_cpu_ns([&] { ++runs; }, 3, std::ref(cpu)) == 20'000);
  CHECK(runs == 3);
  CHECK(cpu.reads.empty());
}

TEST_CASE("host compute: a computation slow in every run is charged in full") {
  ScriptedCpu cpu({900'000, 850'000, 870'000});
  CHECK(least_cpu_ns([] {}, 3, std::ref(cpu)) == 850'000);
}

TEST_CASE("host compute: a run too short for the clock to see still costs a nanosecond") {
  ScriptedCpu cpu({0});
  CHECK(least_cpu_ns([] {}, 1, std::ref(cpu)) == 1);
}

TEST_CASE("host compute: fewer than one run is refused") {
  CHECK_THROWS_WITH(least_cpu_ns([] {}, 0), "least_cpu_ns: runs must be at least 1");
}

TEST_CASE("host compute: charged in lockstep after every run; run once, uncharged, on the wall clock") {
  LockstepClock lockstep;
  int runs = 0, result = 0;
  const uint64_t charged = lockstep.charge_compute([&] {
    ++runs;
    result = 42;
  });
  CHECK(runs == 3);
  CHECK(result == 42);
  REQUIRE(lockstep.charges.size() == 1);
  CHECK(lockstep.charges[0] >= 1);
  CHECK(lockstep.now == lockstep.charges[0]);
  CHECK(charged == lockstep.charges[0]);  // what the report records, to replay the run

  WallClock wall;
  runs = 0;
  CHECK(wall.charge_compute([&] { ++runs; }) == 0);
  CHECK(runs == 1);  // on a board the host's compute is real time: never repeated
}
