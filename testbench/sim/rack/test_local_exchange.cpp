// The one-process transport: nothing to send, its collectives the identity.
#include <doctest/doctest.h>

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
