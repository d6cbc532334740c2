#include "firmware/routing.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

namespace mxtb::firmware {

std::string check_permutation(int ports, const std::vector<int>& perm) {
  if (perm.size() != static_cast<size_t>(ports))
    return "permutation has " + std::to_string(perm.size()) + " entries, the mesh has " + std::to_string(ports) +
           " ports";
  std::vector<int> claimed_by(static_cast<size_t>(ports), kUnused);
  for (int p = 0; p < ports; ++p) {
    const int target = perm[static_cast<size_t>(p)];
    if (target == kUnused) continue;
    if (target < 0 || target >= ports)
      return "permutation entry " + std::to_string(p) + " is " + std::to_string(target) + ": out of range (output 0.." +
             std::to_string(ports - 1) + ", or -1 for unused)";
    int& owner = claimed_by[static_cast<size_t>(target)];
    if (owner != kUnused)
      return "duplicate target: inputs " + std::to_string(owner) + " and " + std::to_string(p) + " both map to output " +
             std::to_string(target);
    owner = p;
  }
  return "";
}

std::vector<int> complete_permutation(const std::vector<int>& perm, const std::vector<int>* previous) {
  std::vector<int> full = perm;
  std::vector<bool> taken(perm.size(), false);
  for (int t : perm)
    if (t != kUnused) taken[static_cast<size_t>(t)] = true;
  if (previous && previous->size() == perm.size())
    for (size_t p = 0; p < full.size(); ++p) {
      const int was = (*previous)[p];
      if (full[p] != kUnused || was < 0 || taken[static_cast<size_t>(was)]) continue;
      full[p] = was;
      taken[static_cast<size_t>(was)] = true;
    }
  size_t next_free = 0;
  for (int& t : full) {
    if (t != kUnused) continue;
    while (taken[next_free]) ++next_free;
    t = static_cast<int>(next_free);
    taken[next_free] = true;
  }
  return full;
}

namespace {

// Routes `perm` (local ports of a sub-network of perm.size() ports) through the sub-network that
// starts at `first_stage` and occupies rows [row_offset, ...): the recursive layout of
// BenesTopology::wire (upper half takes the first-stage elements' out0, lower half out1).
void route_sub(const BenesTopology& t, int first_stage, int row_offset, const std::vector<int>& perm,
               std::vector<ElementState>& states, const std::vector<ElementState>* now) {
  const int size = static_cast<int>(perm.size());
  if (size == 2) {
    states[static_cast<size_t>(t.element_index(first_stage, row_offset))] =
        perm[0] == 0 ? ElementState::Bar : ElementState::Cross;
    return;
  }
  auto first_state = [&](const std::vector<int>& half, int i) {  // first-stage element i
    return half[static_cast<size_t>(2 * i)] == 0 ? ElementState::Bar : ElementState::Cross;
  };
  int log2_size = 0;
  while ((1 << log2_size) < size) ++log2_size;
  const int last_stage = first_stage + 2 * log2_size - 2;

  std::vector<int> inverse(static_cast<size_t>(size));
  for (int p = 0; p < size; ++p) inverse[static_cast<size_t>(perm[static_cast<size_t>(p)])] = p;

  // half_of_input[p]: 0 when input p goes through the upper half, 1 the lower.
  // The two inputs of a first-stage element, and the two outputs of a last-stage element, must
  // use different halves; following that constraint around closes a loop (hence the name).
  std::vector<int> half_of_input(static_cast<size_t>(size), -1);
  for (int start = 0; start < size; start += 2) {
    if (half_of_input[static_cast<size_t>(start)] != -1) continue;
    int input = start;
    std::vector<int> loop;
    while (half_of_input[static_cast<size_t>(input)] == -1) {
      half_of_input[static_cast<size_t>(input)] = 0;  // upper
      // Its output's partner at the last-stage element must come from the lower half...
      const int partner_output = perm[static_cast<size_t>(input)] ^ 1;
      const int lower_input = inverse[static_cast<size_t>(partner_output)];
      half_of_input[static_cast<size_t>(lower_input)] = 1;
      loop.push_back(input);
      loop.push_back(lower_input);
      // ...so that input's partner at its first-stage element goes upper: continue from there.
      input = lower_input ^ 1;
    }
    if (!now) continue;
    // The loop's other setting (every half swapped) sets each of its first- and last-stage
    // elements the other way: take it when it keeps more of them as they are.
    int kept = 0, elements = 0;
    for (int in : loop) {
      if (in % 2 == 0) {
        ++elements;
        kept += first_state(half_of_input, in / 2) == (*now)[static_cast<size_t>(t.element_index(first_stage, row_offset + in / 2))];
      }
      const int out = perm[static_cast<size_t>(in)];
      if (out % 2 == 0) {
        ++elements;
        const ElementState last = half_of_input[static_cast<size_t>(in)] == 0 ? ElementState::Bar : ElementState::Cross;
        kept += last == (*now)[static_cast<size_t>(t.element_index(last_stage, row_offset + out / 2))];
      }
    }
    if (2 * kept < elements)
      for (int in : loop) half_of_input[static_cast<size_t>(in)] ^= 1;
  }

  std::vector<int> upper(static_cast<size_t>(size / 2)), lower(static_cast<size_t>(size / 2));
  for (int p = 0; p < size; ++p) {
    const int out = perm[static_cast<size_t>(p)];
    (half_of_input[static_cast<size_t>(p)] == 0 ? upper : lower)[static_cast<size_t>(p / 2)] = out / 2;
  }
  for (int i = 0; i < size / 2; ++i) {
    // First stage: bar sends in0 to out0 (upper half).
    states[static_cast<size_t>(t.element_index(first_stage, row_offset + i))] = first_state(half_of_input, i);
    // Last stage: bar takes out0 from in0 (upper half).
    const int source_of_out0 = inverse[static_cast<size_t>(2 * i)];
    states[static_cast<size_t>(t.element_index(last_stage, row_offset + i))] =
        half_of_input[static_cast<size_t>(source_of_out0)] == 0 ? ElementState::Bar : ElementState::Cross;
  }
  route_sub(t, first_stage + 1, row_offset, upper, states, now);
  route_sub(t, first_stage + 1, row_offset + size / 4, lower, states, now);
}

// Routing around the circuits that stay: every element an unchanged circuit (one that already
// reaches its output with `now`) passes keeps its state, and each changed circuit is searched a
// path through what is left, depth first, an element's present setting tried first. Elements no
// circuit uses keep their states. Where the unchanged circuits leave no room (a Beneš mesh is only
// rearrangeably non-blocking), the fewest of them are released, one, then two, then three, and
// searched again with the changed ones (their present paths tried first). nullopt past that or
// past the search's budget: the caller routes the whole map instead.
class RouteAround {
 public:
  // At most `max_released` circuits that stay may be released.
  RouteAround(const BenesTopology& t, const std::vector<int>& perm, const std::vector<ElementState>& now, const std::vector<int>* port_xpu,
              int max_released = kMaxReleased)
      : t_(t), perm_(perm), now_(now), port_xpu_(port_xpu), max_released_(max_released), fixed_(static_cast<size_t>(t.elements()), kFree),
        reach_(static_cast<size_t>(t.elements()), 0) {
    // The output ports each element can still lead to, whatever the states: a path only turns
    // where its output stays reachable, so each circuit's search meets only its own paths.
    for (int stage = t.stages() - 1; stage >= 0; --stage)
      for (int row = 0; row < t.rows(); ++row) {
        uint64_t& r = reach_[static_cast<size_t>(t.element_index(stage, row))];
        for (int out = 0; out < 2; ++out)
          r |= stage == t.stages() - 1 ? uint64_t{1} << t.port_of_output(row, out) : reach_after(stage, row, out);
      }
  }

