// The MPI transport of a rack (sim/rack/mpi_exchange.h, docs/rack-transport.md).
//
// Every wait goes through MpiExchange::wait_for: non-blocking MPI calls polled with MPI_Test and
// MPI_Improbe, a short yielding spin only when the host has a core per process, then sleeps that
// grow from 1 to 100 us. MPICH's blocking calls spin, and with more processes than cores the
// spinners starve the process they wait for (4 processes on 2 cores: 40,000 exchanges did not end
// in 150 s; with these waits, 7.3 s); ours sleep, so they cost a wake-up, not a time slice.
//
// The collectives (gather, min_all, check_same, introduce) are a star around rank 0 built from the
// same point-to-point messages, so that a wait always knows which process it waits for and can name
// it when it dies or stays silent (MPI's own collectives would only say that something failed).
#include "sim/rack/mpi_exchange.h"

#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace mxtb::sim::rack {

namespace {

using Clock = std::chrono::steady_clock;

// Message tags: windows, and the two directions of the star collectives. MPI keeps messages of one
// sender and one tag in order, so successive windows and collectives never mix.
constexpr int kTagWindow = 1;
constexpr int kTagToRoot = 2;
constexpr int kTagFromRoot = 3;

// While a process has a core of its own, a wait first spins this long (yielding), as a peer's
// answer usually comes within microseconds; then it sleeps.
constexpr double kSpinUs = 50.0;
constexpr int kMaxSleepUs = 100;
// How often a wait checks that the processes it waits for on this host still exist.
constexpr auto kLivenessPeriod = std::chrono::milliseconds(1);
// Exchanges timed for the oversubscription warning.
constexpr int kCalibrationRounds = 200;

struct ProcessInfo {
  std::string host;
  long pid = 0;
  std::string pid_namespace;  // two processes may look each other up by pid only when equal
  int cores = 1;
  std::string label;
};

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<size_t>(length));
}

std::string this_host() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

std::string this_pid_namespace() {
  char target[256] = {};
  ssize_t n = readlink("/proc/self/ns/pid", target, sizeof target - 1);
  return n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string("unknown");
}

int usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

// A killed process stays a zombie until its parent (hydra's proxy) reaps it; both count as gone.
bool process_gone(long pid) {
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  size_t paren = line.rfind(')');
  if (paren == std::string::npos || paren + 2 >= line.size()) return false;
  char state = line[paren + 2];
  return state == 'Z' || state == 'X';
}

// Sleeps as short as asked: Linux lets a sleep overrun by the thread's timer slack (50 us by
// default), which would make every short back-off step cost 50 us.
void tighten_timer_slack() {
  thread_local bool done = false;
  if (!done) {
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    done = true;
  }
}

int checked_count(size_t bytes, const char* what) {
  if (bytes > static_cast<size_t>(INT_MAX)) {
    throw RackTransportError(fmt::format("{}: {} bytes in one message, at most {} allowed", what, bytes, INT_MAX));
  }
  return static_cast<int>(bytes);
}

