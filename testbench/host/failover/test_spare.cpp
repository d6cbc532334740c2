#include "host/failover/spare.h"

#include <doctest/doctest.h>

using namespace mxtb::host::failover;

TEST_CASE("spare choice: a spare outside the failed XPU's failure groups comes first") {
  // The lower-numbered spare 4 shares XPU 2's power domain: 5 must win despite the tie-break.
  std::vector<FailureGroup> g{{"power_domain[0]", {0, 1, 5}}, {"power_domain[1]", {2, 3, 4}}};
  SpareChoice c = choose_spare(2, {4, 5}, g);
  REQUIRE(c.spare);
  CHECK(*c.spare == 5);
  CHECK(c.reason == "spare XPU 5 shares no failure group with XPU 2");
  CHECK_FALSE(c.degraded());
}

TEST_CASE("spare choice: a spare in the failed XPU's group is taken only when nothing else is left") {
  std::vector<FailureGroup> g{{"power_domain[1]", {2, 3, 4}}};
  SpareChoice c = choose_spare(2, {4}, g);
  REQUIRE(c.spare);
  CHECK(*c.spare == 4);
  CHECK(c.reason.find("shares power_domain[1] with XPU 2") != std::string::npos);
}

TEST_CASE("spare choice: fewer shared groups win, then fewer groups shared with earlier failures, then the lowest XPU") {
  std::vector<FailureGroup> g{{"power_domain[0]", {0, 4, 5, 6}}, {"board[0]", {0, 4}}, {"power_domain[1]", {1, 7}}};
  CHECK(*choose_spare(0, {4, 5}, g).spare == 5);           // 5 shares one group with 0, 4 shares two
  CHECK(*choose_spare(2, {7, 6}, g).spare == 6);           // neither shares with 2: lowest number
  CHECK(*choose_spare(2, {7, 6}, g, {0}).spare == 7);      // 6 shares a group with XPU 0, which failed before
  CHECK(*choose_spare(2, {9, 8}, {}).spare == 8);          // no groups at all: deterministic
}

TEST_CASE("spare choice: no usable spare means degraded, with the reason") {
  CHECK(choose_spare(2, {}, {}).degraded());
  CHECK(choose_spare(2, {}, {}).reason == "no spare left for XPU 2: the tenant runs degraded");
  SpareChoice c = choose_spare(2, {4}, {}, {4});  // the only spare already failed
  CHECK(c.degraded());
  CHECK(c.reason == "no spare left for XPU 2 (spares [4] have failed): the tenant runs degraded");
}
