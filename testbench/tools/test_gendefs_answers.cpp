// tools/gendefs' register answers (protocol/emu_regs.json's "register_answers": when the emulator
// answers a read and a write of each register of its block): generated into the C++ header and the
// table; a bad or missing answer is rejected with a message naming the register. And the emulator's
// rule on the generated map (sim/emulator/emu_answer.h) is the one the emulator applied before the
// registers said it: its hand list, every word offset of the block checked.
#include "sim/emulator/emu_answer.h"

#include <mxtb/emu_regs.h>

#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include "gendefs_runner.h"

namespace {
using mxtb::test::run_gendefs;
using mxtb::test::slurp;

const char* kGoodAnswers = R"({"name": "a", "doc": "d", "sv_package": "a_pkg", "cpp_namespace": "a", "addr_width": 12,
  "register_answers": true,
  "registers": [
    {"name": "CTRL", "offset": "0x000", "access": "rw", "read": "in_clock", "write": "acts_on_server", "doc": "c",
     "fields": [{"name": "en", "bits": "0", "doc": "e"}]},
    {"name": "STAT", "offset": 4, "access": "ro", "read": "stops_step", "doc": "s",
     "fields": [{"name": "busy", "bits": "31", "doc": "b"}]},
    {"name": "GO", "offset": 8, "access": "wo", "write": "runs_time", "doc": "g",
     "fields": [{"name": "ns", "bits": "31:0", "doc": "n"}]}]})";
}  // namespace

TEST_CASE("gendefs generates register answers: C++ kRead and kWrite, RegInfo, the table's columns; SV unchanged") {
  std::string sv = "gendefs_answers_out.tmp.sv", h = "gendefs_answers_out.tmp.h", md = "gendefs_answers_out.tmp.md";
  auto r = run_gendefs(kGoodAnswers, "--sv " + sv + " --cpp " + h + " --md " + md);
  REQUIRE(r.rc == 0);
  std::string c = slurp(h);
  CHECK(c.find("enum class ReadAnswer : uint8_t { None, InClock, StopsStep };") != std::string::npos);
  CHECK(c.find("enum class WriteAnswer : uint8_t { None, InClock, RunsTime, ActsOnServer };") != std::string::npos);
  CHECK(c.find("inline constexpr ReadAnswer kRead = ReadAnswer::StopsStep;\ninline constexpr WriteAnswer kWrite = "
               "WriteAnswer::None;") != std::string::npos);
  CHECK(c.find("inline constexpr ReadAnswer kRead = ReadAnswer::None;\ninline constexpr WriteAnswer kWrite = "
               "WriteAnswer::RunsTime;") != std::string::npos);
  CHECK(c.find("\"c\", reg::ctrl::kRead, reg::ctrl::kWrite},") != std::string::npos);
  std::string m = slurp(md);
  CHECK(m.find("| offset | name | access | words | reset | read | write | meaning |") != std::string::npos);
  CHECK(m.find("| 0x0000 | [`CTRL`](#ctrl) | rw | 1 | 0x00000000 | `in_clock` | `acts_on_server` | c |") != std::string::npos);
  CHECK(m.find("| 0x0008 | [`GO`](#go) | wo | 1 | 0x00000000 | — | `runs_time` | g |") != std::string::npos);
  CHECK(m.find("0x0004, ro; read `stops_step`, write —. s") != std::string::npos);
  // The SV package says nothing of them: the RTL answers no access of the block itself.
  std::string without = kGoodAnswers;
  for (const std::string& cut : {std::string("\n  \"register_answers\": true,"), std::string(" \"read\": \"in_clock\","),
                                 std::string(" \"write\": \"acts_on_server\","), std::string(" \"read\": \"stops_step\","),
                                 std::string(" \"write\": \"runs_time\",")}) {
    size_t at = without.find(cut);
    REQUIRE(at != std::string::npos);
    without.erase(at, cut.size());
  }
  std::string sv0 = "gendefs_answers_plain.tmp.sv";
  REQUIRE(run_gendefs(without, "--sv " + sv0).rc == 0);
  CHECK(slurp(sv) == slurp(sv0));
  for (auto* p : {&sv, &h, &md, &sv0}) std::remove(p->c_str());
}

