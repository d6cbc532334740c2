#include "paging_bench.h"

#include "paging.h"
#ifdef MXTB_HAVE_CUDA
#include "device_probe.h"
#include "paging_cuda.h"
#endif

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>

namespace mxtb::paging {

using nlohmann::json;

void validate(const PagingBenchOptions& o) {
  if (o.sizes.empty()) throw std::invalid_argument("--sizes: no block sizes given");
  if (o.counts.empty()) throw std::invalid_argument("--counts: no block counts given");
  for (size_t s : o.sizes)
    if (s < 16 || s % 16 != 0)
      throw std::invalid_argument(fmt::format("--sizes: {} is not a positive multiple of 16 bytes", s));
  for (size_t c : o.counts)
    if (c == 0) throw std::invalid_argument("--counts: a block count must be at least 1");
  if (o.reps < 1) throw std::invalid_argument("--reps must be at least 1");
  if (o.cpu_max_total < 16) throw std::invalid_argument("--max-mib must be at least 1");
}

namespace {

using Clock = std::chrono::steady_clock;
double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

std::string human(size_t bytes) {
  if (bytes >= (size_t{1} << 20) && bytes % (size_t{1} << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= 1024 && bytes % 1024 == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

// Every slot once, in a scattered order: what a block table of a long-lived pool looks like.
std::vector<size_t> scattered(size_t count) {
  size_t stride = count > 2 ? count / 2 + 1 : 1;
  while (std::gcd(stride, count) != 1) ++stride;
  std::vector<size_t> out(count);
  for (size_t i = 0; i < count; ++i) out[i] = i * stride % count;
  return out;
}

// Best-of-reps seconds per call of f, repeating it so each timed rep moves at least ~32 MiB.
template <class F>
double best_time(size_t total, int reps, F f) {
  size_t iters = std::max<size_t>(1, (size_t{32} << 20) / std::max<size_t>(total, 1));
  f();
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    for (size_t i = 0; i < iters; ++i) f();
    best = std::min(best, secs(t0, Clock::now()) / static_cast<double>(iters));
  }
  return best;
}

json cpu_cells(const PagingBenchOptions& o, double* big_ceiling) {
  auto src = make_host_memory(o.cpu_max_total), dst = make_host_memory(o.cpu_max_total);
  // Touch every page with non-zero bytes so no measurement pays first-touch faults.
  std::memset(src->data(), 0x5A, src->size());
  std::memset(dst->data(), 0xA5, dst->size());
  *big_ceiling = static_cast<double>(o.cpu_max_total) /
                 best_time(o.cpu_max_total, o.reps, [&] { std::memcpy(dst->data(), src->data(), o.cpu_max_total); }) * 1e-9;
  auto backend = make_cpu_backend();
  json cells = json::array();
  for (const char* tier : {"host-out", "host-in"}) {
    bool scatter = std::string(tier) == "host-in";
    for (size_t size : o.sizes) {
      for (size_t count : o.counts) {
        size_t total = size * count;
        if (total > o.cpu_max_total) continue;
        CopyPlan plan{src->data(), dst->data(), {}};
        std::vector<size_t> order = scattered(count);
        for (size_t i = 0; i < count; ++i) {
          uint64_t sc = order[i] * size, pk = i * size;
          plan.descs.push_back(scatter ? CopyDesc{pk, sc, size, 0} : CopyDesc{sc, pk, size, 0});
        }
        double ceil_t = best_time(total, o.reps, [&] { std::memcpy(dst->data(), src->data(), total); });
        double t = best_time(total, o.reps, [&] {
          backend->copy(plan);
          backend->wait();
        });
        double gbps = static_cast<double>(total) / t * 1e-9, ceil = static_cast<double>(total) / ceil_t * 1e-9;
        cells.push_back({{"backend", backend->name()}, {"tier", tier}, {"block_bytes", size}, {"blocks", count},
                         {"total_bytes", total}, {"gbps", gbps}, {"ceiling_gbps", ceil}, {"ratio", gbps / ceil},
                         {"submit_ns_per_block", t / static_cast<double>(count) * 1e9}});
      }
    }
  }
  return cells;
}

// The engine end to end on the CPU path: a whole sequence of a 7B-like model (32 layers, 8 KV
// heads of 128, 16 tokens a block, f16) out to the host tier and back, then one dirty block out again.
json cpu_engine(const PagingBenchOptions& o) {
  ModelShape shape{32, 8, 128, 16, DType::F16};
  size_t blocks = std::max<size_t>(1, o.cpu_max_total / shape.block_bytes());
  PagingEngine eng(shape, {blocks, blocks, blocks}, make_cpu_backend());
  eng.allocate(1, blocks);
  BlockPool& dev = eng.pool(Tier::Device);
  std::memset(dev.data(), 0x3C, dev.memory().size());
  std::vector<int> host_blocks = eng.pool(Tier::Host).allocate(blocks);
  auto t0 = Clock::now();
  CopyPlan plan = build_plan(dev, eng.block_table(1), eng.pool(Tier::Host), host_blocks);
  double plan_ns = secs(t0, Clock::now()) / static_cast<double>(blocks) * 1e9;
  eng.pool(Tier::Host).free(host_blocks);
  eng.page_out(1, Tier::Host);  // warm-up round trip: the timed one below copies every block again
  eng.page_in(1);
  for (size_t i = 0; i < blocks; ++i) eng.mark_dirty(1, i);
  t0 = Clock::now();
  PageResult out = eng.page_out(1, Tier::Host);
  double t_out = secs(t0, Clock::now());
  t0 = Clock::now();
  PageResult in = eng.page_in(1);
  double t_in = secs(t0, Clock::now());
  eng.mark_dirty(1, 0);
  PageResult again = eng.page_out(1, Tier::Host);
  return {{"shape", fmt::format("{} layers, {} KV heads x {}, {} tokens/block, {}", shape.layers, shape.kv_heads,
                                shape.head_size, shape.tokens_per_block, dtype_name(shape.dtype))},
          {"block_bytes", shape.block_bytes()}, {"chunk_bytes", shape.chunk_bytes()}, {"blocks", blocks},
          {"page_out_bytes", out.bytes_moved}, {"page_out_descriptors", out.descriptors},
          {"page_out_gbps", static_cast<double>(out.bytes_moved) / t_out * 1e-9},
          {"page_in_bytes", in.bytes_moved}, {"page_in_gbps", static_cast<double>(in.bytes_moved) / t_in * 1e-9},
          {"plan_ns_per_block", plan_ns}, {"dirty_page_out_bytes", again.bytes_moved},
          {"dirty_page_out_blocks", again.blocks_copied}, {"dirty_page_out_skipped", again.blocks_skipped}};
}

void print_cells(const json& cells) {
  fmt::print("  {:<9} {:<10} {:>8} {:>7} {:>9} {:>9} {:>9} {:>6} {:>13}\n", "tier", "backend", "block", "blocks",
             "total", "GB/s", "ceiling", "ratio", "submit ns/blk");
  for (const auto& c : cells)
    fmt::print("  {:<9} {:<10} {:>8} {:>7} {:>9} {:>9.2f} {:>9.2f} {:>6.2f} {:>13.1f}\n", c["tier"].get<std::string>(),
               c["backend"].get<std::string>(), human(c["block_bytes"]), c["blocks"].get<size_t>(),
               human(c["total_bytes"]), c["gbps"].get<double>(), c["ceiling_gbps"].get<double>(),
               c["ratio"].get<double>(), c["submit_ns_per_block"].get<double>());
}

json goal(const std::string& name, double value, double target, bool measured = true) {
  bool pass = measured && value >= target;
  if (measured)
    fmt::print("  {:<4} {} (measured {:.2f}, goal {:.2f})\n", pass ? "PASS" : "FAIL", name, value, target);
  else
    fmt::print("  n/a  {} (goal {:.2f}; not measured)\n", name, target);
  return {{"goal", name}, {"value", value}, {"target", target}, {"pass", pass}, {"measured", measured}};
}

// One curve per (platform, backend, tier): at each block size the cell with the most blocks.
void plot(const json& j, const std::string& prefix) {
  std::map<std::string, std::map<size_t, std::pair<size_t, double>>> series;
  std::map<std::string, std::map<size_t, std::pair<size_t, double>>> ceilings;
  for (const char* plat : {"cpu", "gpu"}) {
    if (!j[plat].contains("cells")) continue;
    for (const auto& c : j[plat]["cells"]) {
      std::string key = fmt::format("{} {} {}", plat, c["backend"].get<std::string>(), c["tier"].get<std::string>());
      std::string ckey = fmt::format("{} ceiling {}", plat, c["tier"].get<std::string>());
      size_t size = c["block_bytes"], n = c["blocks"];
      auto& s = series[key][size];
      if (n >= s.first) s = {n, c["gbps"].get<double>()};
      auto& cc = ceilings[ckey][size];
      if (n >= cc.first) cc = {n, c["ceiling_gbps"].get<double>()};
    }
  }
  for (auto& [k, v] : ceilings) series[k] = v;
  std::ofstream dat(prefix + ".dat");
  std::vector<std::string> titles;
  for (const auto& [k, pts] : series) {
    dat << "# " << k << "\n";
    for (const auto& [size, p] : pts) dat << size << " " << p.second << "\n";
    dat << "\n\n";
    titles.push_back(k);
  }
  dat.close();
  std::ofstream gp(prefix + ".gp");
  gp << "set terminal svg size 800,480 dynamic\nset output '" << prefix << ".svg'\n"
     << "set logscale x 2\nset logscale y 10\nset xlabel 'block size (bytes)'\nset ylabel 'GB/s (most blocks at each size)'\n"
     << "set key outside right\nset grid\nplot ";
  for (size_t i = 0; i < titles.size(); ++i)
    gp << (i ? ", " : "") << "'" << prefix << ".dat' index " << i << " with linespoints "
       << (titles[i].find("ceiling") != std::string::npos ? "dashtype 2 " : "") << "title '" << titles[i] << "'";
  gp << "\n";
  gp.close();
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    fmt::print("gnuplot not found: {}.gp written, no SVG\n", prefix);
    return;
  }
  int rc = std::system(fmt::format("gnuplot '{}.gp'", prefix).c_str());
  if (rc == 0)
    fmt::print("plot: {}.svg\n", prefix);
  else
    fmt::print("gnuplot failed on {}.gp (exit {})\n", prefix, rc);
}

}  // namespace

int run_paging_bench(const PagingBenchOptions& o) {
  validate(o);
  json j;
  json goals = json::array();
  fmt::print("paging bench: block sizes {}, counts {}, CPU cells up to {} moved, best of {}\n",
             fmt::join(o.sizes, ","), fmt::join(o.counts, ","), human(o.cpu_max_total), o.reps);
  double big = 0;
  json cells = cpu_cells(o, &big);
  fmt::print("CPU (backend cpu, host memory standing in for every tier); ceiling: one memcpy of the same total\n");
  fmt::print("  one large memcpy of {}: {:.2f} GB/s\n", human(o.cpu_max_total), big);
  print_cells(cells);
  json eng = cpu_engine(o);
  fmt::print("CPU engine, {}: sequence of {} blocks ({} each, {} descriptors)\n", eng["shape"].get<std::string>(),
             eng["blocks"].get<size_t>(), human(eng["block_bytes"]), eng["page_out_descriptors"].get<size_t>());
  fmt::print("  page-out {:.2f} GB/s, page-in {:.2f} GB/s, plan {:.0f} ns/block; after one dirty block the "
             "page-out moved {} ({} copied, {} skipped)\n",
             eng["page_out_gbps"].get<double>(), eng["page_in_gbps"].get<double>(), eng["plan_ns_per_block"].get<double>(),
             human(eng["dirty_page_out_bytes"]), eng["dirty_page_out_blocks"].get<size_t>(),
             eng["dirty_page_out_skipped"].get<size_t>());
  j["cpu"] = {{"memcpy_ceiling_gbps", big}, {"memcpy_ceiling_bytes", o.cpu_max_total}, {"cells", cells}, {"engine", eng}};

  double cpu_min = std::numeric_limits<double>::infinity();
  for (const auto& c : cells) cpu_min = std::min(cpu_min, c["ratio"].get<double>());
  fmt::print("goals:\n");
  goals.push_back(goal("CPU backend >= 70% of the memcpy ceiling (worst cell)", cells.empty() ? 0 : cpu_min, 0.70));

  std::string why;
  bool gpu = false;
#ifdef MXTB_HAVE_CUDA
  gpu = device_count(&why) > 0;
#else
  why = "built without CUDA";
#endif
  if (!gpu) {
    fmt::print("GPU figures not measured (no device: {})\n", why);
    j["gpu"] = {{"measured", false}, {"why", why}};
    for (auto [g, target] : {std::pair{"GPU gather >= 80% of the device-copy ceiling, blocks >= 16 KiB", 0.80},
                             std::pair{"GPU gather >= 4x per-block at 16 KiB (256+ blocks)", 4.0},
                             std::pair{"GPU host tier >= 90% of the pinned-copy ceiling, blocks >= 16 KiB", 0.90}})
      goals.push_back(goal(g, 0, target, false));
  }
#ifdef MXTB_HAVE_CUDA
  if (gpu) {
    GpuBenchResult r = run_gpu_bench(o.sizes, o.counts, o.gpu_max_total, o.reps);
    json gc = json::array();
    for (const auto& c : r.cells)
      gc.push_back({{"backend", c.backend}, {"tier", c.tier}, {"block_bytes", c.block_bytes}, {"blocks", c.blocks},
                    {"total_bytes", c.block_bytes * c.blocks}, {"gbps", c.gbps}, {"ceiling_gbps", c.ceiling_gbps},
                    {"ratio", c.gbps / c.ceiling_gbps}, {"submit_ns_per_block", c.submit_ns_per_block}});
    fmt::print("GPU {} ({}); ceilings of {}: device-to-device {:.1f} GB/s, to pinned host {:.1f} GB/s, from pinned "
               "host {:.1f} GB/s\n",
               r.device, r.remote_where, human(o.gpu_max_total), r.d2d_ceiling_gbps, r.pinned_out_ceiling_gbps,
               r.pinned_in_ceiling_gbps);
    print_cells(gc);
    j["gpu"] = {{"measured", true}, {"device", r.device}, {"remote", r.remote_where},
                {"d2d_ceiling_gbps", r.d2d_ceiling_gbps}, {"pinned_out_ceiling_gbps", r.pinned_out_ceiling_gbps},
                {"pinned_in_ceiling_gbps", r.pinned_in_ceiling_gbps}, {"cells", gc}};
    double g1 = std::numeric_limits<double>::infinity(), g2 = g1, g3 = g1;
    std::map<std::string, double> best;  // tier/size/count → best GB/s and its ceiling
    for (const auto& c : gc) {
      std::string b = c["backend"], t = c["tier"];
      size_t s = c["block_bytes"], n = c["blocks"];
      if (b == "gather" && t == "remote" && s >= 16384) g1 = std::min(g1, c["ratio"].get<double>());
      if (b == "gather" && t == "remote" && s == 16384 && n >= 256)
        for (const auto& p : gc)
          if (p["backend"] == "per-block" && p["tier"] == t && p["block_bytes"] == s && p["blocks"] == n)
            g2 = std::min(g2, c["gbps"].get<double>() / p["gbps"].get<double>());
      if (t != "remote" && s >= 16384) {
        std::string key = fmt::format("{}/{}/{}", t, s, n);
        best[key] = std::max(best[key], c["ratio"].get<double>());
      }
    }
    for (const auto& [k, v] : best) g3 = std::min(g3, v);
    auto fin = [](double v) { return std::isfinite(v) ? v : 0.0; };
    goals.push_back(goal("GPU gather >= 80% of the device-copy ceiling, blocks >= 16 KiB", fin(g1), 0.80, std::isfinite(g1)));
    goals.push_back(goal("GPU gather >= 4x per-block at 16 KiB (256+ blocks)", fin(g2), 4.0, std::isfinite(g2)));
    goals.push_back(goal("GPU host tier >= 90% of the pinned-copy ceiling, blocks >= 16 KiB", fin(g3), 0.90, std::isfinite(g3)));
  }
#endif
  j["goals"] = goals;
  if (!o.json.empty()) {
    std::ofstream f(o.json);
    if (!f) throw std::runtime_error(o.json + ": cannot write");
    f << j.dump(2) << "\n";
    f.close();
    fmt::print("wrote {}\n", o.json);
    std::string prefix = o.json.size() > 5 && o.json.substr(o.json.size() - 5) == ".json" ? o.json.substr(0, o.json.size() - 5) : o.json;
    plot(j, prefix);
  }
  return 0;
}

}  // namespace mxtb::paging
