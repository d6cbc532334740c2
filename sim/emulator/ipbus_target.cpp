// RequestTarget (ipbus_target.h): what both IPbus targets do alike, the stall injection and the
// slowest request.
#include "sim/emulator/ipbus_target.h"

#include <thread>

namespace mxtb::sim {

void RequestTarget::stall_if_due(const char* activity) {
  if (inject_.ms && ++requests_seen_ % inject_.every == 0) {
    thread_.set_activity(activity);
    std::this_thread::sleep_for(std::chrono::milliseconds(inject_.ms));
  }
}

void RequestTarget::note_request(std::chrono::steady_clock::time_point wall_start, double sim_start_ns,
                                 const std::function<std::string()>& what) {
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  if (wall_s > longest_.wall_s) longest_ = {wall_s, sim_now_ns() - sim_start_ns, what()};
}

}  // namespace mxtb::sim
