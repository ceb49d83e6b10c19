// Blocks of the blocked label-attention kernels (label_attention.cpp): query rows per block, strided rows,
// the label rows a block uses (and its labels renumbered over them), and the stacked [table; keys] operands.
#pragma once

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "label_rows.h"

namespace g2gt_blocks {

using at::Tensor;
using g2gt_rows::BlockLabels;
using g2gt_rows::Problem;

// Query rows per block: 256 (as many as keep the block's products efficient), fewer for very long key
// rows so that a block's score buffers stay under 8 MiB; $G2GT_LABEL_BLOCK_ROWS overrides (tests).
inline int64_t block_rows(int64_t nq, int64_t nk) {
  int64_t rows = std::clamp<int64_t>((int64_t(1) << 21) / std::max<int64_t>(nk, 1), 16, 256);
  if (const char* e = std::getenv("G2GT_LABEL_BLOCK_ROWS")) rows = std::max(1, std::atoi(e));
  return std::min(rows, std::max<int64_t>(nq, 1));
}

// A [B, H, n, dh] tensor with unit stride along dh: row (b, h, i) at data + b*sb + h*sh + i*si.
template <typename T>
struct Rows {
  T* data;
  int64_t sb, sh, si;
  explicit Rows(const Tensor& t)
      : data(t.data_ptr<T>()), sb(t.stride(0)), sh(t.stride(1)), si(t.stride(2)) {}
  T* row(int64_t b, int64_t h, int64_t i) const { return data + b * sb + h * sh + i * si; }
};

// The label tables used by one block of query rows of one example: the rows of [a_K] its labels name.
// Short sentences name few of the L labels (e.g. ~20-40 of 120 in the parser: relative positions plus a
// tree's relations), so a block whose labels use at most 3/4 of the table (and at most 128 rows) works on
// those rows only, its labels renumbered 0..Lc-1 (one table for all channels): the label columns of its
// products shrink from L to Lc. Other blocks use the whole table and the labels as given. The renumbered
// ids ([C, rows, ncol] uint8) are made once per call and block, and shared by all heads.
struct LabelSet {
  std::vector<int64_t> used;  // table rows, ascending; empty = the whole table
  std::vector<uint8_t> ids;   // the block's labels renumbered over `used` (when not empty)
  std::vector<int64_t> offs, sizes;
  int64_t rows = 0, ncol = 0;
  BlockLabels<uint8_t> labels() const {
    return {ids.data(), rows * ncol, ncol, int64_t(offs.size()), offs.data(), sizes.data()};
  }
};

template <typename T, typename Lab>
std::vector<LabelSet> label_sets(const Problem<T, Lab>& P, int64_t br) {
  const int64_t nblk = (P.nq + br - 1) / br, Bl = P.lab_sb == 0 ? 1 : P.B;
  const int64_t limit = std::min<int64_t>(128, (3 * P.L) / 4);
  std::vector<LabelSet> sets(Bl * nblk);
  at::parallel_for(0, Bl * nblk, 1, [&](int64_t begin, int64_t end) {
    std::vector<uint8_t> mark(P.L);
    std::vector<int16_t> map(P.L);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t b = t / nblk, i0 = (t % nblk) * br, rows = std::min(br, P.nq - i0);
      const int64_t jmax = P.ncols(i0 + rows - 1);
      std::fill(mark.begin(), mark.end(), uint8_t(0));
      int64_t count = 0;
      for (int64_t c = 0; c < P.C && count <= limit; ++c)
        for (int64_t r = 0; r < rows && count <= limit; ++r) {
          const Lab* l = P.lab_row(b, c, i0 + r);
          uint8_t* m = mark.data() + P.offs[c];
          for (int64_t j = 0; j < jmax; ++j) {
            count += !m[l[j]];
            m[l[j]] = 1;
          }
        }
      if (count > limit) continue;
      LabelSet& set = sets[t];
      for (int64_t x = 0; x < P.L; ++x)
        if (mark[x]) {
          map[x] = static_cast<int16_t>(set.used.size());
          set.used.push_back(x);
        }
      set.rows = rows;
      set.ncol = jmax;
      set.ids.resize(P.C * rows * jmax);
      for (int64_t c = 0; c < P.C; ++c)
        for (int64_t r = 0; r < rows; ++r) {
          const Lab* l = P.lab_row(b, c, i0 + r);
          const int16_t* m = map.data() + P.offs[c];
          uint8_t* out = set.ids.data() + (c * rows + r) * jmax;
          for (int64_t j = 0; j < jmax; ++j) out[j] = static_cast<uint8_t>(m[l[j]]);
        }
      set.offs.assign(P.C, 0);
      set.sizes.assign(P.C, int64_t(set.used.size()));
    }
  });
  return sets;
}

