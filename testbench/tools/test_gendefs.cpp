// tools/gendefs is the single source of truth for the link layer's enums: it must reject bad
// definitions loudly and leave existing outputs alone when it does.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "gendefs_runner.h"

namespace {
using mxtb::test::slurp;

mxtb::test::GendefsRun gendefs(const std::string& json_text, const std::string& out_sv) {
  return mxtb::test::run_gendefs(json_text, "--sv " + out_sv);
}

const char* kGood = R"({"name": "t", "doc": "d", "sv_package": "t_pkg", "cpp_namespace": "t",
  "enums": [{"name": "e", "cpp_name": "E", "sv_type": "e_e", "sv_prefix": "X", "width": 2, "doc": "d",
             "values": [{"name": "A", "value": 0, "doc": "a"}, {"name": "B", "value": 3, "doc": "b"}]}]})";
}  // namespace

TEST_CASE("gendefs writes the SV package from good definitions") {
  std::string out = "gendefs_out.tmp.sv";
  auto r = gendefs(kGood, out);
  CHECK(r.rc == 0);
  std::string sv = slurp(out);
  CHECK(sv.find("package t_pkg;") != std::string::npos);
  CHECK(sv.find("XB = 2'd3") != std::string::npos);
  std::remove(out.c_str());
}

TEST_CASE("gendefs rejects bad definitions, names the entry, and leaves outputs untouched") {
  std::string out = "gendefs_keep.tmp.sv";
  mxtb::test::check_rejections(kGood, {
      {"\"value\": 3", "\"value\": 4", "$.enums[0].values[1].value: value 4 does not fit in 2 bits"},
      {"\"value\": 3", "\"value\": 0", "value 0 is used twice in e"},
      {"\"name\": \"B\"", "\"name\": \"A\"", "\"A\" is used twice in e"},
      {"\"sv_prefix\": \"X\"", "\"sv_prefix\": \"1X\"", "$.enums[0].sv_prefix: \"1X\" is not an identifier"},
      {"\"width\": 2", "\"width\": 0", "$.enums[0].width: must be 1..64"},
      {"\"doc\": \"d\",", "", "missing field \"doc\""},
      {"{\"name\": \"t\"", "{\"name\": \"t\",,", "not valid JSON"},
  }, "--sv", out);
  std::remove(out.c_str());
}
