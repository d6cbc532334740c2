// The rack campaign's blast radius by case (`mxtb regress --rack`; docs/rack.md, "The blast
// radius over a campaign"): every failover of every seed, grouped by where its spare came from (the
// failing XPU's own server, another server, none), with what each failure cost the rack: the
// boards touched, the XPUs whose links left Active (and those outside the dead XPU's circuits'
// ends), the job's collectives aborted and wrong, the words lost, and the time until the tenant
// runs again (every lane of the placement Active; with a job, its first verified collective on the
// new ring).
#pragma once

#include "host/regress/regress.h"

#include <nlohmann/json.hpp>

#include <string>

namespace mxtb::app {

// The summary of the campaign's seeds' JSONs (a seed without one is skipped: its failure is the
// campaign's already). One object: "cases", each with its counts and percentiles.
nlohmann::json rack_blast_summary(const host::regress::RegressResult& r);

// The summary as a table, a row a case.
std::string format_rack_blast(const nlohmann::json& summary);

// The times to a running tenant again, a cumulative curve a case, into `svg` (gnuplot; false when
// it could not draw, the data kept beside).
bool plot_rack_blast(const nlohmann::json& summary, const std::string& svg);

}  // namespace mxtb::app
