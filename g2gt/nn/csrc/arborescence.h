// Maximum spanning arborescence with exactly one child of ROOT (Chu-Liu-Edmonds), for a batch of sentences:
// the compiled twin of g2gt/ud/parse/trees.py's mst_decode, step for step, so that both give the same heads
// (ties included: every argmax takes the first maximal index, as numpy's does, and a NaN counts as maximal).
//
// For each sentence b with n = lengths[b] words, S = scores[b, :n+1, :n+1] (row = dependent, column = head,
// 0 = ROOT), in float64:
//
//   1. forbidden entries (-inf, NaN; the diagonal) become floor = lo - (hi - lo + 1) (N + 1), lo / hi the
//      finite off-diagonal scores' extremes, N = n + 1; then the diagonal and row 0 are -inf;
//   2. the per-word best heads are returned when they already form a tree with one child of ROOT;
//   3. else every ROOT arc loses M = (max - min + 1) N (max / min over the finite scores of rows 1..n), so
//      that the best arborescence has one ROOT child, and Chu-Liu-Edmonds contracts cycles in place on one
//      working matrix W: a cycle C (each member d at its best head g(d)) becomes its first member c, with
//      entering scores W[c, h] = max_{d in C} W[d, h] - W[d, g(d)] and leaving scores
//      W[x, c] = max_{d in C} W[x, d]; the expansion replays the contractions backwards.
//
// Work and memory per sentence are O(N^2) (W), plus O(N |C|) per contraction; sentences run in parallel
// (at::parallel_for). Output: heads [B, n_max] int64, heads[b, i - 1] the head of word i, 0 past lengths[b].
#pragma once

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace g2gt_tree {

using at::Tensor;

constexpr double kNeg = -std::numeric_limits<double>::infinity();

// numpy's argmax over v[0], v[step], ... (n values): the first maximum; a NaN wins at once
inline int64_t argmax(const double* v, int64_t n, int64_t step = 1) {
  int64_t best = 0;
  double bv = v[0];
  if (std::isnan(bv)) return 0;
  for (int64_t i = 1; i < n; ++i) {
    const double x = v[i * step];
    if (std::isnan(x)) return i;
    if (x > bv) {
      bv = x;
      best = i;
    }
  }
  return best;
}

// Every cycle among nodes 1..N-1 of the head array (head[0] ignored), in the order trees.py's _all_cycles
// finds them: walks from each unvisited node, a cycle listed from the node where the walk closed it.
inline std::vector<std::vector<int64_t>> all_cycles(const std::vector<int64_t>& head) {
  const int64_t N = static_cast<int64_t>(head.size());
  std::vector<char> state(N, 0);  // 0 new, 1 on the current path, 2 finished
  state[0] = 2;
  std::vector<std::vector<int64_t>> cycles;
  std::vector<int64_t> path;
  for (int64_t start = 1; start < N; ++start) {
    if (state[start]) continue;
    path.clear();
    int64_t v = start;
    while (state[v] == 0) {
      state[v] = 1;
      path.push_back(v);
      v = head[v];
    }
    if (state[v] == 1) cycles.emplace_back(std::find(path.begin(), path.end(), v), path.end());
    for (int64_t u : path) state[u] = 2;
  }
  return cycles;
}

// The cycle through c when following head from it (c first), or an empty vector when the walk reaches ROOT
// or a cycle without c.
inline std::vector<int64_t> cycle_through(const std::vector<int64_t>& head, int64_t c, std::vector<char>& seen) {
  std::vector<int64_t> path{c};
  std::fill(seen.begin(), seen.end(), 0);
  seen[c] = 1;
  int64_t v = head[c];
  while (v != 0) {
    if (v == c) return path;
    if (seen[v]) return {};
    seen[v] = 1;
    path.push_back(v);
    v = head[v];
  }
  return {};
}

struct Contraction {
  int64_t c;
  std::vector<int64_t> members, cycle_heads, enter_member, leave_member;  // enter / leave: per node [N]
  std::vector<char> outside;                                              // active nodes outside the cycle
};

// Chu-Liu-Edmonds on W ([N, N] row-major, modified in place); heads [N] with heads[0] = 0.
inline std::vector<int64_t> chu_liu_edmonds(std::vector<double>& W, int64_t N) {
  std::vector<int64_t> head(N);
  for (int64_t i = 0; i < N; ++i) head[i] = argmax(W.data() + i * N, N);
  head[0] = 0;
  std::vector<std::vector<int64_t>> pending = all_cycles(head);
  if (pending.empty()) return head;
  std::vector<char> active(N, 1), in_cycle(N, 0), seen(N, 0);
  std::vector<Contraction> history;
  std::vector<double> enter, in_val(N), out_val(N);
  std::vector<int64_t> in_local(N), out_local(N);
  while (!pending.empty()) {
    std::vector<int64_t> C = std::move(pending.back());
    pending.pop_back();
    const int64_t k = static_cast<int64_t>(C.size()), c = C[0];
    std::vector<int64_t> hc(k);
    for (int64_t m = 0; m < k; ++m) hc[m] = head[C[m]];
    enter.assign(k * N, 0.0);  // enter[m, x] = W[C_m, x] - W[C_m, g(C_m)]
    for (int64_t m = 0; m < k; ++m) {
      const double* row = W.data() + C[m] * N;
      const double base = row[hc[m]];
      for (int64_t x = 0; x < N; ++x) enter[m * N + x] = row[x] - base;
    }
    std::vector<double> cols(k);
    for (int64_t x = 0; x < N; ++x) {
      in_local[x] = argmax(enter.data() + x, k, N);
      in_val[x] = enter[in_local[x] * N + x];
      for (int64_t m = 0; m < k; ++m) cols[m] = W[x * N + C[m]];
      out_local[x] = argmax(cols.data(), k);
      out_val[x] = cols[out_local[x]];
    }
    for (int64_t m = 0; m < k; ++m) {
      in_cycle[C[m]] = 1;
      in_val[C[m]] = kNeg;
      out_val[C[m]] = kNeg;
      active[C[m]] = 0;
    }
    Contraction rec{c, C, hc, std::vector<int64_t>(N), std::vector<int64_t>(N), active};
    for (int64_t x = 0; x < N; ++x) {
      rec.enter_member[x] = C[in_local[x]];
      rec.leave_member[x] = C[out_local[x]];
    }
    history.push_back(std::move(rec));
    active[c] = 1;
    for (int64_t m = 0; m < k; ++m) {
      std::fill(W.begin() + C[m] * N, W.begin() + (C[m] + 1) * N, kNeg);
      for (int64_t x = 0; x < N; ++x) W[x * N + C[m]] = kNeg;
    }
    for (int64_t x = 0; x < N; ++x) {
      W[c * N + x] = in_val[x];
      W[x * N + c] = out_val[x];
    }
    for (int64_t x = 0; x < N; ++x)
      if (in_cycle[head[x]]) head[x] = c;  // x -> d in C becomes x -> c (still x's best head)
    head[c] = argmax(in_val.data(), N);
    for (int64_t m = 0; m < k; ++m) in_cycle[C[m]] = 0;
    std::vector<int64_t> next = cycle_through(head, c, seen);
    if (!next.empty()) pending.push_back(std::move(next));
  }
  std::vector<int64_t> fin = head;
  std::vector<char> sel(N);
  for (auto it = history.rbegin(); it != history.rend(); ++it) {
    const int64_t h = fin[it->c];
    for (int64_t x = 0; x < N; ++x) sel[x] = it->outside[x] && fin[x] == it->c;
    for (int64_t x = 0; x < N; ++x)
      if (sel[x]) fin[x] = it->leave_member[x];
    for (size_t m = 0; m < it->members.size(); ++m) fin[it->members[m]] = it->cycle_heads[m];
    fin[it->enter_member[h]] = h;
  }
  fin[0] = 0;
  return fin;
}

// One sentence: S ([N, N] of the padded [n_max + 1, n_max + 1] matrix at `src`, row stride ld), heads of
// words 1..N-1 written to out.
template <typename T>
void decode_one(const T* src, int64_t ld, int64_t N, int64_t* out) {
  if (N == 2) {
    out[0] = 0;
    return;
  }
  std::vector<double> W(N * N);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < N; ++j) W[i * N + j] = static_cast<double>(src[i * ld + j]);
  // 1. forbidden entries of rows 1..N-1 -> floor; diagonal and row 0 -> -inf
  double lo = std::numeric_limits<double>::infinity(), hi = kNeg;
  bool any = false;
  for (int64_t i = 1; i < N; ++i)
    for (int64_t j = 0; j < N; ++j) {
      const double x = W[i * N + j];
      if (i != j && std::isfinite(x)) {
        lo = std::min(lo, x);
        hi = std::max(hi, x);
        any = true;
      }
    }
  if (!any) lo = hi = 0.0;
  const double floor = lo - (hi - lo + 1.0) * static_cast<double>(N + 1);
  for (int64_t i = 1; i < N; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double& x = W[i * N + j];
      if (i == j) x = kNeg;
      else if (!std::isfinite(x)) x = floor;
    }
  std::fill(W.begin(), W.begin() + N, kNeg);
  // 2. the greedy heads when they are a tree with one ROOT child
  std::vector<int64_t> greedy(N, 0);
  int64_t roots = 0;
  for (int64_t i = 1; i < N; ++i) {
    greedy[i] = argmax(W.data() + i * N, N);
    roots += greedy[i] == 0;
  }
  if (roots == 1 && all_cycles(greedy).empty()) {
    for (int64_t i = 1; i < N; ++i) out[i - 1] = greedy[i];
    return;
  }
  // 3. one ROOT child by reweighting, then Chu-Liu-Edmonds
  double vmax = kNeg, vmin = std::numeric_limits<double>::infinity();
  for (int64_t i = 1; i < N; ++i)
    for (int64_t j = 0; j < N; ++j) {
      const double x = W[i * N + j];
      if (std::isfinite(x)) {
        vmax = std::max(vmax, x);
        vmin = std::min(vmin, x);
      }
    }
  const double M = (vmax - vmin + 1.0) * static_cast<double>(N);
  for (int64_t i = 1; i < N; ++i) W[i * N] -= M;
  const std::vector<int64_t> heads = chu_liu_edmonds(W, N);
  for (int64_t i = 1; i < N; ++i) out[i - 1] = heads[i];
}

