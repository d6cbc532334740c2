#include "host/comm/rank_group.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <optional>
#include <poll.h>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

namespace mxtb::host::comm {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

uint64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

constexpr uint64_t kCheckSeed = 7;

}  // namespace

const char* to_string(Restart r) { return r == Restart::HotSpare ? "hot-spare" : "relaunch"; }

ReformPlacement place_reform(Restart r, double stopped_ns, double restore_start_ns, double restore_end_ns, double reform_ns) {
  const double start = std::max(stopped_ns, r == Restart::HotSpare ? restore_start_ns : restore_end_ns);
  return {start, std::max(0.0, start + reform_ns - restore_end_ns)};
}

std::optional<Restart> restart_from_string(const std::string& s) {
  if (s == "hot-spare") return Restart::HotSpare;
  if (s == "relaunch") return Restart::Relaunch;
  return std::nullopt;
}

RankGroup::RankGroup(RankGroupConfig cfg, const std::vector<int>& ring, const std::vector<int>& spares)
    : cfg_(std::move(cfg)) {
  std::filesystem::create_directories(cfg_.work_dir);
  // A store left by an earlier run would hand the ranks its dead peers' addresses.
  store_dir_ = cfg_.work_dir + "/store";
  std::filesystem::remove_all(store_dir_);
  std::signal(SIGPIPE, SIG_IGN);  // a dead rank's stdin: an error to report, not a signal to die of
  if (cfg_.restart == Restart::Relaunch) {
    // The job's checkpoint, one file per rank position, for a relaunched rank to read back.
    std::vector<char> block(1 << 20, 'c');
    for (size_t p = 0; p < ring.size(); ++p) {
      std::ofstream f(fmt::format("{}/checkpoint-{}.bin", cfg_.work_dir, p), std::ios::binary);
      for (uint64_t done = 0; done < cfg_.checkpoint_bytes; done += block.size())
        f.write(block.data(), static_cast<std::streamsize>(std::min<uint64_t>(block.size(), cfg_.checkpoint_bytes - done)));
      if (!f) throw CommError(fmt::format("cannot write the checkpoint into {}", cfg_.work_dir));
    }
  }
  try {
    for (int x : ring) spawn(x);
    if (cfg_.restart == Restart::HotSpare)
      for (int x : spares) spawn(x);
    double slowest = 0;
    form(ring, &slowest);
    double s = 0;
    if (uint64_t wrong = check_all_reduce(ring, &s))
      throw CommError(fmt::format("the first communicator's all-reduce: {} elements wrong", wrong));
    loop(ring);
  } catch (...) {
    std::vector<int> xpus;
    for (const auto& [x, r] : ranks_) xpus.push_back(x);
    for (int x : xpus) stop(x);
    throw;
  }
}

RankGroup::~RankGroup() {
  std::vector<int> xpus;
  for (const auto& [x, r] : ranks_) xpus.push_back(x);
  for (int x : xpus) stop(x);
}

void RankGroup::spawn(int xpu) {
  int to_child[2], from_child[2];
  if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0)
    throw CommError(fmt::format("rank of XPU {}: pipe: {}", xpu, std::strerror(errno)));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, to_child[0], 0);
  posix_spawn_file_actions_adddup2(&fa, from_child[1], 1);
  const std::string log = fmt::format("{}/rank-xpu{}.log", cfg_.work_dir, xpu);
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  const std::string store = store_dir_;
  // A rank waits for its peers a little less than the host waits for its answer, so a peer that
  // never comes is the rank's error to report, not the host's timeout.
  const auto rank_timeout = std::max<int64_t>(1, cfg_.timeout.count() * 3 / 4);
  std::vector<std::string> args{cfg_.executable, "rank", "--library", cfg_.library, "--store", store,
                                "--timeout-ms", std::to_string(rank_timeout)};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, cfg_.executable.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(to_child[0]);
  close(from_child[1]);
  if (rc != 0) {
    close(to_child[1]);
    close(from_child[0]);
    throw CommError(fmt::format("rank of XPU {}: cannot start {}: {}", xpu, cfg_.executable, std::strerror(rc)));
  }
  ranks_[xpu] = Rank{pid, to_child[1], from_child[0], "", false};
}

