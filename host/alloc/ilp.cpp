// Morphlux in-rack placement and routing as an integer program, solved with GLPK (glp_intopt).
//
// Variables  z[l][s] in {0,1}: logical chip l sits in server s (servers with free chips only).
//            y[e][k] in [0,1]: logical edge e crosses server link k (forced to 1 by the rows below).
// Rows       sum_s z[l][s] = 1                           every logical chip placed once
//            sum_l z[l][s] <= free[s]                    server capacity
//            z[u][s] - sum_{t in N[s]} z[v][t] <= 0      edge endpoints share a server or are
//            (and with u, v swapped)                     neighbours over a link with fibre left
//            z[u][s] + z[v][t] - y[e][k] <= 1            y = 1 when e crosses k = (s, t)
//            z[u][t] + z[v][s] - y[e][k] <= 1
//            sum_e y[e][k] <= res[k]                     fibre capacity (one lane per crossing)
//            w[e][s] <= z[u][s], w[e][s] <= z[v][s]      w: edge e kept inside server s
//            sum_{e at l} wanted[e] w[e][s] <= top_{free[s]-1}(l) z[l][s]
//                                                        a chip keeps at most free[s]-1 of its
//                                                        heaviest edges inside its server
//            z[0][s] + sum_{t<s} z[l][t] <= 1            symmetry: logical chip 0 sits in the
//                                                        lowest server used (torus translation)
// Objective  min sum_e wanted[e] (1 - sum_s w[e][s])     lanes pushed onto fibres
// The heuristic's placement, when it has one, is handed to the branch and bound as incumbent.
#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>

#include <glpk.h>

#include "alloc.h"

