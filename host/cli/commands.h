// mxtb's subcommands. Each takes the arguments after its name and returns the exit code.
#pragma once

#include <string>
#include <vector>

namespace mxtb::host {

using ArgList = std::vector<std::string>;

int cmd_link_pair(const ArgList& args);
int cmd_bench_link(const ArgList& args);
int cmd_server(const ArgList& args);
int cmd_bench_reconfig(const ArgList& args);
int cmd_bench_server(const ArgList& args);
int cmd_sim(const ArgList& args);
int cmd_reg(const ArgList& args);
int cmd_bench_bridge(const ArgList& args);
int cmd_bench_paging(const ArgList& args);
int cmd_regress(const ArgList& args);
int cmd_demo(const ArgList& args);

}  // namespace mxtb::host
