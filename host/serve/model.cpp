// The cost model's named constants, the step-time roofline, and the request sources.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "host/serve/serve.h"

namespace mxtb::host::serve {

ModelSpec model_by_name(const std::string& name) {
  if (name == "llama3-8b") {
    // Meta-Llama-3-8B config.json: 32 layers, hidden 4096, 32 query heads, 8 KV heads of 128,
    // vocabulary 128256; 8.03 B parameters. A token multiplies through every weight but the
    // input embedding (128256 × 4096 = 0.525 B), which is a table lookup.
    ModelSpec m;
    m.name = name;
    m.layers = 32;
    m.hidden = 4096;
    m.kv_heads = 8;
    m.head_dim = 128;
    m.bytes_per_elem = 2;
    m.params = 8.03e9;
    m.compute_params = 8.03e9 - 128256.0 * 4096.0;
    return m;
  }
  throw InputError(fmt::format("unknown model '{}': known models: llama3-8b", name));
}

DeviceSpec device_by_name(const std::string& name) {
  // NVIDIA H100 SXM5 and H200 SXM datasheets: 989.4 TFLOP/s dense FP16/BF16 tensor (the
  // datasheets' 1,979 assumes 2:4 sparsity), HBM3 3.35 TB/s / 80 GB, HBM3e 4.8 TB/s / 141 GB.
  // Achieved fractions are assumptions, not measurements: about half of peak in large prefill
  // GEMMs and 80 % of HBM bandwidth when decode streams weights and KV.
  DeviceSpec d;
  d.name = name;
  d.peak_flops = 989.4e12;
  d.compute_eff = 0.5;
  d.memory_eff = 0.8;
  if (name == "h100") {
    d.hbm_bytes_s = 3.35e12;
    d.hbm_bytes = 80e9;
  } else if (name == "h200") {
    d.hbm_bytes_s = 4.8e12;
    d.hbm_bytes = 141e9;
  } else {
    throw InputError(fmt::format("unknown device '{}': known devices: h100, h200", name));
  }
  return d;
}

double CostModel::attention_flops(uint64_t new_tokens, uint64_t past_plus_half) const {
  // QK^T and AV, each 2 FLOPs per multiply-add, over all query heads (hidden = heads × head dim).
  return 4.0 * m_.layers * m_.hidden * static_cast<double>(new_tokens) * static_cast<double>(past_plus_half);
}

double CostModel::prefill_s(const std::vector<PrefillChunk>& chunks) const {
  double flops = 0, bytes = m_.weight_bytes();
  for (const auto& c : chunks) {
    flops += 2.0 * m_.compute_params * static_cast<double>(c.n);
    // Causal: the i-th new token attends to past + i tokens, n/2 on average.
    flops += attention_flops(c.n, c.past + c.n / 2);
    bytes += static_cast<double>(c.past + c.n) * static_cast<double>(m_.kv_bytes_per_token());
  }
  return std::max(compute_s(flops), memory_s(bytes));
}

double CostModel::decode_s(uint64_t batch, uint64_t context_tokens) const {
  double flops = 2.0 * m_.compute_params * static_cast<double>(batch) + attention_flops(1, context_tokens);
  double bytes = m_.weight_bytes() + static_cast<double>(context_tokens) * static_cast<double>(m_.kv_bytes_per_token());
  return std::max(compute_s(flops), memory_s(bytes));
}

// ---------------------------------------------------------------------------------------------

namespace {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : line) {
    if (ch == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (ch != '\r') {
      cur += ch;
    }
  }
  out.push_back(cur);
  return out;
}

// Days from 1970-01-01 (Howard Hinnant's days_from_civil), so timestamps need no time zone.
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

// YYYY-MM-DD HH:MM:SS[.fraction][zone]: the 2023 release writes no zone, the 2024 release (pandas,
// UTC) "+00:00". A 'T' may stand for the space (ISO 8601); a zone is Z, +HH, +HHMM or +HH:MM (or
// -), and its offset is taken off, so that rows in different zones keep their order.
bool parse_timestamp(const std::string& s, double* out) {
  size_t i = 0;
  auto digits = [&](size_t n, int* v) {
    if (i + n > s.size()) return false;
    int x = 0;
    for (size_t k = 0; k < n; ++k) {
      const char c = s[i + k];
      if (c < '0' || c > '9') return false;
      x = x * 10 + (c - '0');
    }
    i += n;
    *v = x;
    return true;
  };
  auto literal = [&](char c) {
    if (i >= s.size() || s[i] != c) return false;
    ++i;
    return true;
  };
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, whole = 0;
  if (!digits(4, &y) || !literal('-') || !digits(2, &mo) || !literal('-') || !digits(2, &d)) return false;
  if (!literal(' ') && !literal('T')) return false;
  if (!digits(2, &h) || !literal(':') || !digits(2, &mi) || !literal(':') || !digits(2, &whole)) return false;
  double sec = whole;
  if (literal('.')) {
    double unit = 0.1;
    const size_t first = i;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, unit /= 10) sec += (s[i] - '0') * unit;
    if (i == first) return false;
  }
  int zone_s = 0;
  if (!literal('Z') && i < s.size() && (s[i] == '+' || s[i] == '-')) {
    const int sign = s[i++] == '-' ? -1 : 1;
    int zh = 0, zm = 0;
    if (!digits(2, &zh) || zh > 23) return false;
    if (i < s.size()) {
      literal(':');
      if (!digits(2, &zm) || zm > 59) return false;
    }
    zone_s = sign * (zh * 3600 + zm * 60);
  }
  if (i != s.size()) return false;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec >= 61) return false;
  *out = static_cast<double>(days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d))) * 86400.0 +
         h * 3600.0 + mi * 60.0 + sec - zone_s;
  return true;
}