  static constexpr int kMaxReleased = 3;
  static constexpr long kBudget = 2'000'000;  // element visits, every attempt together

  std::optional<std::vector<ElementState>> run() {
    for (int p = 0; p < t_.ports(); ++p) {
      const int q = perm_[static_cast<size_t>(p)];
      if (q == kUnused) continue;
      (t_.trace(now_, p) == q ? unchanged_ : must_move_).push_back(p);
    }
    release_near_changes_first();
    std::vector<int> released;
    for (int k = 0; k <= max_released_ && k <= static_cast<int>(unchanged_.size()); ++k)
      if (try_releasing(released, 0, k)) {
        std::vector<ElementState> out(now_);
        for (size_t e = 0; e < out.size(); ++e)
          if (fixed_[e] != kFree) out[e] = static_cast<ElementState>(fixed_[e]);
        return out;
      }
    return std::nullopt;
  }

 private:
  static constexpr int8_t kFree = -1;

  int xpu_of(int port) const {
    return port_xpu_ && port >= 0 && static_cast<size_t>(port) < port_xpu_->size() ? (*port_xpu_)[static_cast<size_t>(port)] : -1;
  }
  // The unchanged circuits with an end at an XPU a changed circuit ends at, first (stable: port
  // order within each part).
  void release_near_changes_first() {
    if (!port_xpu_) return;
    std::vector<int> touched;
    for (int p : must_move_)
      for (int end : {p, perm_[static_cast<size_t>(p)]})
        if (xpu_of(end) >= 0) touched.push_back(xpu_of(end));
    auto near = [&](int p) {
      for (int end : {p, perm_[static_cast<size_t>(p)]})
        if (xpu_of(end) >= 0 && std::find(touched.begin(), touched.end(), xpu_of(end)) != touched.end()) return true;
      return false;
    };
    std::stable_partition(unchanged_.begin(), unchanged_.end(), near);
  }

