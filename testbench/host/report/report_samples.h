// What the report's and the regression's tests share: a sample timeline and a substring count.
#pragma once

#include "host/report/report.h"

#include <cstddef>
#include <string>

namespace report_samples {

// A failover as the in-process run reports it, then two modeled phases: 7 phases from 1 us to 500 ms.
inline mxtb::host::report::Timeline sample() {
  using namespace mxtb::host::report;
  Timeline t;
  t.scenario = "unit";
  t.seed = 3;
  t.time_mode = "lockstep";
  t.failure_ns = 100'000;
  append_phase(t, "detect", 1'200, "rtl", "");
  append_phase(t, "firmware", 3'400, "firmware", "");
  append_phase(t, "program", 800, "rtl", "");
  append_phase(t, "settle", 50'000, "rtl", "");
  append_phase(t, "train", 6'000, "rtl", "");
  t.hardware_ns = t.total_ns;
  append_phase(t, "communicator_reinit", 500e6, "modeled", "NCCL");
  append_phase(t, "state_restore", 171.8e6, "modeled", "4 GiB at 25 GB/s");
  return t;
}

inline size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace report_samples