namespace mxtb::host::alloc {

namespace {
struct ProbDeleter {
  void operator()(glp_prob* p) const { glp_delete_prob(p); }
};
int quiet_hook(void*, const char*) { return 1; }  // swallow GLPK's terminal output
}  // namespace

namespace {
struct Incumbent {
  std::vector<double> x;  // 1-based column values
  bool given = false;
};
void give_incumbent(glp_tree* T, void* info) {
  auto* inc = static_cast<Incumbent*>(info);
  if (glp_ios_reason(T) == GLP_IHEUR && !inc->given && !inc->x.empty()) {
    inc->given = true;
    glp_ios_heur_sol(T, inc->x.data());
  }
}
// Translates a placement over the logical torus so that logical chip 0 lands in the lowest server.
ServerAssign translate_to_lowest(const Shape& shape, const ServerAssign& a) {
  const auto& d = shape.d;
  int star = static_cast<int>(std::min_element(a.begin(), a.end()) - a.begin());
  int sc[3] = {star % d[0], (star / d[0]) % d[1], star / (d[0] * d[1])};
  ServerAssign out(a.size());
  for (int k = 0; k < d[2]; ++k)
    for (int j = 0; j < d[1]; ++j)
      for (int i = 0; i < d[0]; ++i) {
        int src = (i + sc[0]) % d[0] + d[0] * ((j + sc[1]) % d[1] + d[1] * ((k + sc[2]) % d[2]));
        out[i + d[0] * (j + d[1] * k)] = a[src];
      }
  return out;
}
// Largest total wanted weight of logical edges induced by m chips (m <= 4) of the logical torus;
// by vertex transitivity the subsets may contain logical chip 0.
std::array<double, kChipsPerServer + 1> intra_max(const Shape& shape) {
  const int n = shape.volume();
  auto edges = logical_edges(shape);
  std::vector<std::vector<double>> w(n, std::vector<double>(n, 0.0));
  for (const auto& e : edges) {
    w[e.u][e.v] += e.wanted;
    w[e.v][e.u] += e.wanted;
  }
  std::array<double, kChipsPerServer + 1> best{};
  for (int a = 1; a < n; ++a) {
    best[2] = std::max(best[2], w[0][a]);
    for (int b = a + 1; b < n; ++b) {
      double w3 = w[0][a] + w[0][b] + w[a][b];
      best[3] = std::max(best[3], w3);
      for (int c = b + 1; c < n; ++c)
        best[4] = std::max(best[4], w3 + w[0][c] + w[a][c] + w[b][c]);
    }
  }
  return best;
}
}  // namespace

// Long: the integer program's formulation, one constraint family after another on one GLPK problem
// and its shared index tables (variables, neighbourhoods, per-server bounds), read top to bottom.
IlpResult fabric_ilp(const RackView& v, const Shape& shape, int time_limit_ms) {
  auto t0 = std::chrono::steady_clock::now();
  IlpResult out;
  const int n = shape.volume();
  auto edges = logical_edges(shape);
  std::vector<int> servers;
  std::array<int, kServersPerRack> spos;
  spos.fill(-1);
  int total = 0;
  for (int s = 0; s < kServersPerRack; ++s)
    if (v.free[s] > 0) {
      spos[s] = static_cast<int>(servers.size());
      servers.push_back(s);
      total += v.free[s];
    }
  auto finish = [&](IlpResult::Status st) {
    out.status = st;
    out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return out;
  };
  if (total < n) return finish(IlpResult::Status::Infeasible);
  std::vector<int> links;
  for (int k = 0; k < kLinksPerRack; ++k) {
    auto e = link_ends(k);
    if (v.res[k] > 0 && spos[e[0]] >= 0 && spos[e[1]] >= 0) links.push_back(k);
  }
  const int S = static_cast<int>(servers.size());
  const int K = static_cast<int>(links.size());
  const int E = static_cast<int>(edges.size());
  auto zcol = [&](int l, int si) { return 1 + l * S + si; };
  auto ycol = [&](int e, int ki) { return 1 + n * S + e * K + ki; };
  auto wcol = [&](int e, int si) { return 1 + n * S + E * K + e * S + si; };
  const int ncols = n * S + E * K + E * S;

  glp_term_hook(quiet_hook, nullptr);
  std::unique_ptr<glp_prob, ProbDeleter> lp(glp_create_prob());
  glp_prob* P = lp.get();
  glp_set_obj_dir(P, GLP_MIN);
  glp_add_cols(P, ncols);
  for (int l = 0; l < n; ++l)
    for (int si = 0; si < S; ++si) glp_set_col_kind(P, zcol(l, si), GLP_BV);
  for (int e = 0; e < E; ++e)
    for (int ki = 0; ki < K; ++ki) {
      glp_set_col_bnds(P, ycol(e, ki), GLP_DB, 0.0, 1.0);
    }
  double total_wanted = 0;
  for (int e = 0; e < E; ++e) {
    total_wanted += edges[e].wanted;
    for (int si = 0; si < S; ++si) {
      glp_set_col_bnds(P, wcol(e, si), GLP_DB, 0.0, 1.0);
      glp_set_obj_coef(P, wcol(e, si), -edges[e].wanted);
    }
  }
  glp_set_obj_coef(P, 0, total_wanted);
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0.0};
  auto add_row = [&](int type, double lo, double hi) {
    int r = glp_add_rows(P, 1);
    glp_set_row_bnds(P, r, type, lo, hi);
    return r;
  };
  auto put = [&](int r, int c, double val) {
    ia.push_back(r);
    ja.push_back(c);
    ar.push_back(val);
  };
  for (int l = 0; l < n; ++l) {
    int r = add_row(GLP_FX, 1.0, 1.0);
    for (int si = 0; si < S; ++si) put(r, zcol(l, si), 1.0);
  }
  for (int si = 0; si < S; ++si) {
    int r = add_row(GLP_UP, 0.0, v.free[servers[si]]);
    for (int l = 0; l < n; ++l) put(r, zcol(l, si), 1.0);
  }
  // Closed neighbourhoods over links with fibre left.
  std::vector<std::vector<int>> nbr(S);
  for (int si = 0; si < S; ++si) nbr[si].push_back(si);
  for (int k : links) {
    auto e = link_ends(k);
    nbr[spos[e[0]]].push_back(spos[e[1]]);
    nbr[spos[e[1]]].push_back(spos[e[0]]);
  }
  for (const auto& ed : edges)
    for (int dir = 0; dir < 2; ++dir) {
      int u = dir ? ed.v : ed.u, w = dir ? ed.u : ed.v;
      for (int si = 0; si < S; ++si) {
        if (static_cast<int>(nbr[si].size()) == S) continue;  // neighbourhood covers everything
        int r = add_row(GLP_UP, 0.0, 0.0);
        put(r, zcol(u, si), 1.0);
        for (int ti : nbr[si]) put(r, zcol(w, ti), -1.0);
      }
    }
  for (int e = 0; e < E; ++e)
    for (int ki = 0; ki < K; ++ki) {
      auto le = link_ends(links[ki]);
      int a = spos[le[0]], b = spos[le[1]];
      for (int dir = 0; dir < 2; ++dir) {
        int r = add_row(GLP_UP, 0.0, 1.0);
        put(r, zcol(edges[e].u, dir ? b : a), 1.0);
        put(r, zcol(edges[e].v, dir ? a : b), 1.0);
        put(r, ycol(e, ki), -1.0);
      }
    }
  for (int ki = 0; ki < K; ++ki) {
    int r = add_row(GLP_UP, 0.0, v.res[links[ki]]);
    for (int e = 0; e < E; ++e) put(r, ycol(e, ki), 1.0);
  }
  // Edges kept inside a server, and the per-chip bound on them.
  std::vector<std::vector<int>> inc_edges(n);
  for (int e = 0; e < E; ++e) {
    inc_edges[edges[e].u].push_back(e);
    inc_edges[edges[e].v].push_back(e);
    for (int si = 0; si < S; ++si)
      for (int end : {edges[e].u, edges[e].v}) {
        int r = add_row(GLP_UP, 0.0, 0.0);
        put(r, wcol(e, si), 1.0);
        put(r, zcol(end, si), -1.0);
      }
  }
  for (int l = 0; l < n; ++l) {
    std::vector<int> ws;
    for (int e : inc_edges[l]) ws.push_back(edges[e].wanted);
    std::sort(ws.rbegin(), ws.rend());
    for (int si = 0; si < S; ++si) {
      int keep = std::min<int>(v.free[servers[si]] - 1, static_cast<int>(ws.size()));
      double bound = 0;
      for (int i = 0; i < keep; ++i) bound += ws[i];
      int r = add_row(GLP_UP, 0.0, 0.0);
      for (int e : inc_edges[l]) put(r, wcol(e, si), edges[e].wanted);
      put(r, zcol(l, si), -bound);
    }
  }
  // Per-server bound: q[s][m] = 1 when server s holds m chips of the slice; the edges kept
  // inside it weigh at most intra_max(m).
  const auto imax = intra_max(shape);
  for (int si = 0; si < S; ++si) {
    int cap = std::min(v.free[servers[si]], n);
    int q0 = glp_add_cols(P, cap + 1);
    for (int m = 0; m <= cap; ++m) glp_set_col_kind(P, q0 + m, GLP_BV);
    int r1 = add_row(GLP_FX, 1.0, 1.0);
    int r2 = add_row(GLP_FX, 0.0, 0.0);
    int r3 = add_row(GLP_UP, 0.0, 0.0);
    for (int m = 0; m <= cap; ++m) {
      put(r1, q0 + m, 1.0);
      put(r2, q0 + m, -m);
      put(r3, q0 + m, -imax[m]);
    }
    for (int l = 0; l < n; ++l) put(r2, zcol(l, si), 1.0);
    for (int e = 0; e < E; ++e) put(r3, wcol(e, si), edges[e].wanted);
  }
  for (int si = 1; si < S; ++si)
    for (int l = 1; l < n; ++l) {
      int r = add_row(GLP_UP, 0.0, 1.0);
      put(r, zcol(0, si), 1.0);
      for (int ti = 0; ti < si; ++ti) put(r, zcol(l, ti), 1.0);
    }
  glp_load_matrix(P, static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());