// The stacked operands of one (b, h) and block: [a_used; m] as one contiguous [Lc + n, dh] matrix, row-major
// and transposed ([dh, Lc + n]), so that one product covers keys (values) and labels: with
// S_ext = Q [a_K; K]^T the first Lc columns are qa and the rest the scores; [per | P] [a_V; V] = P V + per a_V.
// The table rows sit just above m (rows / columns L - Lc .. L of the buffers), so that m is loaded once per
// (b, h) while the table part changes per block.
template <typename T>
struct Stacked {
  std::vector<T> rm, tr;
  const T* table;
  int64_t L, n, dh;
  const LabelSet* current = nullptr;
  Stacked(const Tensor& a, int64_t n_, bool row_major, bool transposed)
      : table(a.data_ptr<T>()), L(a.size(0)), n(n_), dh(a.size(1)) {
    if (row_major) rm.resize((L + n) * dh);
    if (transposed) tr.resize(dh * (L + n));
  }
  // rows of m (of T, or of a narrower input type S such as BFloat16, widened to T here) below the table
  template <typename S>
  void load(const Rows<S>& m, int64_t b, int64_t h, int64_t rows) {
    for (int64_t j = 0; j < rows; ++j) {
      const S* src = m.row(b, h, j);
      if (!rm.empty()) {
        if constexpr (std::is_same_v<S, T>) {
          std::memcpy(rm.data() + (L + j) * dh, src, dh * sizeof(T));
        } else {
          T* dst = rm.data() + (L + j) * dh;
          for (int64_t d = 0; d < dh; ++d) dst[d] = static_cast<T>(src[d]);
        }
      }
      if (!tr.empty())
        for (int64_t d = 0; d < dh; ++d) tr[d * (L + n) + L + j] = static_cast<T>(src[d]);
    }
  }
  void use(const LabelSet& set) {  // the table rows of `set` above m
    if (current == &set || (current && current->used.empty() && set.used.empty())) return;
    const int64_t lc = set.used.empty() ? L : int64_t(set.used.size());
    for (int64_t x = 0; x < lc; ++x) {
      const T* src = table + (set.used.empty() ? x : set.used[x]) * dh;
      const int64_t row = L - lc + x;
      if (!rm.empty()) std::memcpy(rm.data() + row * dh, src, dh * sizeof(T));
      if (!tr.empty())
        for (int64_t d = 0; d < dh; ++d) tr[d * (L + n) + row] = src[d];
    }
    current = &set;
  }
  const T* top(int64_t lc) const { return rm.data() + (L - lc) * dh; }  // [a_used; m], ld dh
  const T* top_t(int64_t lc) const { return tr.data() + (L - lc); }     // [a_used; m]^T, ld L + n
  int64_t ldt() const { return L + n; }
};

// Runs f(block labels) with the labels of the block as given, or renumbered over its set.
template <typename T, typename Lab, typename F>
void with_labels(const Problem<T, Lab>& P, const LabelSet& set, int64_t b, int64_t i0, F&& f) {
  if (set.used.empty()) {
    f(P.direct(b, i0));
  } else {
    f(set.labels());
  }
}

}  // namespace g2gt_blocks