  // Every set of `more` further unchanged circuits from index `from` on, in order, released
  // beside `released`; true once one routes.
  bool try_releasing(std::vector<int>& released, size_t from, int more) {
    if (visits_ > kBudget) return false;
    if (more == 0) {
      std::fill(fixed_.begin(), fixed_.end(), kFree);
      for (int p : unchanged_)
        if (std::find(released.begin(), released.end(), p) == released.end()) keep_path(p);
      changed_ = must_move_;
      changed_.insert(changed_.end(), released.begin(), released.end());
      return place(0);
    }
    for (size_t i = from; i + static_cast<size_t>(more) <= unchanged_.size(); ++i) {
      released.push_back(unchanged_[i]);
      const bool ok = try_releasing(released, i + 1, more - 1);
      released.pop_back();
      if (ok) return true;
    }
    return false;
  }

  void keep_path(int port) {
    ElementPort at = t_.input_of_port(port);
    for (int stage = 0;; ++stage) {
      const ElementState s = now_[static_cast<size_t>(at.element)];
      fixed_[static_cast<size_t>(at.element)] = static_cast<int8_t>(s);
      const int out = BenesTopology::output_side(s, at.side);
      if (stage == t_.stages() - 1) return;
      const int next = t_.next_input_position(stage, 2 * t_.row_of(at.element) + out);
      at = {t_.element_index(stage + 1, next / 2), next % 2};
    }
  }
  uint64_t reach_after(int stage, int row, int out) const {
    const int next = t_.next_input_position(stage, 2 * row + out);
    return reach_[static_cast<size_t>(t_.element_index(stage + 1, next / 2))];
  }
  bool place(size_t k) {
    if (k == changed_.size()) return true;
    const int p = changed_[k];
    const ElementPort in = t_.input_of_port(p);
    return walk(k, 0, in.element, in.side);
  }
  // The path of changed circuit k from `element`'s input `side` on, then the circuits after it.
  bool walk(size_t k, int stage, int element, int side) {
    if (++visits_ > kBudget) return false;
    const ElementState present = now_[static_cast<size_t>(element)];
    for (ElementState s : {present, present == ElementState::Bar ? ElementState::Cross : ElementState::Bar}) {
      int8_t& f = fixed_[static_cast<size_t>(element)];
      if (f != kFree && f != static_cast<int8_t>(s)) continue;
      const bool was_free = f == kFree;
      f = static_cast<int8_t>(s);
      const int out = BenesTopology::output_side(s, side);
      const int target = perm_[static_cast<size_t>(changed_[k])];
      if (stage < t_.stages() - 1 && !(reach_after(stage, t_.row_of(element), out) >> target & 1)) {
        if (was_free) f = kFree;
        continue;
      }
      bool ok;
      if (stage == t_.stages() - 1) {
        ok = t_.port_of_output(t_.row_of(element), out) == perm_[static_cast<size_t>(changed_[k])] && place(k + 1);
      } else {
        const int next = t_.next_input_position(stage, 2 * t_.row_of(element) + out);
        ok = walk(k, stage + 1, t_.element_index(stage + 1, next / 2), next % 2);
      }
      if (ok) return true;
      if (was_free) f = kFree;
      if (visits_ > kBudget) return false;
    }
    return false;
  }

