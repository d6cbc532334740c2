// The mxtb program's commands. Each takes the arguments after its name and returns the exit code;
// bad arguments throw UsageError (args.h), which main.cpp reports with the command's usage.
#pragma once

#include "apps/mxtb/args.h"

namespace mxtb::app {

int cmd_link_pair(const ArgList& args);
int cmd_bench_link(const ArgList& args);
int cmd_bench_link_campaign(const ArgList& args);
int cmd_sim(const ArgList& args);
int cmd_reg(const ArgList& args);
int cmd_bench_bridge(const ArgList& args);
int cmd_demo(const ArgList& args);
int cmd_bench_reconfig(const ArgList& args);
int cmd_bench_server(const ArgList& args);
int cmd_regress(const ArgList& args);
int cmd_cover(const ArgList& args);
int cmd_alloc(const ArgList& args);
int cmd_bench_alloc(const ArgList& args);
int cmd_serve(const ArgList& args);
int cmd_bench_paging(const ArgList& args);
int cmd_collective(const ArgList& args);
int cmd_bench_steering(const ArgList& args);
int cmd_rank(const ArgList& args);
int cmd_rack(const ArgList& args);
int cmd_rack_failover(const ArgList& args);
int cmd_bench_rack(const ArgList& args);

}  // namespace mxtb::app
