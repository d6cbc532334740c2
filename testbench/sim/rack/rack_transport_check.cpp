// The rack's MPI transport under a real launch (run by test_rack_transport.py under
// `mpiexec -n 2` and `-n 4`). One scenario a run, named by the first argument:
//   exchange  many windows of deterministic payloads (sizes 0..~300 B, peers a ring so that
//             non-peers are checked empty), then gather, min_all, a matching check_same; exits 0
//             and rank 0 prints "exchange ok" when all held, else exits 1 naming the first miss
//   mismatch  check_same where rank <odd> differs: every process catches the error, prints it
//             ("rank R caught: ...") and exits 2
//   kill <victim> <dir>
//             exchanges; after 200 windows rank 0 kills process <victim> with SIGKILL and prints
//             "killed rank V pid P at T" (T: CLOCK_MONOTONIC seconds); survivors write the error
//             they catch to <dir>/rank-R.txt (hydra's output forwarding drops what processes it
//             kills wrote last) and exit 3
//   stall     as kill, but the victim stops itself (SIGSTOP) instead: survivors time out
// Every process prints "pid R P" first, so the driver can check that none is left.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/rack/mpi_exchange.h"

namespace rack = mxtb::sim::rack;

namespace {

// The payload process `from` sends process `to` in window `w`: its size cycles through 0 and odd
// lengths up to ~300 bytes, every byte a function of (w, from, to, index).
std::vector<uint8_t> payload(uint64_t w, int from, int to) {
  size_t n = (w * 37 + static_cast<uint64_t>(from) * 11 + static_cast<uint64_t>(to) * 5) % 301;
  if (w % 17 == 0) n = 0;
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(w * 131 + static_cast<uint64_t>(from) * 31 + static_cast<uint64_t>(to) * 7 + i);
  return bytes;
}

double monotonic_s() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

std::vector<int> ring_peers(int rank, int size) {
  std::vector<int> peers;
  if (size == 1) return peers;
  int left = (rank + size - 1) % size, right = (rank + 1) % size;
  peers.push_back(right);
  if (left != right) peers.push_back(left);
  return peers;
}

bool is_peer(const std::vector<int>& peers, int r) {
  for (int p : peers)
    if (p == r) return true;
  return false;
}

std::vector<std::vector<uint8_t>> outbox_for(uint64_t w, int rank, int size, const std::vector<int>& peers) {
  std::vector<std::vector<uint8_t>> out(static_cast<size_t>(size));
  for (int p : peers) out[static_cast<size_t>(p)] = payload(w, rank, p);
  // What a non-peer's entry holds must not travel.
  for (int r = 0; r < size; ++r)
    if (!is_peer(peers, r)) out[static_cast<size_t>(r)] = {0xde, 0xad};
  return out;
}

int run_exchange(rack::WindowExchange& ex, uint64_t windows) {
  const int rank = ex.rank(), size = ex.size();
  std::vector<int> peers = ring_peers(rank, size);
  // With 4 processes the ring leaves the opposite process out of each one's peers: checked empty.
  ex.set_peers(peers);
  for (uint64_t w = 0; w < windows; ++w) {
    auto inbox = ex.exchange(outbox_for(w, rank, size, peers));
    if (inbox.size() != static_cast<size_t>(size)) {
      fmt::print(stderr, "rank {}: window {}: inbox of {} entries, {} expected\n", rank, w, inbox.size(), size);
      return 1;
    }
    for (int r = 0; r < size; ++r) {
      auto expected = is_peer(peers, r) ? payload(w, r, rank) : std::vector<uint8_t>{};
      if (inbox[static_cast<size_t>(r)] != expected) {
        fmt::print(stderr, "rank {}: window {}: from rank {} got {} bytes, expected {}\n", rank, w, r, inbox[static_cast<size_t>(r)].size(),
                   expected.size());
        return 1;
      }
    }
  }
  auto all = ex.gather(fmt::format("hello from {}", rank));
  if (rank == 0) {
    if (all.size() != static_cast<size_t>(size)) {
      fmt::print(stderr, "gather: {} strings, {} expected\n", all.size(), size);
      return 1;
    }
    for (int r = 0; r < size; ++r) {
      if (all[static_cast<size_t>(r)] != fmt::format("hello from {}", r)) {
        fmt::print(stderr, "gather: entry {} is '{}'\n", r, all[static_cast<size_t>(r)]);
        return 1;
      }
    }
  } else if (!all.empty()) {
    fmt::print(stderr, "gather: rank {} got {} strings, none expected\n", rank, all.size());
    return 1;
  }
  // The smallest is held by the last rank, so that a minimum taken over rank 0 alone fails.
  uint64_t smallest = ex.min_all(1000000 - static_cast<uint64_t>(rank) * 1000);
  uint64_t expected = 1000000 - static_cast<uint64_t>(size - 1) * 1000;
  if (smallest != expected) {
    fmt::print(stderr, "min_all: rank {} got {}, expected {}\n", rank, smallest, expected);
    return 1;
  }
  ex.check_same("the rack file's digest", "sha256:0123");
  if (rank == 0) fmt::print("exchange ok: {} processes, {} windows\n", size, windows);
  return 0;
}

int run_mismatch(rack::WindowExchange& ex) {
  const int odd = ex.size() - 1;
  try {
    ex.check_same("the rack file's digest", ex.rank() == odd ? "sha256:bbbb" : "sha256:aaaa");
  } catch (const rack::RackTransportError& e) {
    fmt::print("rank {} caught: {}\n", ex.rank(), e.what());
    std::fflush(stdout);
    // The transport still works after a disagreement: the processes end together and cleanly.
    ex.min_all(0);
    return 2;
  }
  fmt::print("rank {}: check_same did not throw\n", ex.rank());
  return 0;
}

int run_failure(rack::WindowExchange& ex, int victim, bool stop_instead, const std::string& report_dir) {
  const int rank = ex.rank(), size = ex.size();
  auto pids = ex.gather(std::to_string(getpid()));
  std::vector<int> peers;
  for (int r = 0; r < size; ++r)
    if (r != rank) peers.push_back(r);
  ex.set_peers(peers);
  try {
    for (uint64_t w = 0;; ++w) {
      if (w == 200 && rank == 0) {
        long pid = std::stol(pids.at(static_cast<size_t>(victim)));
        fmt::print("killed rank {} pid {} at {:.6f}\n", victim, pid, monotonic_s());
        std::fflush(stdout);
        kill(static_cast<pid_t>(pid), stop_instead ? SIGSTOP : SIGKILL);
      }
      ex.exchange(outbox_for(w, rank, size, peers));
    }
  } catch (const rack::RackTransportError& e) {
    // Written whole, then renamed: hydra kills the survivors within milliseconds, and one killed
    // between opening its report and writing it left an empty rank-R.txt (a fresh-clone CI run,
    // 2026-12-07). A report now exists complete or not at all.
    const std::string path = fmt::format("{}/rank-{}.txt", report_dir, rank);
    {
      std::ofstream part(path + ".part");
      part << fmt::format("rank {} caught: {}\n", rank, e.what());
    }
    std::rename((path + ".part").c_str(), path.c_str());
    return 3;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "usage: {} exchange [windows] | mismatch | kill <victim> <dir> | stall <victim> <dir>\n", argv[0]);
    return 64;
  }
  const std::string scenario = argv[1];
  rack::MpiExchangeOptions options;
  options.peer_timeout_s = scenario == "stall" ? 2.0 : 10.0;
  // The exchange scenario lets rank 0 warn when the processes outnumber the cores (the driver
  // counts the lines); the others keep their output to what they check.
  options.warn_oversubscribed = scenario == "exchange";
  auto ex = rack::make_mpi_exchange(options);
  fmt::print("pid {} {}\n", ex->rank(), getpid());
  std::fflush(stdout);
  ex->introduce(fmt::format("servers {}-{}", 2 * ex->rank(), 2 * ex->rank() + 1));
  int rc = 64;
  if (scenario == "exchange") {
    rc = run_exchange(*ex, argc > 2 ? std::stoull(argv[2]) : 3000);
  } else if (scenario == "mismatch") {
    rc = run_mismatch(*ex);
  } else if ((scenario == "kill" || scenario == "stall") && argc > 3) {
    int victim = std::atoi(argv[2]);
    if (victim <= 0 || victim >= ex->size()) {
      fmt::print(stderr, "victim {}: a rank from 1 to {} expected\n", victim, ex->size() - 1);
      return 64;
    }
    rc = run_failure(*ex, victim, scenario == "stall", argv[3]);
  } else {
    fmt::print(stderr, "unknown scenario '{}'\n", scenario);
  }
  std::fflush(stdout);
  return rc;
}