// scores [B, n+1, n+1] (float32 or float64, any strides but unit stride along the last dim after .contiguous),
// lengths [B] int64 (each in 1..n) -> heads [B, n] int64
inline Tensor max_spanning_trees(const Tensor& scores, const Tensor& lengths) {
  TORCH_CHECK(scores.dim() == 3 && scores.size(1) == scores.size(2) && scores.size(1) >= 2,
              "max_spanning_trees: scores must be [B, n+1, n+1] with n >= 1, got ", scores.sizes());
  TORCH_CHECK(scores.scalar_type() == at::kFloat || scores.scalar_type() == at::kDouble,
              "max_spanning_trees: scores must be float32 or float64, got ", scores.scalar_type());
  TORCH_CHECK(lengths.dim() == 1 && lengths.size(0) == scores.size(0) && lengths.scalar_type() == at::kLong,
              "max_spanning_trees: lengths must be [B] int64 (one per matrix)");
  const Tensor s = scores.contiguous();
  const Tensor len = lengths.contiguous();
  const int64_t B = s.size(0), Np = s.size(1), n = Np - 1;
  const int64_t* lp = len.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; ++b)
    TORCH_CHECK(lp[b] >= 1 && lp[b] <= n, "max_spanning_trees: length ", lp[b], " is outside 1..", n);
  Tensor heads = at::zeros({B, n}, s.options().dtype(at::kLong));
  int64_t* hp = heads.data_ptr<int64_t>();
  AT_DISPATCH_FLOATING_TYPES(s.scalar_type(), "max_spanning_trees", [&] {
    const scalar_t* sp = s.data_ptr<scalar_t>();
    at::parallel_for(0, B, 1, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) decode_one(sp + b * Np * Np, Np, lp[b] + 1, hp + b * n);
    });
  });
  return heads;
}

}  // namespace g2gt_tree
