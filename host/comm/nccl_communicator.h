// The NCCL backend of host/comm/communicator.h, built only where CUDA and NCCL are found
// (MXTB_HAVE_NCCL). Internal to host/comm: the job reaches it through connect("nccl", ...).
#pragma once

#include "host/comm/communicator.h"

#include <memory>

namespace mxtb::host::comm {

// Forms an NCCL communicator on device rank % cudaGetDeviceCount(); CommError when there is no
// CUDA device, the unique id does not come, or NCCL's init fails or outlasts r.timeout.
std::unique_ptr<Communicator> connect_nccl(const Rendezvous& r);

}  // namespace mxtb::host::comm