  // Incumbent from the heuristic, translated so that logical chip 0 sits in the lowest server.
  Incumbent inc;
  if (ServerAssign h = fabric_heuristic(v, shape); !h.empty()) {
    auto shift = translate_to_lowest(shape, h);
    inc.x.assign(glp_get_num_cols(P) + 1, 0.0);
    std::array<int, kServersPerRack> cnt{};
    for (int l = 0; l < n; ++l) cnt[shift[l]]++;
    for (int si = 0, col = ncols + 1; si < S; ++si) {
      int cap = std::min(v.free[servers[si]], n);
      inc.x[col + cnt[servers[si]]] = 1.0;
      col += cap + 1;
    }
    for (int l = 0; l < n; ++l) inc.x[zcol(l, spos[shift[l]])] = 1.0;
    for (int e = 0; e < E; ++e) {
      int a = shift[edges[e].u], b = shift[edges[e].v];
      if (a == b) {
        inc.x[wcol(e, spos[a])] = 1.0;
      } else {
        int k = server_link(a, b);
        for (int ki = 0; ki < K; ++ki)
          if (links[ki] == k) inc.x[ycol(e, ki)] = 1.0;
      }
    }
  }
  glp_smcp sm;
  glp_init_smcp(&sm);
  sm.msg_lev = GLP_MSG_OFF;
  sm.tm_lim = time_limit_ms;
  sm.meth = GLP_DUALP;
  sm.presolve = GLP_ON;
  int sret = glp_simplex(P, &sm);
  if (sret == 0 && glp_get_status(P) == GLP_NOFEAS) {
    glp_term_hook(nullptr, nullptr);
    return finish(IlpResult::Status::Infeasible);
  }
  if (sret != 0 || glp_get_status(P) != GLP_OPT) {
    glp_term_hook(nullptr, nullptr);
    return finish(sret == GLP_ETMLIM ? IlpResult::Status::Timeout : IlpResult::Status::Error);
  }
  glp_iocp parm;
  glp_init_iocp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_OFF;  // the callback works on the original columns
  parm.cb_func = give_incumbent;
  parm.cb_info = &inc;
  double left = time_limit_ms -
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  parm.tm_lim = std::max(1, static_cast<int>(left));
  int ret = glp_intopt(P, &parm);
  glp_term_hook(nullptr, nullptr);
  auto extract = [&]() {
    out.assign.assign(n, -1);
    for (int l = 0; l < n; ++l)
      for (int si = 0; si < S; ++si)
        if (glp_mip_col_val(P, zcol(l, si)) > 0.5) out.assign[l] = servers[si];
    out.objective = glp_mip_obj_val(P);
  };
  if (ret == GLP_ENOPFS || ret == GLP_ENODFS) return finish(IlpResult::Status::Infeasible);
  if (ret == GLP_ETMLIM) {
    if (glp_mip_status(P) == GLP_FEAS) {
      extract();
      return finish(IlpResult::Status::FeasibleTimeout);
    }
    return finish(IlpResult::Status::Timeout);
  }
  if (ret != 0) return finish(IlpResult::Status::Error);
  int st = glp_mip_status(P);
  if (st == GLP_OPT) {
    extract();
    return finish(IlpResult::Status::Optimal);
  }
  if (st == GLP_NOFEAS) return finish(IlpResult::Status::Infeasible);
  return finish(IlpResult::Status::Error);
}

}  // namespace mxtb::host::alloc
