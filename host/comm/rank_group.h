// The job's ranks as real processes (`mxtb rank`, one per XPU, the spare's included), started,
// driven and killed by the host as a job launcher would, and the two ways back after an XPU dies,
// measured in wall time: a hot spare (started and waiting before the failure; only the survivors'
// and the spare's re-form is on the critical path) and a relaunch (every rank stopped, the job
// started again from its checkpoint, rendezvous and connections from scratch: what the Morphlux
// prototype measured at 1.2 s). docs/failover.md, "The communicator".
#pragma once

#include "host/comm/communicator.h"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::host::comm {

enum class Restart { HotSpare, Relaunch };
const char* to_string(Restart r);  // "hot-spare", "relaunch"
std::optional<Restart> restart_from_string(const std::string& s);

struct RankGroupConfig {
  std::string executable;     // the mxtb program (its `rank` command)
  std::string library = "gloo";
  std::string work_dir;       // rendezvous stores, checkpoints and the ranks' logs go here
  Restart restart = Restart::HotSpare;
  uint64_t count = 1 << 16;   // floats per all-reduce (256 KiB)
  uint64_t checkpoint_bytes = 64ull << 20;  // what a relaunched rank reads back before it rejoins
  std::chrono::milliseconds timeout{20'000};  // each phase: every rank's answer, read side by side
  // Milestones of a re-form as they happen ("stopped", "started", "form-sent", "formed"): for
  // progress lines, and for the fault tests that kill a rank at one of them.
  std::function<void(const std::string& step)> on_step;
};

// What a re-form took, in wall time.
struct Reform {
  Restart restart;
  std::string library;
  int ranks = 0;
  double abort_s = 0;     // the rank's death to the last survivor's collective failing (seen by the survivors)
  std::string abort_reason;  // the first survivor's error ("XPU 1: gloo all-reduce ...: Connection reset by peer")
  double stop_s = 0;      // relaunch: every survivor stopped (killed)
  double start_s = 0;     // relaunch: processes started and their checkpoints read back
  double form_s = 0;      // rendezvous and connections of the new communicator, the slowest rank's view
  double first_s = 0;     // its first all-reduce, checked on every rank
  uint64_t wrong = 0;     // elements of that all-reduce wrong, summed over ranks (must be 0)
  double total_s() const { return stop_s + start_s + form_s + first_s; }  // the critical path from the decision
};

// Where a re-form lies on the failover path (every time from one origin, in ns). It begins once the
// survivors have stopped (`stopped_ns`) and the new ring is known; a hot spare needs no state, so
// it starts with the restore and runs beside it, a relaunch reads its state and starts after the
// restore. Only what outlasts the restore is on the critical path. The manager's timeline and the
// what-if sweep both lay re-forms out by this rule.
struct ReformPlacement {
  double start_ns;    // when the re-form begins
  double on_path_ns;  // what of it lies after the restore's end
};
ReformPlacement place_reform(Restart r, double stopped_ns, double restore_start_ns, double restore_end_ns, double reform_ns);

class RankGroup {
 public:
  // Starts a rank process per XPU of `ring` (and of `spares` for a hot spare), forms the first
  // communicator on `ring` and starts its step loop. Throws CommError naming the rank that failed.
  RankGroup(RankGroupConfig cfg, const std::vector<int>& ring, const std::vector<int>& spares);
  ~RankGroup();  // every rank stopped
  RankGroup(const RankGroup&) = delete;
  RankGroup& operator=(const RankGroup&) = delete;

  // XPU `xpu` died: its rank process is killed (SIGKILL), as the XPU's death takes its host
  // process's work with it; the survivors' step loop fails on its own.
  void kill(int xpu);
  // The communicator formed again on `ring` (the spare in the dead XPU's place), by the configured
  // strategy, checked with one all-reduce, then the step loop restarted. Throws CommError naming
  // what failed (a rank that died or did not answer in time).
  Reform reform(const std::vector<int>& ring);
  int generation() const { return generation_; }
  const std::vector<int>& ring() const { return ring_; }  // the XPUs of the current communicator
  pid_t pid(int xpu) const;  // its rank's process (-1: none), for diagnostics and tests
  const RankGroupConfig& config() const { return cfg_; }

 private:
  struct Rank {
    pid_t pid = -1;
    int in = -1, out = -1;  // its stdin (we write), its stdout (we read)
    std::string buffer;
    bool looping = false;
  };
  void spawn(int xpu);
  void stop(int xpu);
  void send(int xpu, const std::string& line);
  // Each rank's next line, in `xpus`' order, read side by side under one deadline; or CommError
  // naming a rank that ended, else every rank still silent at the deadline, else the first error.
  std::vector<std::string> answers(const std::vector<int>& xpus, const char* what);
  void form(const std::vector<int>& ring, double* slowest_s);
  uint64_t check_all_reduce(const std::vector<int>& ring, double* s);
  void loop(const std::vector<int>& ring);
  void step(const char* what);

  RankGroupConfig cfg_;
  std::map<int, Rank> ranks_;
  std::vector<int> ring_;
  int generation_ = 0;
  uint64_t killed_mono_ns_ = 0;
  std::string store_dir_;  // the rendezvous store the ranks started now use
};

}  // namespace mxtb::host::comm