TEST_CASE("gendefs rejects a bad or missing register answer, naming the register, and leaves outputs untouched") {
  std::string out = "gendefs_answers_keep.tmp.h";
  mxtb::test::check_rejections(kGoodAnswers, {
      {" \"read\": \"stops_step\",", "", "$.registers[1] (STAT): missing field \"read\" (in_clock or stops_step)"},
      {" \"write\": \"acts_on_server\",", "", "$.registers[0] (CTRL): missing field \"write\" (in_clock, runs_time or acts_on_server)"},
      {"\"read\": \"in_clock\"", "\"read\": \"soon\"", "$.registers[0] (CTRL).read: unknown read answer \"soon\" (in_clock or stops_step)"},
      {"\"write\": \"runs_time\"", "\"write\": \"stops_step\"",
       "$.registers[2] (GO).write: unknown write answer \"stops_step\" (in_clock, runs_time or acts_on_server)"},
      {"\"read\": \"in_clock\"", "\"read\": 1", "$.registers[0] (CTRL).read: must be a string"},
      {"\"write\": \"runs_time\",", "\"write\": \"runs_time\", \"read\": \"in_clock\",",
       "$.registers[2] (GO).read: a wo register is never read: it has no read answer"},
      {"\"read\": \"stops_step\",", "\"read\": \"stops_step\", \"write\": \"in_clock\",",
       "$.registers[1] (STAT).write: a ro register is never written: it has no write answer"},
      {"\"register_answers\": true", "\"register_answers\": false",
       "$.registers[0] (CTRL).read: an answer, but the file does not set \"register_answers\""},
      {"\"register_answers\": true", "\"register_answers\": \"yes\"", "$.register_answers: must be true or false"},
  }, "--cpp", out);
  // The real map: an answer taken away is named with its register.
  std::string real = slurp(MXTB_SOURCE_DIR "/protocol/emu_regs.json");
  const std::string cut = " \"read\": \"stops_step\",";
  size_t at = real.find(cut, real.find("\"TIME_NS_LO\""));
  REQUIRE(at != std::string::npos);
  real.erase(at, cut.size());
  auto r = run_gendefs(real, "--cpp " + out);
  CHECK(r.rc != 0);
  CHECK(r.err.find("(TIME_NS_LO): missing field \"read\"") != std::string::npos);
  std::remove(out.c_str());
}

// The emulator's hand list before its block's registers said when they are answered
// (answer_within_clock() in sim/emulator/emulator.cpp, restructure-sim): the reads that stop the
// server's step (the kernel's time and cycles, read at a clock the server stopped at; the rate, the
// wall clock's), and the writes answered within the clock (they only set one of the block's
// registers). Every other read was answered within the clock, every other write stopped the step.
TEST_CASE("the emulator block's generated answers are the emulator's hand list, at every word offset") {
  namespace er = mxtb::emu::reg;
  const std::set<uint32_t> stop_reads{er::time_ns_lo::kOffset, er::time_ns_hi::kOffset, er::cycle_lo::kOffset,
                                      er::cycle_hi::kOffset, er::rtf_ppm::kOffset};
  std::set<uint32_t> clock_writes{er::run_timeout_ns::kOffset, er::fault_at_lo::kOffset, er::fault_at_hi::kOffset,
                                        er::fault_target::kOffset,   er::fault_value::kOffset, er::job_ring::kOffset,
                                        er::job_spec::kOffset,       er::job_bytes::kOffset,   er::job_seed::kOffset,
                                        er::restore_src::kOffset,    er::restore_dst::kOffset, er::restore_bytes::kOffset,
                                        er::event_pop::kOffset};
  REQUIRE(stop_reads.size() + clock_writes.size() == 18);
  // JOB_RANKS came later (the rack's job): each word set as JOB_RING is.
  for (uint32_t w = 0; w < er::job_ranks::kCount; ++w) clock_writes.insert(er::job_ranks::kOffset + 4 * w);
  // JOB_SELECT and EVENT_FILTER came with a rack's several tenants: each sets one register.
  clock_writes.insert(er::job_select::kOffset);
  clock_writes.insert(er::event_filter::kOffset);
  for (uint32_t off = 0; off < (1u << mxtb::emu::kAddrWidth); off += 4) {
    const auto* r = mxtb::emu::register_at(off);
    INFO(std::string(r ? r->name : "(no register)") << " at offset " << off);
    CHECK(mxtb::sim::emu_read_within_clock(off) == !stop_reads.count(off));
    CHECK(mxtb::sim::emu_write_within_clock(off) == (clock_writes.count(off) > 0));
  }
  // The answers are given exactly where the access is allowed, and say what the block's code does.
  for (const auto& r : mxtb::emu::kRegisters) {
    INFO(std::string(r.name));
    using mxtb::emu::Access;
    using mxtb::emu::ReadAnswer;
    using mxtb::emu::WriteAnswer;
    CHECK((r.read == ReadAnswer::None) == (r.access == Access::WO));
    CHECK((r.write == WriteAnswer::None) == (r.access == Access::RO));
    const bool runs_time = r.offset == er::advance_ns::kOffset || r.offset == er::run_until::kOffset;
    const bool on_server = r.offset == er::fault_arm::kOffset || r.offset == er::job_ctrl::kOffset ||
                           r.offset == er::restore_ctrl::kOffset || r.offset == er::wave_ctrl::kOffset;
    CHECK((r.write == WriteAnswer::RunsTime) == runs_time);
    CHECK((r.write == WriteAnswer::ActsOnServer) == on_server);
  }
}