  const BenesTopology& t_;
  const std::vector<int>& perm_;
  const std::vector<ElementState>& now_;
  const std::vector<int>* port_xpu_;
  const int max_released_;
  std::vector<int8_t> fixed_;  // kFree, or the ElementState an element must keep
  std::vector<uint64_t> reach_;  // per element: the output ports a path through it can reach
  std::vector<int> unchanged_, must_move_;
  std::vector<int> changed_;  // this attempt's circuits to search: those that must move, then the released
  long visits_ = 0;
};

}  // namespace

Result<std::vector<ElementState>> route(const BenesTopology& topology, const std::vector<int>& perm,
                                        const std::vector<ElementState>* now, bool around, const std::vector<int>* port_xpu) {
  std::string why = check_permutation(topology.ports(), perm);
  if (!why.empty()) return Result<std::vector<ElementState>>::failure(why);
  if (now && now->size() != static_cast<size_t>(topology.elements())) now = nullptr;
  if (now && around)
    if (auto routed = RouteAround(topology, perm, *now, port_xpu).run()) return Result<std::vector<ElementState>>::success(std::move(*routed));
  std::vector<int> previous;
  if (now)
    for (int p = 0; p < topology.ports(); ++p) previous.push_back(topology.trace(*now, p));
  std::vector<ElementState> states(static_cast<size_t>(topology.elements()), ElementState::Bar);
  route_sub(topology, 0, 0, complete_permutation(perm, now ? &previous : nullptr), states, now);
  return Result<std::vector<ElementState>>::success(std::move(states));
}

namespace {

// Each XPU's ports, in port order (a port's index there is its lane).
std::vector<std::vector<int>> ports_by_xpu(const std::vector<int>& port_xpu) {
  std::vector<std::vector<int>> out;
  for (size_t p = 0; p < port_xpu.size(); ++p) {
    const int x = port_xpu[p];
    if (x < 0) continue;
    if (static_cast<size_t>(x) >= out.size()) out.resize(static_cast<size_t>(x) + 1);
    out[static_cast<size_t>(x)].push_back(static_cast<int>(p));
  }
  return out;
}

// `perm` with XPU `from`'s ports relabelled to `to`'s of the same lane, as inputs and outputs.
std::vector<int> substitute(const std::vector<int>& perm, const std::vector<int>& from, const std::vector<int>& to) {
  auto relabel = [&](int port) {
    const auto at = std::find(from.begin(), from.end(), port);
    return at == from.end() ? port : to[static_cast<size_t>(at - from.begin())];
  };
  std::vector<int> out(perm.size(), kUnused);
  for (size_t p = 0; p < perm.size(); ++p)
    if (perm[p] != kUnused) out[static_cast<size_t>(relabel(static_cast<int>(p)))] = relabel(perm[p]);
  return out;
}

}  // namespace

SpareReadiness spare_readiness(const BenesTopology& t, const std::vector<int>& perm, const std::vector<ElementState>& states,
                               const std::vector<int>& port_xpu) {
  SpareReadiness r;
  if (perm.size() != static_cast<size_t>(t.ports()) || states.size() != static_cast<size_t>(t.elements())) return r;
  std::vector<bool> used(perm.size(), false);  // as an input or as an output
  for (size_t p = 0; p < perm.size(); ++p)
    if (perm[p] != kUnused) used[p] = used[static_cast<size_t>(perm[p])] = true;
  const auto xpus = ports_by_xpu(port_xpu);
  std::vector<int> tenant, spare;
  for (size_t x = 0; x < xpus.size(); ++x) {
    if (xpus[x].empty()) continue;
    const bool any = std::any_of(xpus[x].begin(), xpus[x].end(), [&](int p) { return used[static_cast<size_t>(p)]; });
    (any ? tenant : spare).push_back(static_cast<int>(x));
  }
  for (int x : tenant)
    for (int s : spare) {
      if (xpus[static_cast<size_t>(s)].size() != xpus[static_cast<size_t>(x)].size()) continue;
      ++r.substitutions;
      const auto next = substitute(perm, xpus[static_cast<size_t>(x)], xpus[static_cast<size_t>(s)]);
      r.clean += RouteAround(t, next, states, &port_xpu, 0).run().has_value();
    }
  return r;
}

Result<std::vector<ElementState>> route_whole_map(const BenesTopology& t, const std::vector<int>& perm, const std::vector<int>& port_xpu) {
  std::string why = check_permutation(t.ports(), perm);
  if (!why.empty()) return Result<std::vector<ElementState>>::failure(why);
  std::vector<int> looped = perm;
  for (size_t p = 0; p < perm.size() && p < port_xpu.size(); ++p)
    if (perm[p] == kUnused && port_xpu[p] >= 0 && std::find(perm.begin(), perm.end(), static_cast<int>(p)) == perm.end())
      looped[p] = static_cast<int>(p);
  std::vector<ElementState> states(static_cast<size_t>(t.elements()), ElementState::Bar);
  route_sub(t, 0, 0, complete_permutation(looped), states, nullptr);
  return Result<std::vector<ElementState>>::success(std::move(states));
}

int moved_circuits(const BenesTopology& t, const std::vector<int>& perm, const std::vector<ElementState>& before,
                   const std::vector<ElementState>& after) {
  int moved = 0;
  const auto elements = static_cast<size_t>(t.elements());
  if (before.size() != elements || after.size() != elements) return 0;  // nothing routed to compare with
  for (int p = 0; p < t.ports() && static_cast<size_t>(p) < perm.size(); ++p) {
    const int q = perm[static_cast<size_t>(p)];
    if (q == kUnused || t.trace(before, p) != q) continue;
    ElementPort at = t.input_of_port(p);
    for (int stage = 0;; ++stage) {
      const ElementState s = before[static_cast<size_t>(at.element)];
      if (after[static_cast<size_t>(at.element)] != s) {
        ++moved;
        break;
      }
      if (stage == t.stages() - 1) break;
      const int next = t.next_input_position(stage, 2 * t.row_of(at.element) + BenesTopology::output_side(s, at.side));
      at = {t.element_index(stage + 1, next / 2), next % 2};
    }
  }
  return moved;
}

Result<std::vector<ElementState>> route(int ports, const std::vector<int>& perm) {
  auto topology = BenesTopology::create(ports);
  if (!topology) return Result<std::vector<ElementState>>::failure(topology.error());
  return route(topology.value(), perm);
}

}  // namespace mxtb::firmware
