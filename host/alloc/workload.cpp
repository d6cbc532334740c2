// Workload files: the TPU v4 slice-shape mix, the Philly job trace, inter-arrival times.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "alloc.h"


namespace mxtb::host::alloc {

namespace {
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream is(line);
  while (std::getline(is, cur, ',')) {
    while (!cur.empty() && (cur.back() == '\r' || cur.back() == ' ')) cur.pop_back();
    while (!cur.empty() && cur.front() == ' ') cur.erase(cur.begin());
    out.push_back(cur);
  }
  if (!line.empty() && line.back() == ',') out.push_back("");
  return out;
}

double to_double(const std::string& s, const std::string& where, const char* what) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v))
    throw std::runtime_error(fmt::format("{}: {} '{}' is not a number", where, what, s));
  return v;
}

std::ifstream open_or_throw(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("cannot open workload file '{}'", path));
  return in;
}

template <typename F>
void for_rows(const std::string& path, F&& f) {
  auto in = open_or_throw(path);
  std::string line;
  int no = 0;
  while (std::getline(in, line)) {
    ++no;
    if (line.empty() || line[0] == '#' || line == "\r") continue;
    f(split_csv(line), fmt::format("{}:{}", path, no));
  }
}

size_t pick(const std::vector<double>& w, std::mt19937_64& rng) {
  double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  double acc = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    acc += w[i];
    if (u < acc) return i;
  }
  return w.size() - 1;
}
}  // namespace

Shape ShapeMix::sample(std::mt19937_64& rng) const { return shapes[pick(weight, rng)]; }

ShapeMix load_shape_mix(const std::string& path) {
  ShapeMix mix;
  for_rows(path, [&](const std::vector<std::string>& f, const std::string& where) {
    if (f.size() != 6)
      throw std::runtime_error(fmt::format("{}: expected 6 fields (id,topology,shape,size,duration,probability), got {}", where, f.size()));
    Shape s;
    try {
      s = parse_shape(f[2]);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(fmt::format("{}: {}", where, e.what()));
    }
    double size = to_double(f[3], where, "size");
    if (size != s.volume())
      throw std::runtime_error(fmt::format("{}: size {} does not match shape {}", where, f[3], f[2]));
    double prob = to_double(f[5], where, "probability");
    if (prob < 0) throw std::runtime_error(fmt::format("{}: negative probability {}", where, f[5]));
    mix.shapes.push_back(s);
    mix.weight.push_back(prob);
  });
  double sum = std::accumulate(mix.weight.begin(), mix.weight.end(), 0.0);
  if (mix.shapes.empty() || sum <= 0) throw std::runtime_error(fmt::format("{}: no slice shapes with positive probability", path));
  for (double& w : mix.weight) w /= sum;
  return mix;
}

std::vector<Job> load_job_trace(const std::string& path, size_t max_jobs) {
  std::vector<Job> jobs;
  auto in = open_or_throw(path);
  std::string line;
  int no = 0;
  while (jobs.size() < max_jobs && std::getline(in, line)) {
    ++no;
    if (line.empty() || line[0] == '#' || line == "\r") continue;
    auto f = split_csv(line);
    std::string where = fmt::format("{}:{}", path, no);
    if (f.size() != 6)
      throw std::runtime_error(fmt::format("{}: expected 6 fields (job id,arrival,topology,shape,size,duration), got {}", where, f.size()));
    Job j;
    j.arrival = to_double(f[1], where, "arrival time");
    j.duration = to_double(f[5], where, "duration");
    double size = to_double(f[4], where, "size");
    if (j.arrival < 0 || j.duration < 0) throw std::runtime_error(fmt::format("{}: negative time", where));
    if (size < 1 || size != std::floor(size) || size > 1e6)
      throw std::runtime_error(fmt::format("{}: size '{}' is not a positive integer", where, f[4]));
    j.size = static_cast<int>(size);
    j.shape = shape_for_chips(j.size);
    jobs.push_back(j);
  }
  if (jobs.empty()) throw std::runtime_error(fmt::format("{}: no jobs", path));
  return jobs;
}

double IatMix::sample(std::mt19937_64& rng) const { return iat[pick(weight, rng)]; }
double IatMix::mean() const {
  double m = 0;
  for (size_t i = 0; i < iat.size(); ++i) m += iat[i] * weight[i];
  return m;
}

IatMix load_iat(const std::string& path) {
  IatMix mix;
  for_rows(path, [&](const std::vector<std::string>& f, const std::string& where) {
    if (f.size() != 2) throw std::runtime_error(fmt::format("{}: expected 2 fields (IAT,probability)", where));
    double v = to_double(f[0], where, "inter-arrival time"), p = to_double(f[1], where, "probability");
    if (v < 0 || p < 0) throw std::runtime_error(fmt::format("{}: negative value", where));
    mix.iat.push_back(v);
    mix.weight.push_back(p);
  });
  double sum = std::accumulate(mix.weight.begin(), mix.weight.end(), 0.0);
  if (sum <= 0) throw std::runtime_error(fmt::format("{}: no inter-arrival times", path));
  for (double& w : mix.weight) w /= sum;
  return mix;
}

std::string workload_path(const std::string& dir, const std::string& file) {
  if (dir.empty())
    throw std::invalid_argument(fmt::format("the named workloads' folder is not set (CommonOptions::workload_dir), so {} cannot be found", file));
  return dir + "/" + file;
}

}  // namespace mxtb::host::alloc
