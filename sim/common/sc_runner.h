// The one way into the SystemC kernel: elaboration and simulation happen once per process, so
// every command that needs SystemC hands its body to run_under_systemc().
#pragma once

#include <systemc>

#include <cstdint>
#include <functional>

namespace mxtb::sim {

// Runs body inside sc_main (through sc_elab_and_sim). Returns body's result, or 1 when SystemC
// reported an error. What body throws is rethrown to the caller once SystemC has ended
// (sc_elab_and_sim would catch it, print it as its own error and return 1: a failed RTL assertion
// would never reach main() and its rerun line). May be called once per process.
int run_under_systemc(std::function<int()> body);

// SystemC turns an exception that leaves a process into its own report (E549, "uncaught
// exception"), which loses the exception's type. A process that steps models runs its body under
// guard_process(): an exception (an RtlAssertionFailure, say) stops the simulation and is kept,
// and the code that called sc_start() calls rethrow_process_error() when it returns.
void guard_process(const std::function<void()>& body);
// Rethrows the first exception a guarded process kept, if any (once).
void rethrow_process_error();

// The batching rule of every clock thread that advances RTL in batches (LinkPairSc, ServerClock).
// Call from that thread at the start of a batch: it first lets every other process due at this
// instant run (a fault or a register access lands before the cycle), then returns how many of
// `wanted` cycles may pass before another process has something scheduled (at least 1). Where
// several clock threads share the kernel (a rack), each one's yield is the others' pending
// activity: `max_yields` bounds the delta cycles it yields (-1: until nothing else is due).
uint64_t next_batch(sc_core::sc_time period, uint64_t wanted, int max_yields = -1);

}  // namespace mxtb::sim