bool parse_count(const std::string& s, uint64_t* out) {
  if (s.empty() || s.size() > 12) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

// splitmix64: a portable generator, so a seed gives the same requests with every standard library.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  uint64_t between(uint64_t lo, uint64_t hi) { return lo + next() % (hi - lo + 1); }
};

}  // namespace

std::vector<Request> load_azure_trace(const std::string& path, double scale) {
  if (!(scale > 0)) throw InputError(fmt::format("trace scale {} must be positive", scale));
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("cannot open trace file '{}'", path));
  std::string line;
  if (!std::getline(in, line)) throw InputError(fmt::format("trace file '{}' is empty", path));
  auto header = split_csv(line);
  if (!header.empty() && header[0].rfind("\xEF\xBB\xBF", 0) == 0) header[0] = header[0].substr(3);
  if (header != std::vector<std::string>{"TIMESTAMP", "ContextTokens", "GeneratedTokens"})
    throw InputError(fmt::format("{}:1: expected header TIMESTAMP,ContextTokens,GeneratedTokens, got '{}'", path, line));
  std::vector<Request> out;
  std::vector<double> stamps;
  size_t lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line == "\r") continue;
    auto f = split_csv(line);
    if (f.size() != 3) throw InputError(fmt::format("{}:{}: expected 3 fields, got {}", path, lineno, f.size()));
    double t = 0;
    if (!parse_timestamp(f[0], &t))
      throw InputError(fmt::format("{}:{}: bad TIMESTAMP '{}' (want YYYY-MM-DD HH:MM:SS[.fff][+HH:MM])", path, lineno, f[0]));
    Request r;
    if (!parse_count(f[1], &r.prompt_tokens) || r.prompt_tokens == 0)
      throw InputError(fmt::format("{}:{}: ContextTokens '{}' is not a positive integer", path, lineno, f[1]));
    if (!parse_count(f[2], &r.output_tokens) || r.output_tokens == 0)
      throw InputError(fmt::format("{}:{}: GeneratedTokens '{}' is not a positive integer", path, lineno, f[2]));
    stamps.push_back(t);
    out.push_back(r);
  }
  if (out.empty()) throw InputError(fmt::format("trace file '{}' has no requests", path));
  double t0 = *std::min_element(stamps.begin(), stamps.end());
  for (size_t i = 0; i < out.size(); ++i) out[i].arrival_s = (stamps[i] - t0) / scale;
  std::stable_sort(out.begin(), out.end(), [](const Request& a, const Request& b) { return a.arrival_s < b.arrival_s; });
  for (size_t i = 0; i < out.size(); ++i) out[i].id = i;
  return out;
}

std::vector<Request> synthetic_burst(uint64_t seed, double scale) {
  if (!(scale > 0)) throw InputError(fmt::format("burst scale {} must be positive", scale));
  // 60 s of Poisson background at 1 request/s; 200 requests arrive uniformly within 1 s at
  // t = 20 s. Prompts 256..4096 tokens, outputs 16..256 (uniform): code-completion-like sizes.
  Rng rng{seed * 0x2545F4914F6CDD1Dull + 1};
  std::vector<Request> out;
  for (double t = 0;;) {
    t += -std::log(1.0 - rng.uniform());
    if (t >= 60) break;
    out.push_back({0, t, rng.between(256, 4096), rng.between(16, 256)});
  }
  for (int i = 0; i < 200; ++i)
    out.push_back({0, 20.0 + rng.uniform(), rng.between(256, 4096), rng.between(16, 256), true});
  for (auto& r : out) r.arrival_s /= scale;
  std::stable_sort(out.begin(), out.end(), [](const Request& a, const Request& b) { return a.arrival_s < b.arrival_s; });
  for (size_t i = 0; i < out.size(); ++i) out[i].id = i;
  return out;
}

std::vector<Request> long_prompt() {
  // A 64 Ki-token document and a 1,024-token answer (Llama 3.1 shapes take 128 Ki of context).
  return {{0, 0.0, 65536, 1024}};
}

// ---------------------------------------------------------------------------------------------
// Chat requests and bursts.

