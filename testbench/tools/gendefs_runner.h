// Runs tools/gendefs on a definitions text, for the tests of the generator (test_gendefs*.cpp).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

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

}  // namespace mxtb::test
