#include "host/comm/rank.h"

#include "host/comm/communicator.h"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>
#include <time.h>

namespace mxtb::host::comm {

namespace {

uint64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

}  // namespace

int serve_rank(std::istream& in, std::ostream& out, const std::string& library, const std::string& store_dir,
               std::chrono::milliseconds timeout) {
  std::unique_ptr<Communicator> comm;
  std::thread loop;          // the step loop, while it runs
  std::mutex out_mutex;      // its answer and the reader's never interleave
  auto answer = [&](const std::string& text) {
    std::lock_guard<std::mutex> lock(out_mutex);
    out << text << std::endl;
  };
  auto end_loop = [&](bool revoke) {
    if (!loop.joinable()) return;
    if (revoke) comm->revoke();
    loop.join();
  };
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream req(line);
    std::string op;
    req >> op;
    if (op.empty()) continue;
    if (op == "revoke") {
      end_loop(true);
      continue;
    }
    end_loop(op == "exit");
    if (op == "exit") break;
    const uint64_t t0 = mono_ns();
    try {
      if (op == "form") {
        Rendezvous r;
        r.store_dir = store_dir;
        r.timeout = timeout;
        if (!(req >> r.prefix >> r.rank >> r.size)) throw std::invalid_argument("usage: form PREFIX RANK SIZE");
        comm.reset();
        comm = connect(library, r);
        answer(fmt::format("formed {}", mono_ns() - t0));
      } else if (op == "load") {
        std::string path;
        uint64_t bytes = 0;
        if (!(req >> path >> bytes)) throw std::invalid_argument("usage: load FILE BYTES");
        std::ifstream f(path, std::ios::binary);
        std::vector<char> buf(1 << 20);
        uint64_t got = 0;
        while (got < bytes && f.read(buf.data(), static_cast<std::streamsize>(std::min<uint64_t>(buf.size(), bytes - got))))
          got += static_cast<uint64_t>(f.gcount());
        got += static_cast<uint64_t>(f.gcount()) * (got < bytes);
        if (got < bytes) throw std::runtime_error(fmt::format("checkpoint {} has {} of its {} bytes", path, got, bytes));
        answer(fmt::format("loaded {}", mono_ns() - t0));
      } else if (op == "allreduce" || op == "loop") {
        uint64_t count = 0, seed = 0;
        if (!(req >> count >> seed) || count == 0) throw std::invalid_argument("usage: " + op + " COUNT SEED");
        if (!comm) throw std::logic_error("no communicator formed");
        std::vector<float> data(count);
        auto fill = [&] {
          for (uint64_t e = 0; e < count; ++e) data[e] = check_input(seed, comm->rank(), e);
        };
        if (op == "allreduce") {
          fill();
          comm->all_reduce(data);
          const uint64_t t1 = mono_ns();
          answer(fmt::format("done {} {}", t1 - t0, check_wrong(data, seed, comm->size())));
        } else {
          // The job's step loop: all-reduces until one fails (a peer gone, or the host's revoke).
          loop = std::thread([&comm, &answer, data = std::move(data), count, seed]() mutable {
            uint64_t steps = 0;
            std::string what;
            for (;; ++steps) {
              for (uint64_t e = 0; e < count; ++e) data[e] = check_input(seed, comm->rank(), e);
              try {
                comm->all_reduce(data);
              } catch (const CommError& e) {
                what = e.what();
                break;
              }
              if (check_wrong(data, seed, comm->size())) {
                what = fmt::format("all-reduce {} wrong", steps);
                break;
              }
              if (steps == 0) answer("looping");  // the job is in its steady state
            }
            const uint64_t at = mono_ns();
            comm->revoke();  // what this rank saw, its peers see at once: its connections go
            answer(fmt::format("stopped {} {} {}", steps, at, one_line(what)));
          });
        }
      } else {
        throw std::invalid_argument("unknown request '" + op + "'");
      }
    } catch (const std::exception& e) {
      answer("error " + one_line(e.what()));
    }
  }
  end_loop(true);  // stdin closed (the host is gone) or exit: no loop outlives the reader
  return 0;
}

}  // namespace mxtb::host::comm
