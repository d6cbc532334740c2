// `mxtb rank`: one rank of the job as a process of its own, driven by the host over its stdin and
// stdout (host/comm/rank.h), reaching its collective library through host/comm/communicator.h.
#include "apps/mxtb/commands.h"
#include "host/comm/communicator.h"
#include "host/comm/rank.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

namespace mxtb::app {

int cmd_rank(const ArgList& argv) {
  Args args(argv, {"--library", "--store", "--timeout-ms"}, {});
  const auto have = host::comm::backends();
  const std::string library = args.choice("--library", "gloo", have);
  if (!args.has("--store")) throw UsageError("--store DIR is required (the rendezvous store all ranks share)");
  const auto timeout = std::chrono::milliseconds(args.u64("--timeout-ms", 10'000, 1, 3'600'000));
  return host::comm::serve_rank(std::cin, std::cout, library, args.str("--store"), timeout);
}

}  // namespace mxtb::app
