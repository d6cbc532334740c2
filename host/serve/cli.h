// Entry point of `mxtb serve ...` (see docs/serve.md).
#pragma once

#include <string>
#include <vector>

namespace mxtb::host::serve {

// args: the words after `serve`. Prints to stdout; returns a process exit code (0 ok, even when a
// goal is not met; 1 a broken invariant or a run-time failure; 2 bad arguments or bad input:
// an unreadable or malformed trace, an unknown policy, model or device).
int run_serve_command(const std::vector<std::string>& args);

}  // namespace mxtb::host::serve
