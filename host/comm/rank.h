// One rank of the job as a process of its own (`mxtb rank`), driven by the host over a line
// protocol on its stdin and stdout, so that the host can start, stop and kill ranks as a job
// launcher does. Requests, one per line; every answer is one line, "error WHAT" on failure:
//   form PREFIX RANK SIZE        -> formed WALL_NS                 (rendezvous, full mesh)
//   load FILE BYTES              -> loaded WALL_NS                 (a checkpoint read back)
//   allreduce COUNT SEED         -> done WALL_NS WRONG             (one all-reduce, checked)
//   loop COUNT SEED              -> looping                        (its first all-reduce done)
//                                   stopped STEPS MONO_NS WHAT     (all-reduces until one fails;
//                                                                   MONO_NS: CLOCK_MONOTONIC then;
//                                                                   alone if the first one fails)
//   revoke                       -> (none of its own)              (during a loop: the communicator
//                                                                   revoked, so the loop's answer
//                                                                   comes at once; else nothing)
//   exit
// The loop runs beside the request reader, so a revoke reaches it; any other request waits for
// the loop to end first.
// WALL_NS is what the request took in the rank. docs/failover.md, "The communicator".
#pragma once

#include <chrono>
#include <iosfwd>
#include <string>

namespace mxtb::host::comm {

// Serves requests from `in` until "exit" or its end; returns 0.
// `timeout` bounds every rendezvous and collective (a peer that never comes: an error, not a hang).
int serve_rank(std::istream& in, std::ostream& out, const std::string& library, const std::string& store_dir,
               std::chrono::milliseconds timeout);

}  // namespace mxtb::host::comm