namespace {
double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// A standard normal deviate (Box-Muller; two uniforms per deviate keep draws reproducible).
double normal(Rng& rng) {
  double u = rng.uniform(), v = rng.uniform();
  return std::sqrt(-2.0 * std::log(1.0 - u)) * std::cos(6.283185307179586 * v);
}

// Solves mu so that the truncated log-normal has the given mean (the mean grows with mu).
double solve_mu(double mean, double sigma, double lo, double hi) {
  double a = std::log(lo) - 5 * sigma, b = std::log(hi) + 5 * sigma;
  for (int i = 0; i < 200; ++i) {
    double m = 0.5 * (a + b);
    (ChatLengths::truncated_mean(m, sigma, lo, hi) < mean ? a : b) = m;
  }
  return 0.5 * (a + b);
}

uint64_t lognormal_tokens(Rng& rng, double mu, double sigma, uint64_t lo, uint64_t hi) {
  for (;;) {
    double x = std::exp(mu + sigma * normal(rng));
    if (x >= static_cast<double>(lo) - 0.5 && x < static_cast<double>(hi) + 0.5)
      return std::min(hi, std::max(lo, static_cast<uint64_t>(std::llround(x))));
  }
}
}  // namespace

double ChatLengths::truncated_mean(double mu, double sigma, double lo, double hi) {
  const double la = std::log(lo), lb = std::log(hi);
  const double mass = normal_cdf((lb - mu) / sigma) - normal_cdf((la - mu) / sigma);
  if (mass <= 0) return mu < la ? lo : hi;
  return std::exp(mu + sigma * sigma / 2) *
         (normal_cdf((lb - mu - sigma * sigma) / sigma) - normal_cdf((la - mu - sigma * sigma) / sigma)) / mass;
}

ChatLengths::ChatLengths()
    : mu_prompt(solve_mu(kMeanPrompt, kSigma, kMin, kMaxPrompt)),
      mu_output(solve_mu(kMeanOutput, kSigma, kMin, kMaxOutput)) {}

LengthSampler chat_lengths(uint64_t seed) {
  auto rng = std::make_shared<Rng>(Rng{seed * 0x9E3779B97F4A7C15ull + 7});
  const ChatLengths c;
  return [rng, c]() {
    uint64_t p = lognormal_tokens(*rng, c.mu_prompt, ChatLengths::kSigma, ChatLengths::kMin, ChatLengths::kMaxPrompt);
    uint64_t o = lognormal_tokens(*rng, c.mu_output, ChatLengths::kSigma, ChatLengths::kMin, ChatLengths::kMaxOutput);
    return std::make_pair(p, o);
  };
}

LengthSampler lengths_from(const std::vector<Request>& rows, uint64_t seed) {
  if (rows.empty()) throw InputError("bursts need requests to draw lengths from");
  auto rng = std::make_shared<Rng>(Rng{seed * 0xD1B54A32D192ED03ull + 11});
  auto pool = std::make_shared<std::vector<std::pair<uint64_t, uint64_t>>>();
  for (const auto& r : rows) pool->push_back({r.prompt_tokens, r.output_tokens});
  return [rng, pool]() { return (*pool)[rng->next() % pool->size()]; };
}

std::vector<Request> chat_background(uint64_t seed, double rate_per_s, double duration_s) {
  if (!(rate_per_s > 0) || !(duration_s > 0))
    throw InputError(fmt::format("chat load: rate {} /s and duration {} s must be positive", rate_per_s, duration_s));
  Rng rng{seed * 0x2545F4914F6CDD1Dull + 3};
  auto lengths = chat_lengths(seed);
  std::vector<Request> out;
  for (double t = -std::log(1.0 - rng.uniform()) / rate_per_s; t < duration_s;
       t += -std::log(1.0 - rng.uniform()) / rate_per_s) {
    auto [p, o] = lengths();
    out.push_back({out.size(), t, p, o});
  }
  return out;
}

std::vector<Request> add_bursts(std::vector<Request> base, const BurstSpec& spec, const LengthSampler& lengths,
                                uint64_t seed) {
  if (spec.requests == 0 || spec.count <= 0) return base;
  if (!(spec.window_s > 0)) throw InputError(fmt::format("burst window {} s must be positive", spec.window_s));
  double span = 0;
  for (const auto& r : base) span = std::max(span, r.arrival_s);
  if (!(span > 0)) span = spec.window_s * (spec.count + 1);
  Rng rng{seed * 0x94D049BB133111EBull + 5};
  for (int b = 0; b < spec.count; ++b) {
    const double at = span * (b + 1) / (spec.count + 1);
    for (size_t i = 0; i < spec.requests; ++i) {
      auto [p, o] = lengths();
      base.push_back({0, at + spec.window_s * rng.uniform(), p, o, true});
    }
  }
  std::stable_sort(base.begin(), base.end(), [](const Request& a, const Request& b) { return a.arrival_s < b.arrival_s; });
  for (size_t i = 0; i < base.size(); ++i) base[i].id = i;
  return base;
}

}  // namespace mxtb::host::serve