class MpiExchange final : public WindowExchange {
 public:
  explicit MpiExchange(const MpiExchangeOptions& options) : options_(options) {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized || finalized) {
      throw RackTransportError("make_mpi_exchange: MPI was already initialized in this process (one exchange a process)");
    }
    int provided = 0;
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) throw RackTransportError("MPI_Init_thread failed: " + mpi_error_text(rc));
    if (provided < MPI_THREAD_SERIALIZED) {
      MPI_Finalize();
      throw RackTransportError(fmt::format("the MPI library offers thread level {}, the rack needs MPI_THREAD_SERIALIZED", provided));
    }
    // Errors come back as codes, so that they become RackTransportError naming the process.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    processes_.resize(static_cast<size_t>(size_));
    processes_[static_cast<size_t>(rank_)] = {this_host(), static_cast<long>(getpid()), this_pid_namespace(), usable_cores(), ""};
    learn_processes();
    spin_us_ = oversubscribed() || options_.busy_poll ? 0.0 : kSpinUs;
    if (options_.warn_oversubscribed && oversubscribed()) warn_oversubscribed();
  }

  ~MpiExchange() override {
    // After a transport error the peers may be dead or stopped, and MPI_Finalize would wait for
    // them; the process exits without it and the launcher ends the others.
    if (!failed_ && std::uncaught_exceptions() == 0) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void introduce(const std::string& label) override {
    std::vector<std::string> labels = gather_to_root(label, "introduce");
    std::string table = broadcast_from_root(rank_ == 0 ? nlohmann::json(labels).dump() : std::string(), "introduce");
    auto all = nlohmann::json::parse(table).get<std::vector<std::string>>();
    for (size_t r = 0; r < processes_.size(); ++r) processes_[r].label = all.at(r);
    // When a process is killed, hydra kills the others within milliseconds, often before they can
    // name it, and names it by pid and host only: this line turns that pid into rank and servers.
    if (rank_ == 0 && options_.announce_processes) {
      std::string table;
      for (int r = 0; r < size_; ++r) {
        const ProcessInfo& p = processes_[static_cast<size_t>(r)];
        table += fmt::format("{}{} = host {} pid {} ({})", r == 0 ? "" : "; ", r, p.host, p.pid, p.label);
      }
      fmt::print(stderr, "mxtb: rack processes: {}\n", table);
    }
  }

  void check_same(const std::string& what, const std::string& value) override {
    std::vector<std::string> values = gather_to_root(value, "check_same(" + what + ")");
    std::string verdict;
    if (rank_ == 0) {
      for (size_t r = 1; r < values.size(); ++r) {
        if (values[r] != values[0]) {
          verdict = fmt::format("the rack's processes disagree on {}: {} has \"{}\", {} has \"{}\"", what,
                                describe(static_cast<int>(r)), values[r], describe(0), values[0]);
          break;
        }
      }
    }
    verdict = broadcast_from_root(verdict, "check_same(" + what + ")");
    // The transport itself is sound: the caller may still use it (to finish cleanly, say).
    if (!verdict.empty()) throw RackTransportError(verdict);
  }

  void set_peers(const std::vector<int>& peers) override {
    std::vector<int> sorted = peers;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) {
      int p = sorted[i];
      if (p < 0 || p >= size_ || p == rank_ || (i > 0 && sorted[i - 1] == p)) {
        throw RackTransportError(fmt::format("set_peers on rank {}: peer {} is not another process of the rack (0..{}) or is listed twice",
                                             rank_, p, size_ - 1));
      }
    }
    peers_ = sorted;
  }

  std::vector<std::vector<uint8_t>> exchange(const std::vector<std::vector<uint8_t>>& outbox) override {
    if (outbox.size() != static_cast<size_t>(size_)) {
      throw RackTransportError(fmt::format("exchange on rank {}: the outbox holds {} entries, one per process expected ({})", rank_,
                                           outbox.size(), size_));
    }
    ++window_;
    return exchange_with(peers_, outbox, fmt::format("window {}", window_));
  }

  bool window_arrives(std::chrono::microseconds within) override {
    tighten_timer_slack();
    const auto until = Clock::now() + within;
    int sleep_us = 0;
    for (;;) {
      for (int p : peers_) {
        int flag = 0;
        int rc = MPI_Iprobe(p, kTagWindow, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) fail(p, "could not be reached (" + mpi_error_text(rc) + ")", fmt::format("window {}", window_ + 1));
        if (flag) return true;
      }
      if (Clock::now() >= until) return false;
      sleep_us = std::min(kMaxSleepUs, std::max(1, sleep_us * 2));
      std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
    }
  }

  std::vector<std::string> gather(const std::string& mine) override { return gather_to_root(mine, "gather"); }

  uint64_t min_all(uint64_t value) override {
    std::vector<std::string> values = gather_to_root(std::to_string(value), "min_all");
    std::string smallest;
    if (rank_ == 0) {
      uint64_t m = value;
      for (const auto& v : values) m = std::min<uint64_t>(m, std::stoull(v));
      smallest = std::to_string(m);
    }
    return std::stoull(broadcast_from_root(smallest, "min_all"));
  }

 private:
  // One thing a wait waits for: a message from, or a send to, process `rank`; poll() says whether
  // it is done (and receives the message when it is).
  struct Awaited {
    int rank;
    std::function<bool()> poll;
    bool done = false;
  };

  std::string describe(int r) const {
    const ProcessInfo& p = processes_[static_cast<size_t>(r)];
    return fmt::format("process {} (host {}, pid {}, {})", r, p.host.empty() ? "unknown" : p.host, p.pid,
                       p.label.empty() ? "not yet introduced" : p.label);
  }

  [[noreturn]] void fail(int r, const std::string& what_happened, const std::string& during) {
    failed_ = true;
    std::string message = fmt::format("rack {} {} during {}; seen by {}", describe(r), what_happened, during, describe(rank_));
    // Written here as well as thrown: when a process dies, hydra kills every other within a
    // fraction of a second, often before the caller's handler could print the exception (and its
    // output forwarding may then drop even this line: docs/rack-transport.md).
    fmt::print(stderr, "mxtb: {}\n", message);
    std::fflush(stderr);
    throw RackTransportError(message);
  }

  bool on_this_host(int r) const {
    const ProcessInfo& me = processes_[static_cast<size_t>(rank_)];
    const ProcessInfo& p = processes_[static_cast<size_t>(r)];
    return p.pid != 0 && p.host == me.host && p.pid_namespace == me.pid_namespace;
  }

  bool oversubscribed() const {
    // Each host's count of processes against its cores: any crowded host slows the whole rack.
    for (const auto& p : processes_) {
      int here = static_cast<int>(std::count_if(processes_.begin(), processes_.end(), [&](const ProcessInfo& q) {
        return q.host == p.host && q.pid_namespace == p.pid_namespace;
      }));
      if (here > p.cores) return true;
    }
    return false;
  }

  Awaited receive_into(int from, int tag, std::vector<uint8_t>& into, const std::string& during) {
    return {from, [this, from, tag, &into, during] {
              int flag = 0;
              MPI_Message message;
              MPI_Status status;
              int rc = MPI_Improbe(from, tag, MPI_COMM_WORLD, &flag, &message, &status);
              if (rc != MPI_SUCCESS) fail(from, "could not be reached (" + mpi_error_text(rc) + ")", during);
              if (!flag) return false;
              int count = 0;
              MPI_Get_count(&status, MPI_BYTE, &count);
              into.resize(static_cast<size_t>(count));
              rc = MPI_Mrecv(into.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE);
              if (rc != MPI_SUCCESS) fail(from, "sent a message that could not be received (" + mpi_error_text(rc) + ")", during);
              return true;
            }};
  }

  Awaited send_from(int to, const std::vector<uint8_t>& bytes, int tag, MPI_Request& request, const std::string& during) {
    int rc = MPI_Isend(bytes.data(), checked_count(bytes.size(), "send"), MPI_BYTE, to, tag, MPI_COMM_WORLD, &request);
    if (rc != MPI_SUCCESS) fail(to, "could not be sent to (" + mpi_error_text(rc) + ")", during);
    return {to, [this, to, &request, during] {
              int flag = 0;
              int rc2 = MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
              if (rc2 != MPI_SUCCESS) fail(to, "did not take a message (" + mpi_error_text(rc2) + ")", during);
              return flag != 0;
            }};
  }

  // Polls until everything awaited is done. Throws, naming the process, when one on this host no
  // longer exists (checked every kLivenessPeriod) or when one has not answered within the timeout.
  void wait_for(std::vector<Awaited>& awaited, const std::string& during) {
    tighten_timer_slack();
    const auto start = Clock::now();
    auto last_check = start;
    auto idle_since = start;
    int sleep_us = 0;
    bool idle = false;
    for (;;) {
      bool progress = false, all_done = true;
      for (auto& a : awaited) {
        if (a.done) continue;
        if (a.poll()) {
          a.done = true;
          progress = true;
        } else {
          all_done = false;
        }
      }
      if (all_done) return;
      const auto now = Clock::now();
      if (progress) {
        idle = false;
        sleep_us = 0;
      } else if (!idle) {
        idle = true;
        idle_since = now;
      }
      if (now - last_check >= kLivenessPeriod) {
        last_check = now;
        check_awaited(awaited, during, std::chrono::duration<double>(now - start).count());
      }
      if (progress || options_.busy_poll) continue;
      if (std::chrono::duration<double, std::micro>(now - idle_since).count() < spin_us_) {
        sched_yield();
      } else {
        sleep_us = std::min(kMaxSleepUs, std::max(1, sleep_us * 2));
        std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
      }
    }
  }

  void check_awaited(const std::vector<Awaited>& awaited, const std::string& during, double waited_s) {
    for (const auto& a : awaited) {
      if (!a.done && on_this_host(a.rank) && process_gone(processes_[static_cast<size_t>(a.rank)].pid)) {
        fail(a.rank, "died (its pid no longer exists)", during);
      }
    }
    if (waited_s > options_.peer_timeout_s) {
      for (const auto& a : awaited) {
        if (!a.done) fail(a.rank, fmt::format("has not answered for {:.1f} s (peer timeout {} s)", waited_s, options_.peer_timeout_s), during);
      }
    }
  }

  std::vector<std::vector<uint8_t>> exchange_with(const std::vector<int>& peers, const std::vector<std::vector<uint8_t>>& outbox,
                                                  const std::string& during) {
    std::vector<std::vector<uint8_t>> inbox(static_cast<size_t>(size_));
    std::vector<MPI_Request> requests(peers.size(), MPI_REQUEST_NULL);
    std::vector<Awaited> awaited;
    awaited.reserve(2 * peers.size());
    for (size_t i = 0; i < peers.size(); ++i) {
      int p = peers[i];
      awaited.push_back(send_from(p, outbox[static_cast<size_t>(p)], kTagWindow, requests[i], during));
      awaited.push_back(receive_into(p, kTagWindow, inbox[static_cast<size_t>(p)], during));
    }
    wait_for(awaited, during);
    return inbox;
  }

  static std::vector<uint8_t> bytes_of(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }
  static std::string string_of(const std::vector<uint8_t>& b) { return std::string(b.begin(), b.end()); }

  // Every process's string on rank 0, in rank order; empty elsewhere.
  std::vector<std::string> gather_to_root(const std::string& mine, const std::string& during) {
    if (rank_ != 0) {
      std::vector<uint8_t> bytes = bytes_of(mine);
      MPI_Request request = MPI_REQUEST_NULL;
      std::vector<Awaited> awaited{send_from(0, bytes, kTagToRoot, request, during)};
      wait_for(awaited, during);
      return {};
    }
    std::vector<std::vector<uint8_t>> received(static_cast<size_t>(size_));
    std::vector<Awaited> awaited;
    for (int r = 1; r < size_; ++r) awaited.push_back(receive_into(r, kTagToRoot, received[static_cast<size_t>(r)], during));
    wait_for(awaited, during);
    std::vector<std::string> all{mine};
    for (int r = 1; r < size_; ++r) all.push_back(string_of(received[static_cast<size_t>(r)]));
    return all;
  }

  // Rank 0's string on every process.
  std::string broadcast_from_root(const std::string& value, const std::string& during) {
    if (rank_ != 0) {
      std::vector<uint8_t> received;
      std::vector<Awaited> awaited{receive_into(0, kTagFromRoot, received, during)};
      wait_for(awaited, during);
      return string_of(received);
    }
    std::vector<uint8_t> bytes = bytes_of(value);
    std::vector<MPI_Request> requests(static_cast<size_t>(size_), MPI_REQUEST_NULL);
    std::vector<Awaited> awaited;
    for (int r = 1; r < size_; ++r) awaited.push_back(send_from(r, bytes, kTagFromRoot, requests[static_cast<size_t>(r)], during));
    wait_for(awaited, during);
    return value;
  }

  // Host, pid, pid namespace and cores of every process, so that errors can name them and waits
  // can check on them.
  void learn_processes() {
    const ProcessInfo& me = processes_[static_cast<size_t>(rank_)];
    nlohmann::json mine = {{"host", me.host}, {"pid", me.pid}, {"pid_namespace", me.pid_namespace}, {"cores", me.cores}};
    std::vector<std::string> all = gather_to_root(mine.dump(), "start-up");
    std::string table = broadcast_from_root(rank_ == 0 ? nlohmann::json(all).dump() : std::string(), "start-up");
    auto entries = nlohmann::json::parse(table).get<std::vector<std::string>>();
    for (size_t r = 0; r < entries.size(); ++r) {
      auto e = nlohmann::json::parse(entries[r]);
      processes_[r] = {e.at("host").get<std::string>(), e.at("pid").get<long>(), e.at("pid_namespace").get<std::string>(),
                       e.at("cores").get<int>(), ""};
    }
  }

  // Times a few all-to-all exchanges of 64 bytes and reports, from rank 0, what waiting costs on
  // the crowded host: the figure the user weighs against a host with a core per process.
  void warn_oversubscribed() {
    std::vector<int> everyone;
    for (int r = 0; r < size_; ++r)
      if (r != rank_) everyone.push_back(r);
    std::vector<std::vector<uint8_t>> outbox(static_cast<size_t>(size_), std::vector<uint8_t>(64, 0));
    std::vector<double> us;
    for (int i = 0; i < kCalibrationRounds; ++i) {
      auto t0 = Clock::now();
      exchange_with(everyone, outbox, "the start-up calibration");
      us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    std::sort(us.begin(), us.end());
    if (rank_ != 0) return;
    const ProcessInfo& me = processes_[0];
    int here = static_cast<int>(std::count_if(processes_.begin(), processes_.end(), [&](const ProcessInfo& q) { return q.host == me.host; }));
    fmt::print(stderr,
               "mxtb: warning: {} rack processes on {} cores of host {} (more processes than cores): {}; a window's exchange "
               "costs {:.0f} us here (p50 of {} measured, all-to-all, 64 B)\n",
               here, me.cores, me.host, options_.busy_poll ? "waits spin (busy_poll, for measuring only)" : "waits sleep instead of spinning",
               us[us.size() / 2], kCalibrationRounds);
  }

  MpiExchangeOptions options_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<ProcessInfo> processes_;
  std::vector<int> peers_;
  uint64_t window_ = 0;
  double spin_us_ = kSpinUs;
  bool failed_ = false;
};

