// A failed RTL assertion stops the model: Verilator prints the assertion's name, the instance
// and the time; sim::check_assertions turns it into an RtlAssertionFailure with the cycle, which
// `mxtb` reports with the command that reruns it (apps/mxtb/rtl_rerun.h).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "Vlink_tx.h"
#include "sim/common/rtl_assert.h"
#include "verilated.h"

namespace {

// Runs f with the process's stdout (where Verilator prints) going to a file; returns what it printed.
template <class F>
std::string capture_stdout(F&& f) {
  std::fflush(stdout);
  // Anonymous: nothing left behind, wherever temporaries live.
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::tmpfile(), &std::fclose);
  REQUIRE(file != nullptr);
  std::FILE* tmp = file.get();
  const int saved = dup(1);
  dup2(fileno(tmp), 1);
  struct Restore {  // stdout back on every exit, a throwing f included
    int saved;
    ~Restore() {
      std::fflush(stdout);
      dup2(saved, 1);
      close(saved);
    }
  };
  {
    Restore restore{saved};
    f();
  }
  std::string out;
  std::rewind(tmp);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, tmp)) > 0;) out.append(buf, n);
  return out;
}

struct TxBench {
  VerilatedContext ctx;
  Vlink_tx m{&ctx, "tx"};
  uint64_t cycle = 0;

  TxBench() {
    mxtb::sim::catch_assertions(ctx);
    m.clk_i = 0;
    m.rst_ni = 0;
    m.eval();
    m.rst_ni = 1;
    m.eval();
  }
  void clock() {
    m.clk_i = 1;
    m.eval();
    ctx.timeInc(1);
    m.clk_i = 0;
    m.eval();
    ctx.timeInc(1);
    ++cycle;
    mxtb::sim::check_assertions(ctx, cycle);
  }
};

}  // namespace

TEST_CASE("rtl assertions: a model driven against its assumption stops, naming the assertion, instance and time") {
  TxBench b;
  // Training (not Active): flushing is legal.
  b.m.flush_i = 1;
  for (int i = 0; i < 10; ++i) CHECK_NOTHROW(b.clock());
  CHECK_FALSE(b.ctx.gotError());

  // A flush while Active is what link_train never does: link_tx assumes it away.
  b.m.active_i = 1;
  uint64_t failed_at = 0;
  const std::string out = capture_stdout([&] {
    try {
      b.clock();
    } catch (const mxtb::sim::RtlAssertionFailure& e) {
      failed_at = e.cycle();
    }
  });
  CHECK(failed_at == 11);
  CHECK(b.ctx.gotError());
  MESSAGE("Verilator printed: " << out);
  CHECK(out.find("env_no_flush_active") != std::string::npos);  // the assertion
  CHECK(out.find("tx.link_tx") != std::string::npos);            // the instance
  CHECK(out.find("[20]") != std::string::npos);                  // the time: the 11th rising edge
  CHECK(out.find("link_tx.sv") != std::string::npos);            // where it is written
}

TEST_CASE("rtl assertions: the failure carries its cycle in its message") {
  const mxtb::sim::RtlAssertionFailure e(1234);
  CHECK(e.cycle() == 1234);
  CHECK(std::string(e.what()).find("by cycle 1234") != std::string::npos);
}
