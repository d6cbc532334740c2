// tools/gendefs' registers section (rtl/ocs/ocs_regs.json): good maps generate the SV package,
// the C++ header and the table; bad maps are rejected with a message naming the entry, and leave
// existing outputs alone. The real map's generated header is checked for consistency too.
#include <mxtb/ocs_regs.h>

#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "gendefs_runner.h"

namespace {
using mxtb::test::slurp;
using Run = mxtb::test::GendefsRun;

Run gendefs_regs(const std::string& json_text, const std::string& args) { return mxtb::test::run_gendefs(json_text, args); }

const char* kGoodRegs = R"({"name": "r", "doc": "d", "sv_package": "r_pkg", "cpp_namespace": "r", "addr_width": 12,
  "registers": [
    {"name": "CTRL", "offset": "0x000", "access": "rw", "doc": "c",
     "fields": [{"name": "en", "bits": "0", "reset": 1, "doc": "e"},
                {"name": "mode", "bits": "7:4", "reset": 5, "doc": "m"}]},
    {"name": "STAT", "offset": 4, "access": "ro", "doc": "s",
     "fields": [{"name": "busy", "bits": "31", "doc": "b"}]},
    {"name": "TAB", "offset": "0x100", "access": "rw", "count": 16, "doc": "t",
     "fields": [{"name": "val", "bits": "15:0", "doc": "v"}]}]})";
}  // namespace

TEST_CASE("gendefs generates registers: SV offsets, fields and resets, C++ namespaces, Markdown table") {
  std::string sv = "gendefs_regs_out.tmp.sv", h = "gendefs_regs_out.tmp.h", md = "gendefs_regs_out.tmp.md";
  Run r = gendefs_regs(kGoodRegs, "--sv " + sv + " --cpp " + h + " --md " + md);
  REQUIRE(r.rc == 0);
  std::string s = slurp(sv);
  CHECK(s.find("localparam logic [11:0] CTRL_OFFSET = 12'h000;") != std::string::npos);
  CHECK(s.find("localparam logic [31:0] CTRL_RESET = 32'h00000051;") != std::string::npos);
  CHECK(s.find("localparam int CTRL_MODE_LSB = 4;") != std::string::npos);
  CHECK(s.find("localparam int CTRL_MODE_WIDTH = 4;") != std::string::npos);
  CHECK(s.find("localparam logic [3:0] CTRL_MODE_RESET = 4'd5;") != std::string::npos);
  CHECK(s.find("localparam int TAB_COUNT = 16;") != std::string::npos);
  CHECK(s.find("localparam logic [11:0] TAB_OFFSET = 12'h100;") != std::string::npos);
  std::string c = slurp(h);
  CHECK(c.find("namespace ctrl {") != std::string::npos);
  CHECK(c.find("inline constexpr uint32_t kModeMask = 0x000000f0u;") != std::string::npos);
  CHECK(c.find("inline constexpr Access kAccess = Access::RO;") != std::string::npos);
  CHECK(c.find("{\"TAB\", reg::tab::kOffset, reg::tab::kCount") != std::string::npos);
  std::string m = slurp(md);
  CHECK(m.find("| 0x0100...0x013c | [`TAB`](#tab) | rw | 16 |") != std::string::npos);
  CHECK(m.find("| 7:4 | `mode` | 5 | m |") != std::string::npos);
  for (auto* p : {&sv, &h, &md}) std::remove(p->c_str());
}

TEST_CASE("gendefs rejects bad register maps, names the entry, and leaves outputs untouched") {
  std::string out = "gendefs_regs_keep.tmp.sv";
  mxtb::test::check_rejections(kGoodRegs, {
      {"\"offset\": 4,", "\"offset\": 0,",
       "$.registers[1] (STAT).offset: 0x0000..0x0003 overlaps register \"CTRL\" at 0x0000..0x0003"},
      {"\"offset\": 4,", "\"offset\": \"0x13c\",", "$.registers[2] (TAB).offset: 0x0100..0x013f overlaps register \"STAT\" at 0x013c..0x013f"},
      {"\"count\": 16", "\"count\": 1024", "$.registers[2] (TAB).offset: 0x0100 + 1024 words is past the 12-bit address space"},
      {"\"offset\": 4,", "\"offset\": 6,", "$.registers[1] (STAT).offset: 0x0006 is not a multiple of 4"},
      {"\"bits\": \"7:4\"", "\"bits\": \"7:0\"",
       "$.registers[0] (CTRL).fields[1] (mode).bits: bits 7:0 overlap field \"en\" (0:0)"},
      {"\"bits\": \"31\"", "\"bits\": \"32\"", "(STAT).fields[0] (busy).bits: \"32\" goes past bit 31"},
      {"\"bits\": \"15:0\"", "\"bits\": \"40:33\"", "(TAB).fields[0] (val).bits: \"40:33\" goes past bit 31"},
      {"\"bits\": \"7:4\"", "\"bits\": \"4:7\"", "(mode).bits: \"4:7\": msb below lsb"},
      {"\"name\": \"STAT\"", "\"name\": \"CTRL\"", "$.registers[1] (CTRL): name \"CTRL\" is defined twice"},
      {"\"name\": \"STAT\"", "\"name\": \"ctrl\"", "(ctrl): name \"ctrl\" differs from another register only in case"},
      {"\"name\": \"mode\"", "\"name\": \"en\"", "(CTRL).fields[1] (en).name: field \"en\" is defined twice in CTRL"},
      {"\"access\": \"ro\"", "\"access\": \"r/o\"", "$.registers[1] (STAT).access: unknown access \"r/o\""},
      {"\"reset\": 5", "\"reset\": 16", "(CTRL).fields[1] (mode).reset: value 16 does not fit in 4 bits"},
      {"\"fields\": [{\"name\": \"busy\", \"bits\": \"31\", \"doc\": \"b\"}]", "\"fields\": []",
       "$.registers[1] (STAT).fields: must be a non-empty array"},
      {"\"offset\": \"0x100\"", "\"offset\": \"256\"", "(TAB).offset: must be a non-negative integer or a \"0x...\" string"},
  }, "--sv", out);
  std::remove(out.c_str());
}

TEST_CASE("the generated OCS register map is ordered, disjoint and consistent") {
  using namespace mxtb::ocs;
  static_assert(reg::status::kOffset == 0x10);
  static_assert(find_register("EVENT_INFO")->access == Access::RC);
  static_assert(register_at(reg::staged_dac::addr(255))->offset == reg::staged_dac::kOffset);
  CHECK(kNumRegisters == std::size(kRegisters));
  for (size_t i = 0; i < kNumRegisters; ++i) {
    const RegInfo& r = kRegisters[i];
    INFO(r.name);
    CHECK(r.offset % 4 == 0);
    CHECK(r.offset + 4 * r.count <= (1u << kAddrWidth));
    if (i) CHECK(kRegisters[i - 1].offset + 4 * kRegisters[i - 1].count <= r.offset);
    uint32_t used = 0, reset = 0;
    for (size_t f = 0; f < r.n_fields; ++f) {
      CHECK((used & r.fields[f].mask) == 0);
      used |= r.fields[f].mask;
      reset = r.fields[f].set(reset, r.fields[f].reset);
    }
    CHECK(reset == r.reset);
    CHECK(register_at(r.addr(r.count - 1)) == &r);
  }
  CHECK(register_at(0x004C) == nullptr);  // a gap in the map
  CHECK(find_register("NOPE") == nullptr);
  CHECK(static_cast<int>(Event::Overflow) == 15);
  CHECK(to_string(State::Rollback) == "Rollback");
}