bool env_set(const char* name) { return std::getenv(name) != nullptr; }

}  // namespace

std::unique_ptr<WindowExchange> make_mpi_exchange(const MpiExchangeOptions& options) {
  if (!(options.peer_timeout_s > 0)) {
    throw std::invalid_argument(fmt::format("make_mpi_exchange: peer timeout {} s, a positive number of seconds expected", options.peer_timeout_s));
  }
  return std::make_unique<MpiExchange>(options);
}

std::unique_ptr<WindowExchange> make_mpi_exchange(double peer_timeout_s) {
  MpiExchangeOptions options;
  options.peer_timeout_s = peer_timeout_s;
  return make_mpi_exchange(options);
}

bool launched_by_mpiexec() {
  if (env_set("PMI_RANK") && env_set("PMI_SIZE")) return true;  // hydra; srun --mpi=pmi2
  if (env_set("OMPI_COMM_WORLD_RANK")) return true;              // Open MPI's mpirun
  if (env_set("PMIX_RANK")) return true;                         // srun --mpi=pmix
  return env_set("SLURM_PROCID") && env_set("PMI_FD");           // srun --mpi=pmi2, older
}

std::vector<std::string> mpiexec_command(int processes, const std::vector<std::string>& child_argv) {
  if (processes < 1) throw std::invalid_argument(fmt::format("mpiexec_command: {} processes, at least 1 expected", processes));
  if (child_argv.empty()) throw std::invalid_argument("mpiexec_command: no program to launch (child_argv is empty)");
  // Hydra binds nothing unless told; said anyway, as the processes share cores by design.
  std::vector<std::string> argv{MXTB_MPIEXEC, "-n", std::to_string(processes), "-bind-to", "none"};
  argv.insert(argv.end(), child_argv.begin(), child_argv.end());
  return argv;
}

}  // namespace mxtb::sim::rack