void RankGroup::stop(int xpu) {
  auto it = ranks_.find(xpu);
  if (it == ranks_.end()) return;
  Rank& r = it->second;
  ::kill(r.pid, SIGKILL);
  int status = 0;
  waitpid(r.pid, &status, 0);
  close(r.in);
  close(r.out);
  ranks_.erase(it);
}

pid_t RankGroup::pid(int xpu) const {
  auto it = ranks_.find(xpu);
  return it == ranks_.end() ? -1 : it->second.pid;
}

void RankGroup::kill(int xpu) {
  if (!ranks_.count(xpu)) return;
  killed_mono_ns_ = mono_ns();
  stop(xpu);
  // The host knows the rank is gone (its XPU died): it revokes the survivors' communicator, as
  // MPIX_Comm_revoke or ncclCommRevoke would, rather than wait for each to notice on its own (a
  // survivor whose peers are alive can wait out the library's whole timeout).
  for (auto& [x, r] : ranks_)
    if (r.looping) try {
        send(x, "revoke");
      } catch (const CommError&) {
        // That rank has died too: the re-form names it.
      }
}

void RankGroup::send(int xpu, const std::string& line) {
  auto it = ranks_.find(xpu);
  if (it == ranks_.end()) throw CommError(fmt::format("no rank process for XPU {}", xpu));
  const std::string l = line + "\n";
  if (write(it->second.in, l.data(), l.size()) != static_cast<ssize_t>(l.size()))
    throw CommError(fmt::format("rank of XPU {} does not take requests ({}): it has died", xpu, std::strerror(errno)));
}

