// Runs tools/gendefs on a definitions text, for the tests of the generator (test_gendefs*.cpp).
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace mxtb::test {

struct GendefsRun {
  int rc;
  std::string err;  // what it printed on stderr
};

inline std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// `args` are the output options, e.g. "--sv out.sv".
inline GendefsRun run_gendefs(const std::string& json_text, const std::string& args) {
  std::string in = "gendefs_case.tmp.json";
  std::ofstream(in) << json_text;
  std::string err = "gendefs_case.tmp.err";
  std::string cmd = std::string(MXTB_GENDEFS) + " " + in + " " + args + " 2>" + err;
  int rc = std::system(cmd.c_str());
  GendefsRun r{rc, slurp(err)};
  std::remove(in.c_str());
  std::remove(err.c_str());
  return r;
}

// A bad definitions text: `good` with `from` replaced by `to`, and what gendefs must say of it.
struct Rejection {
  std::string from, to, message;
};

// Each case must be rejected (a non-zero exit, `message` on stderr) and leave `out`, the output
// that `flag` (e.g. "--sv") names, as it was.
inline void check_rejections(const std::string& good, const std::vector<Rejection>& cases, const std::string& flag,
                             const std::string& out) {
  std::ofstream(out) << "previous contents\n";
  for (const Rejection& c : cases) {
    std::string text = good;
    size_t at = text.find(c.from);
    REQUIRE(at != std::string::npos);
    text.replace(at, c.from.size(), c.to);
    GendefsRun r = run_gendefs(text, flag + " " + out);
    INFO(c.message << " / got: " << r.err);
    CHECK(r.rc != 0);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(slurp(out) == "previous contents\n");
  }
  std::remove(out.c_str());
}

}  // namespace mxtb::test
