// The rack's processes over MPI (docs/rack-transport.md). The build uses MPICH and its hydra
// launcher (cmake/ finds them by their .mpich names, whatever Debian's `mpi` alternative says).
//
// Waiting never spins a core for long: a wait spins (yielding) for a few microseconds only when
// every process of this host has a core of its own, then sleeps with a growing back-off, so that
// four processes on two cores still make progress (MPICH's own waits spin; they are not used).
//
// A process that dies or stops answering ends the rack within a stated bound: a wait checks every
// millisecond whether the processes it waits for on this host still exist, and gives up on any
// process after peer_timeout_s without an answer; it throws RackTransportError naming the process
// (rank, host, pid, its introduce() label). The caller lets the error end the process with a
// non-zero status; the launcher (hydra) then kills every other process of the rack, so no
// process is left behind. Bound: a killed process ends the rack within milliseconds (hydra,
// measured 11-28 ms); a silent one within peer_timeout_s plus that (docs/rack-transport.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sim/rack/window_exchange.h"

namespace mxtb::sim::rack {

struct MpiExchangeOptions {
  // How long a wait accepts no answer from a live process before naming it (seconds).
  double peer_timeout_s = 30.0;
  // Spin on MPI without ever sleeping, as MPI's own blocking calls do: only to measure what
  // yielding saves (the benchmark's --busy-poll); never for a rack.
  bool busy_poll = false;
  // Warn (rank 0, one line on stderr) when a host runs more processes than it has cores,
  // with the measured cost of a window's exchange there.
  bool warn_oversubscribed = true;
  // After introduce(), rank 0 writes one line on stderr naming every process (rank = host, pid,
  // label): what hydra's report of a killed process (by pid and host only) is read against.
  bool announce_processes = true;
};

// Initializes MPI (MPI_Init_thread, serialized: one thread at a time may call the exchange) and
// returns the exchange of this process; MPI_Finalize runs when it is destroyed after a clean run
// (after a transport error it is skipped, as the peers may be gone: the process should then exit
// non-zero). Once a process: MPI cannot be initialized twice. Collective: every process of the
// launch calls it.
std::unique_ptr<WindowExchange> make_mpi_exchange(const MpiExchangeOptions& options);
std::unique_ptr<WindowExchange> make_mpi_exchange(double peer_timeout_s);

// True when this process was started by an MPI launcher: hydra (PMI_RANK and PMI_SIZE), Open
// MPI's mpirun (OMPI_COMM_WORLD_RANK) or Slurm's srun with PMI (PMI_RANK, or SLURM_PROCID with
// PMI_FD / PMIX_RANK).
bool launched_by_mpiexec();

// The launcher's argv that runs child_argv as `processes` processes of one rack on this host with
// the build's MPI (hydra's mpiexec): binding off (the processes share the cores and sleep while
// they wait), any number of processes whatever the cores (hydra oversubscribes without a flag),
// root allowed (hydra needs no flag). Throws std::invalid_argument for processes < 1 or an empty
// child_argv.
std::vector<std::string> mpiexec_command(int processes, const std::vector<std::string>& child_argv);

}  // namespace mxtb::sim::rack