std::vector<std::string> RankGroup::answers(const std::vector<int>& xpus, const char* what) {
  for (int x : xpus)
    if (!ranks_.count(x)) throw CommError(fmt::format("no rank process for XPU {}", x));
  std::vector<std::optional<std::string>> got(xpus.size());
  const auto deadline = Clock::now() + cfg_.timeout;
  for (;;) {
    std::vector<pollfd> waiting;
    std::vector<size_t> waiting_index;
    for (size_t i = 0; i < xpus.size(); ++i) {
      if (got[i]) continue;
      Rank& r = ranks_[xpus[i]];
      if (auto nl = r.buffer.find('\n'); nl != std::string::npos) {
        got[i] = r.buffer.substr(0, nl);
        r.buffer.erase(0, nl + 1);
        continue;
      }
      waiting.push_back(pollfd{r.out, POLLIN, 0});
      waiting_index.push_back(i);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (waiting.empty() || left <= 0) break;
    if (poll(waiting.data(), waiting.size(), static_cast<int>(left)) <= 0) continue;
    for (size_t k = 0; k < waiting.size(); ++k) {
      if (!waiting[k].revents) continue;
      const int x = xpus[waiting_index[k]];
      char buf[4096];
      const ssize_t n = read(waiting[k].fd, buf, sizeof buf);
      if (n <= 0) throw CommError(fmt::format("rank of XPU {} ended while it owed {} (its log: {}/rank-xpu{}.log)", x, what,
                                              cfg_.work_dir, x));
      ranks_[x].buffer.append(buf, static_cast<size_t>(n));
    }
  }
  // Every rank still silent is named, before any that answered with an error: a peer waiting on a
  // frozen rank either fails first, with an error that would name the wrong XPU, or is silent too
  // (Gloo waits five times its timeout for a first connect), and the host cannot tell which of
  // the silent ones the others wait for.
  std::string silent;
  for (size_t i = 0; i < xpus.size(); ++i)
    if (!got[i])
      silent += fmt::format("{}rank of XPU {} did not answer {} within {} ms", silent.empty() ? "" : "; ", xpus[i], what,
                            cfg_.timeout.count());
  if (!silent.empty()) throw CommError(silent);
  std::vector<std::string> lines;
  for (size_t i = 0; i < xpus.size(); ++i) {
    if (got[i]->rfind("error ", 0) == 0)
      throw CommError(fmt::format("rank of XPU {} ({}): {}", xpus[i], what, got[i]->substr(6)));
    lines.push_back(std::move(*got[i]));
  }
  return lines;
}

void RankGroup::form(const std::vector<int>& ring, double* slowest_s) {
  ++generation_;
  const int n = static_cast<int>(ring.size());
  for (int i = 0; i < n; ++i) send(ring[static_cast<size_t>(i)], fmt::format("form gen-{} {} {}", generation_, i, n));
  step("form-sent");
  *slowest_s = 0;
  for (const std::string& line : answers(ring, "the rendezvous")) {
    std::istringstream a(line);
    std::string word;
    uint64_t ns = 0;
    a >> word >> ns;
    *slowest_s = std::max(*slowest_s, static_cast<double>(ns) * 1e-9);
  }
  ring_ = ring;
  step("formed");
}

void RankGroup::step(const char* what) {
  if (cfg_.on_step) cfg_.on_step(what);
}

uint64_t RankGroup::check_all_reduce(const std::vector<int>& ring, double* s) {
  const auto t0 = Clock::now();
  for (int x : ring) send(x, fmt::format("allreduce {} {}", cfg_.count, kCheckSeed));
  uint64_t wrong = 0;
  for (const std::string& line : answers(ring, "the check all-reduce")) {
    std::istringstream a(line);
    std::string word;
    uint64_t ns = 0, w = 0;
    a >> word >> ns >> w;
    wrong += w;
  }
  *s = since(t0);
  return wrong;
}

// The job in its steady state before anything can fail: every rank's first step done.
void RankGroup::loop(const std::vector<int>& ring) {
  for (int x : ring) send(x, fmt::format("loop {} {}", cfg_.count, kCheckSeed + 1));
  const std::vector<std::string> first = answers(ring, "its step loop's first all-reduce");
  for (size_t i = 0; i < ring.size(); ++i) {
    const int x = ring[i];
    ranks_[x].looping = first[i] == "looping";
    if (!ranks_[x].looping) throw CommError(fmt::format("rank of XPU {}: its step loop ended at once: {}", x, first[i]));
  }
}

Reform RankGroup::reform(const std::vector<int>& ring) {
  Reform out;
  out.restart = cfg_.restart;
  out.library = cfg_.library;
  out.ranks = static_cast<int>(ring.size());
  // The survivors' step loop failed on its own once a peer was gone: when, by their clocks.
  uint64_t last_stop = killed_mono_ns_, first_stop = 0;
  std::vector<int> looping;
  for (int x : ring_)
    if (auto it = ranks_.find(x); it != ranks_.end() && it->second.looping) looping.push_back(x);
  const std::vector<std::string> ends = answers(looping, "the end of its step loop (a peer died)");
  for (size_t i = 0; i < looping.size(); ++i) {
    const int x = looping[i];
    std::istringstream a(ends[i]);
    std::string word, why;
    uint64_t steps = 0, at = 0;
    a >> word >> steps >> at;
    std::getline(a >> std::ws, why);
    ranks_[x].looping = false;
    if (out.abort_reason.empty() || at < first_stop) {
      first_stop = at;
      out.abort_reason = fmt::format("XPU {}: {}", x, why);
    }
    last_stop = std::max(last_stop, at);
  }
  out.abort_s = killed_mono_ns_ ? static_cast<double>(last_stop - killed_mono_ns_) * 1e-9 : 0;
  if (cfg_.restart == Restart::Relaunch) {
    // Every rank stopped, then the job started again: processes, checkpoints, rendezvous.
    auto t0 = Clock::now();
    std::vector<int> all;
    for (const auto& [x, r] : ranks_) all.push_back(x);
    for (int x : all) stop(x);
    out.stop_s = since(t0);
    step("stopped");
    t0 = Clock::now();
    store_dir_ = fmt::format("{}/store-relaunch-{}", cfg_.work_dir, generation_ + 1);  // rendezvous from scratch
    std::filesystem::remove_all(store_dir_);
    for (int x : ring) spawn(x);
    for (size_t p = 0; p < ring.size(); ++p)
      send(ring[p], fmt::format("load {}/checkpoint-{}.bin {}", cfg_.work_dir, p, cfg_.checkpoint_bytes));
    answers(ring, "the checkpoint read");
    out.start_s = since(t0);
    step("started");
  }
  const auto t0 = Clock::now();
  double slowest = 0;
  form(ring, &slowest);
  out.form_s = since(t0);
  out.wrong = check_all_reduce(ring, &out.first_s);
  loop(ring);
  return out;
}

}  // namespace mxtb::host::comm
