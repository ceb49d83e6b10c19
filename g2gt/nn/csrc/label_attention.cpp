// Blocked label attention on the CPU: the kernels behind g2gt/nn/label_cpp.py.
//
// For one (batch b, head h), query rows i and key columns j (d_h = head width, L = label-table rows,
// qa = scale * q a_K^T, the key label term of each query against every label):
//
//   S_ij  = scale * q_i . k_j + sum_c qa[i, off_c + l^c_ij] + add_ij     (-inf where masked)
//   P_ij  = exp(S_ij - lse_i),   lse_i = log sum_j exp(S_ij)
//   out_i = sum_j P_ij v_j + sum_l per_il a_V[l],   per_il = sum_c sum_j [off_c + l^c_ij = l] P_ij
//
// backward, with dO the output gradient, D_i = dO_i . out_i and doa = dO a_V^T ([nq, L]):
//
//   dP_ij = dO_i . v_j + sum_c doa[i, off_c + l^c_ij],   dS_ij = P_ij (dP_ij - D_i),   dqa = scatter_l dS
//   dq = scale (dS k + dqa a_K),  dk = scale dS^T q,  dv = P^T dO,  da_K = scale sum dqa^T q,  da_V = sum per^T dO
//
// Work goes over blocks of query rows against all (visible) keys, like flash attention. The label tables
// are stacked onto the keys and values ([a_K; K], [a_V; V], see label_blocks.h), so a block runs exactly
// the products plain attention runs, their first columns giving qa / doa and the value term. A block's
// [qa | S], [per | P] and [dqa | dS] ([rows, L + nk]) exist once per thread, so memory is linear in n:
// nothing [B, H, nq, nk] (nor [B, H, nq, L]) is ever allocated. The label bias is gathered and dqa / per
// scattered row by row (label_rows.h). Products run in register tiles for small blocks and through
// ATen's GEMM for large ones (label_gemm.h). The row passes use AVX-512 or AVX2 + FMA explicitly where the
// compiler targets them (the library is built on, and for, the CPU that runs it; see label_cpp.py), plain
// C++ elsewhere. The forward pass keeps P unnormalised (exp(S - max)) and scales each output row by
// 1 / sum once its products are done. Blocks of different (b, h) run in parallel (at::parallel_for).
//
// Layouts (normalised in g2gt/nn/label_cpp.py): q [B, H, nq, dh], k, v [B, H, nk, dh] and dO with unit
// stride along dh (any other strides, e.g. views of one packed q/k/v projection), float32 or float64;
// a_K, a_V [L, dh] contiguous; labels [B|1, C, nq, nk] uint8 / int16 / int32 with unit stride along nk;
// kpm [B|1, nk] bool (True = padding); allowed [B|1, H|1, nq|1, nk] bool (True = may attend); add like
// allowed in q's dtype. out is returned as a [B, H, nq, dh] view of a [B, nq, H, dh] buffer (the layout
// of the heads' concatenation). A row with no visible key gives out = 0, lse = -inf and no gradient.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "arborescence.h"
#include "label_blocks.h"
#include "label_gemm.h"
#include "label_rows.h"
#include "residual_norm.h"

namespace {

using at::Tensor;
using g2gt_rows::exp_shift;
using g2gt_rows::gather_add;
using g2gt_rows::kNegInf;
using g2gt_rows::MaskView;
using g2gt_rows::row_max;
using g2gt_rows::Problem;
using g2gt_blocks::block_rows;
using g2gt_blocks::label_sets;
using g2gt_blocks::LabelSet;
using g2gt_blocks::Rows;
using g2gt_blocks::Stacked;
using g2gt_blocks::with_labels;

template <typename T, typename Lab>
Problem<T, Lab> make_problem(const Tensor& q, const Tensor& k, const Tensor& a_k, const Tensor& labels,
                             at::IntArrayRef offsets, const std::optional<Tensor>& kpm,
                             const std::optional<Tensor>& allowed, const std::optional<Tensor>& add, bool causal,
                             int64_t offset, double scale) {
  Problem<T, Lab> p;
  p.B = q.size(0);
  p.H = q.size(1);
  p.nq = q.size(2);
  p.dh = q.size(3);
  p.nk = k.size(2);
  p.L = a_k.size(0);
  p.C = labels.size(1);
  p.causal = causal;
  p.offset = offset;
  p.scale = scale;
  p.lab = labels.data_ptr<Lab>();
  p.lab_sb = labels.size(0) == 1 ? 0 : labels.stride(0);
  p.lab_sc = labels.stride(1);
  p.lab_si = labels.stride(2);
  p.offs.assign(offsets.begin(), offsets.end());
  for (int64_t c = 0; c < p.C; ++c) p.sizes.push_back((c + 1 < p.C ? p.offs[c + 1] : p.L) - p.offs[c]);
  if (kpm.has_value() && kpm->defined()) {
    p.kpm = kpm->data_ptr<bool>();
    p.kpm_sb = kpm->size(0) == 1 ? 0 : kpm->stride(0);
  }
  p.allowed = MaskView<bool>(allowed);
  p.add = MaskView<T>(add);
  return p;
}

// In: the element type of q, k, v and out: T itself, or a narrower type (BFloat16, Half: inference under
// autocast or a bfloat16 model) whose rows are widened to T as a block reads them and narrowed as it writes
// its output, so that no widened copy of q, k, v is ever made; every product and sum runs in T.
template <typename T, typename Lab, typename In>
void forward_impl(const Problem<T, Lab>& P, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& a_k,
                  const std::optional<Tensor>& a_v, Tensor& out, Tensor& lse) {
  using g2gt_gemm::nn;
  using g2gt_gemm::nt;
  constexpr bool narrow = !std::is_same_v<In, T>;
  const int64_t nq = P.nq, nk = P.nk, dh = P.dh, L = P.L, H = P.H;
  const int64_t br = block_rows(nq, nk);
  const int64_t nblk = (nq + br - 1) / br;
  const std::vector<LabelSet> sets = label_sets(P, br);
  const Rows<In> Q(q), K(k), V(v), O(out);
  T* lp = lse.data_ptr<T>();
  const bool values = a_v.has_value() && a_v->defined();
  const T scale = static_cast<T>(P.scale);
  // every product of a block is rows x (L + nk) x dh: register tiles for small ones
  const bool tiled = g2gt_gemm::own<T>(br, L + nk, dh);
  at::parallel_for(0, P.B * H * nblk, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> sbuf(br * (L + nk)), inv(br);
    // narrow inputs: the block's query rows, its output rows and (without value labels) the values, in T
    std::vector<T> qbuf(narrow ? br * dh : 0), obuf(narrow ? br * dh : 0);
    Stacked<T> KA(a_k, nk, !tiled, tiled), VA(values ? *a_v : a_k, nk, values || narrow, false);
    int64_t loaded = -1;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t bh = task / nblk, blk = task % nblk, i0 = blk * br, b = bh / H, h = bh % H;
      const int64_t rows = std::min(br, nq - i0);
      const int64_t jmax = P.ncols(i0 + rows - 1);
      In* oout = O.row(b, h, i0);
      if (jmax == 0) {
        for (int64_t r = 0; r < rows; ++r) std::fill(oout + r * O.si, oout + r * O.si + dh, In(0));
        std::fill(lp + bh * nq + i0, lp + bh * nq + i0 + rows, kNegInf<T>);
        continue;
      }
      if (bh != loaded) {
        KA.load(K, b, h, nk);
        if (values || narrow) VA.load(V, b, h, nk);
        loaded = bh;
      }
      const T* qb;
      int64_t ldq;
      T* ob;
      int64_t ldo;
      if constexpr (narrow) {
        for (int64_t r = 0; r < rows; ++r) {
          const In* src = Q.row(b, h, i0 + r);
          T* dst = qbuf.data() + r * dh;
          for (int64_t x = 0; x < dh; ++x) dst[x] = static_cast<T>(src[x]);
        }
        qb = qbuf.data(), ldq = dh, ob = obuf.data(), ldo = dh;
      } else {
        qb = Q.row(b, h, i0), ldq = Q.si, ob = oout, ldo = O.si;
      }
      const LabelSet& set = sets[(P.lab_sb == 0 ? 0 : b) * nblk + blk];
      const int64_t lc = set.used.empty() ? L : int64_t(set.used.size()), w = lc + jmax;  // row of [qa | S]
      KA.use(set);
      if (values) VA.use(set);
      with_labels(P, set, b, i0, [&](const auto& bl) {
        if (tiled) {  // [qa | S]
          nn<T>(true, rows, w, dh, scale, qb, ldq, KA.top_t(lc), KA.ldt(), T(0), sbuf.data(), w);
        } else {
          nt<T>(rows, w, dh, scale, qb, ldq, KA.top(lc), dh, T(0), sbuf.data(), w);
        }
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t i = i0 + r, n = P.ncols(i);
          T* s = sbuf.data() + r * w + lc;
          P.score_row(s, n, b, h, i, s - lc, bl, r);
          const T m = row_max(s, n);
          if (m == kNegInf<T>) {  // no visible key: zeros
            std::fill(s, s + jmax, T(0));
            lp[bh * nq + i] = kNegInf<T>;
            inv[r] = T(0);
            continue;
          }
          const T sum = exp_shift(s, n, m);  // unnormalised: the output rows are scaled by 1 / sum below
          std::fill(s + n, s + jmax, T(0));
          inv[r] = T(1) / sum;
          lp[bh * nq + i] = m + std::log(sum);
        }
        if (values) {  // [per | P] [a_V; V]
          for (int64_t r = 0; r < rows; ++r) std::fill(sbuf.data() + r * w, sbuf.data() + r * w + lc, T(0));
          P.scatter_block(sbuf.data(), sbuf.data() + lc, w, rows, jmax, bl);
          nn<T>(tiled, rows, dh, w, T(1), sbuf.data(), w, VA.top(lc), dh, T(0), ob, ldo);
        } else if constexpr (narrow) {  // the widened values sit below the (unused) table rows of VA
          nn<T>(tiled, rows, dh, jmax, T(1), sbuf.data() + lc, w, VA.top(0), dh, T(0), ob, ldo);
        } else {
          nn<T>(tiled, rows, dh, jmax, T(1), sbuf.data() + lc, w, V.row(b, h, 0), V.si, T(0), ob, ldo);
        }
        for (int64_t r = 0; r < rows; ++r) {
          T* o = ob + r * ldo;
          const T f = inv[r];
          if constexpr (narrow) {
            In* dst = oout + r * O.si;
            for (int64_t x = 0; x < dh; ++x) dst[x] = static_cast<In>(o[x] * f);
          } else {
#pragma omp simd
            for (int64_t x = 0; x < dh; ++x) o[x] *= f;
          }
        }
      });
    }
  });
}

template <typename T, typename Lab>
void backward_impl(const Problem<T, Lab>& P, const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                   const Tensor& out, const Tensor& lse, const Tensor& a_k, const std::optional<Tensor>& a_v,
                   Tensor& dq, Tensor& dk, Tensor& dv, Tensor& dak, Tensor& dav) {
  using g2gt_gemm::nn;
  using g2gt_gemm::nt;
  using g2gt_gemm::tn;
  const int64_t nq = P.nq, nk = P.nk, dh = P.dh, L = P.L;
  const int64_t br = block_rows(nq, nk);
  const int64_t nblk = (nq + br - 1) / br;
  const std::vector<LabelSet> sets = label_sets(P, br);
  const bool values = a_v.has_value() && a_v->defined();
  const Rows<T> Q(q), K(k), V(v), G(dout), O(out), dQ(dq), dK(dk), dV(dv);
  const T* lp = lse.data_ptr<T>();
  const T scale = static_cast<T>(P.scale);
  // every product of a block is rows x (L + nk) x dh: register tiles for small ones
  const bool tiled = g2gt_gemm::own<T>(br, L + nk, dh);
  std::mutex lock;
  at::parallel_for(0, P.B * P.H, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> pbuf(br * (L + nk)), dsbuf(br * (L + nk)), delta(br);
    // [a_K; K] (row-major, and transposed for the tiles), [a_V; V] (transposed for the tiles, else row-major)
    Stacked<T> KA(a_k, nk, true, tiled), VA(values ? *a_v : a_k, nk, !tiled && values, tiled);
    // this (b, h)'s [da_K rows; dk] and [da_V rows; dv] (table rows just above the keys, as in Stacked),
    // and this thread's da_K, da_V
    std::vector<T> dka((L + nk) * dh), dva((L + nk) * dh), dak_t(L * dh, T(0)), dav_t(values ? L * dh : 0, T(0));
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / P.H, h = bh % P.H;
      KA.load(K, b, h, nk);
      if (tiled || values) VA.load(V, b, h, nk);
      std::fill(dka.begin(), dka.end(), T(0));
      std::fill(dva.begin(), dva.end(), T(0));
      for (int64_t blk = 0; blk < nblk; ++blk) {
        const int64_t i0 = blk * br, rows = std::min(br, nq - i0);
        const int64_t jmax = P.ncols(i0 + rows - 1);
        const int64_t row0 = bh * nq + i0;
        T* dqb = dQ.row(b, h, i0);
        if (jmax == 0) {
          for (int64_t r = 0; r < rows; ++r) std::fill(dqb + r * dQ.si, dqb + r * dQ.si + dh, T(0));
          continue;
        }
        const LabelSet& set = sets[(P.lab_sb == 0 ? 0 : b) * nblk + blk];
        const int64_t lc = set.used.empty() ? L : int64_t(set.used.size()), w = lc + jmax;
        KA.use(set);
        if (values) VA.use(set);
        const T* qb = Q.row(b, h, i0);
        const T* gb = G.row(b, h, i0);
        T* dka_top = dka.data() + (L - lc) * dh;
        T* dva_top = dva.data() + (L - lc) * dh;
        with_labels(P, set, b, i0, [&](const auto& bl) {
          if (tiled) {
            nn<T>(true, rows, w, dh, scale, qb, Q.si, KA.top_t(lc), KA.ldt(), T(0), pbuf.data(), w);  // [qa | S]
            if (values) {
              nn<T>(true, rows, w, dh, T(1), gb, G.si, VA.top_t(lc), VA.ldt(), T(0), dsbuf.data(), w);  // [doa | dP]
            } else {
              nn<T>(true, rows, jmax, dh, T(1), gb, G.si, VA.top_t(0), VA.ldt(), T(0), dsbuf.data() + lc, w);  // dP
            }
          } else {
            nt<T>(rows, w, dh, scale, qb, Q.si, KA.top(lc), dh, T(0), pbuf.data(), w);
            if (values) {
              nt<T>(rows, w, dh, T(1), gb, G.si, VA.top(lc), dh, T(0), dsbuf.data(), w);
            } else {
              nt<T>(rows, jmax, dh, T(1), gb, G.si, V.row(b, h, 0), V.si, T(0), dsbuf.data() + lc, w);
            }
          }
          for (int64_t r = 0; r < rows; ++r) {  // D_i = dO_i . out_i
            const T* g = G.row(b, h, i0 + r);
            const T* o = O.row(b, h, i0 + r);
            T d = 0;
#pragma omp simd reduction(+ : d)
            for (int64_t x = 0; x < dh; ++x) d += g[x] * o[x];
            delta[r] = d;
          }
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t i = i0 + r, n = P.ncols(i);
            T* p = pbuf.data() + r * w + lc;
            T* ds = dsbuf.data() + r * w + lc;
            const T l = lp[row0 + r];
            if (n == 0 || l == kNegInf<T>) {  // no visible key: no gradient
              std::fill(p, p + jmax, T(0));
              std::fill(ds, ds + jmax, T(0));
              continue;
            }
            P.score_row(p, n, b, h, i, p - lc, bl, r);
            exp_shift(p, n, l);
            std::fill(p + n, p + jmax, T(0));
            if (values) {
              for (int64_t c = 0; c < P.C; ++c) gather_add(ds, n, ds - lc + bl.offs[c], bl.sizes[c], bl.row(c, r));
            }
            const T d = delta[r];
#pragma omp simd
            for (int64_t j = 0; j < n; ++j) ds[j] = p[j] * (ds[j] - d);
            std::fill(ds + n, ds + jmax, T(0));
          }
          // [dqa | dS] and [per | P]: the label columns take the scatters (entries past a row's keys are 0)
          for (int64_t r = 0; r < rows; ++r) std::fill(dsbuf.data() + r * w, dsbuf.data() + r * w + lc, T(0));
          P.scatter_block(dsbuf.data(), dsbuf.data() + lc, w, rows, jmax, bl);
          if (values) {
            for (int64_t r = 0; r < rows; ++r) std::fill(pbuf.data() + r * w, pbuf.data() + r * w + lc, T(0));
            P.scatter_block(pbuf.data(), pbuf.data() + lc, w, rows, jmax, bl);
          }
        });
        nn<T>(tiled, rows, dh, w, scale, dsbuf.data(), w, KA.top(lc), dh, T(0), dqb, dQ.si);  // dS k + dqa a_K
        tn<T>(tiled, rows, w, dh, scale, dsbuf.data(), w, qb, Q.si, dka_top, dh);          // [da_K rows; dk] +=
        if (values) {
          tn<T>(tiled, rows, w, dh, T(1), pbuf.data(), w, gb, G.si, dva_top, dh);  // [da_V rows; dv] +=
        } else {
          tn<T>(tiled, rows, jmax, dh, T(1), pbuf.data() + lc, w, gb, G.si, dva.data() + L * dh, dh);
        }
        // this block's table rows into the thread's da_K / da_V (then cleared for the next block)
        for (int64_t x = 0; x < lc; ++x) {
          const int64_t row = set.used.empty() ? x : set.used[x];
          T* tk = dak_t.data() + row * dh;
          T* sk = dka_top + x * dh;
#pragma omp simd
          for (int64_t y = 0; y < dh; ++y) tk[y] += sk[y];
          if (values) {
            T* tv = dav_t.data() + row * dh;
            T* sv = dva_top + x * dh;
#pragma omp simd
            for (int64_t y = 0; y < dh; ++y) tv[y] += sv[y];
          }
        }
        std::fill(dka_top, dka_top + lc * dh, T(0));
        if (values) std::fill(dva_top, dva_top + lc * dh, T(0));
      }
      for (int64_t j = 0; j < nk; ++j) {
        std::memcpy(dK.row(b, h, j), dka.data() + (L + j) * dh, dh * sizeof(T));
        std::memcpy(dV.row(b, h, j), dva.data() + (L + j) * dh, dh * sizeof(T));
      }
    }
    std::lock_guard<std::mutex> guard(lock);
    T* dakp = dak.data_ptr<T>();
    for (int64_t x = 0; x < L * dh; ++x) dakp[x] += dak_t[x];
    if (values) {
      T* davp = dav.data_ptr<T>();
      for (int64_t x = 0; x < L * dh; ++x) davp[x] += dav_t[x];
    }
  });
}

bool is_narrow(const Tensor& q) { return q.scalar_type() == at::kBFloat16 || q.scalar_type() == at::kHalf; }

// The dtype the kernel computes in: q's, or float32 for bfloat16 / float16 q (forward only).
at::ScalarType compute_type(const Tensor& q) { return is_narrow(q) ? at::kFloat : q.scalar_type(); }

void check_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& a_k, const Tensor& labels,
                  at::IntArrayRef offsets, bool narrow_ok) {
  TORCH_CHECK(q.device().is_cpu(), "g2gt label attention kernel: CPU tensors expected, got ", q.device());
  TORCH_CHECK(q.scalar_type() == at::kFloat || q.scalar_type() == at::kDouble || (narrow_ok && is_narrow(q)),
              "g2gt label attention kernel: float32 or float64 expected", narrow_ok ? " (or bfloat16 / float16)" : "",
              ", got ", q.scalar_type());
  for (const Tensor* t : {&q, &k, &v}) {
    TORCH_CHECK(t->dim() == 4 && t->stride(3) == 1 && t->scalar_type() == q.scalar_type(),
                "g2gt label attention kernel: q, k, v must be 4-d, of one dtype, with unit stride along d_head");
  }
  TORCH_CHECK(a_k.dim() == 2 && a_k.is_contiguous() && a_k.size(1) == q.size(3) &&
                  a_k.scalar_type() == compute_type(q),
              "g2gt label attention kernel: the label table must be a contiguous [L, d_head] tensor of q's dtype "
              "(float32 for bfloat16 / float16 q)");
  TORCH_CHECK(labels.dim() == 4 && labels.stride(3) == 1 && labels.size(1) == int64_t(offsets.size()),
              "g2gt label attention kernel: labels must be [B|1, C, nq, nk] with unit stride along nk and C offsets");
}

template <typename F>
void dispatch(at::ScalarType type, const Tensor& labels, F&& f) {
  AT_DISPATCH_FLOATING_TYPES(type, "g2gt_label_attention", [&] {
    using T = scalar_t;
    switch (labels.scalar_type()) {
      case at::kByte: f(T(), uint8_t()); break;
      case at::kShort: f(T(), int16_t()); break;
      case at::kInt: f(T(), int32_t()); break;
      default: TORCH_CHECK(false, "g2gt label attention kernel: labels must be uint8, int16 or int32, got ",
                           labels.scalar_type());
    }
  });
}

// f(compute type, label type, input type) over q's dtype (float32, float64; bfloat16 and float16 computed in
// float32) and the label dtype.
template <typename F>
void dispatch_forward(const Tensor& q, const Tensor& labels, F&& f) {
  if (q.scalar_type() == at::kBFloat16) {
    dispatch(at::kFloat, labels, [&](auto t, auto l) { f(t, l, c10::BFloat16()); });
  } else if (q.scalar_type() == at::kHalf) {
    dispatch(at::kFloat, labels, [&](auto t, auto l) { f(t, l, c10::Half()); });
  } else {
    dispatch(q.scalar_type(), labels, [&](auto t, auto l) { f(t, l, t); });
  }
}

std::tuple<Tensor, Tensor> label_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& a_k,
                                         const std::optional<Tensor>& a_v, const Tensor& labels,
                                         at::IntArrayRef offsets, const std::optional<Tensor>& kpm,
                                         const std::optional<Tensor>& allowed, const std::optional<Tensor>& add,
                                         bool causal, int64_t offset, double scale) {
  check_inputs(q, k, v, a_k, labels, offsets, true);
  Tensor out = at::empty({q.size(0), q.size(2), q.size(1), q.size(3)}, q.options()).transpose(1, 2);
  Tensor lse = at::empty({q.size(0), q.size(1), q.size(2)}, q.options().dtype(compute_type(q)));
  dispatch_forward(q, labels, [&](auto t, auto l, auto in) {
    using T = decltype(t);
    using Lab = decltype(l);
    using In = decltype(in);
    auto P = make_problem<T, Lab>(q, k, a_k, labels, offsets, kpm, allowed, add, causal, offset, scale);
    forward_impl<T, Lab, In>(P, q, k, v, a_k, a_v, out, lse);
  });
  return {out, lse};
}

// dq, dk, dv ([B, H, n, dh]) for the backward. Where q, k, v are the three thirds of one packed [B, n, 3 H dh]
// projection (their sizes, strides and offsets say so: GraphAttention's self-attention), the gradients are
// the thirds of one such buffer too, so that the packed gradient reaches the projection without a copy
// (g2gt/nn/attention.py, _PackedSplit); otherwise three contiguous tensors.
std::tuple<Tensor, Tensor, Tensor> grad_buffers(const Tensor& q, const Tensor& k, const Tensor& v) {
  const int64_t B = q.size(0), H = q.size(1), n = q.size(2), dh = q.size(3), d = H * dh;
  const int64_t step = d * q.element_size();
  const auto at_ = [](const Tensor& t) { return static_cast<const char*>(t.data_ptr()); };
  const bool packed = k.sizes() == q.sizes() && v.sizes() == q.sizes() && k.strides() == q.strides() &&
                      v.strides() == q.strides() && q.stride(3) == 1 && q.stride(2) == 3 * d && q.stride(1) == dh &&
                      (B == 1 || q.stride(0) == n * 3 * d) && at_(k) == at_(q) + step && at_(v) == at_(k) + step;
  if (packed) {
    const Tensor buf = at::empty({B, n, 3, H, dh}, q.options());
    return {buf.select(2, 0).permute({0, 2, 1, 3}), buf.select(2, 1).permute({0, 2, 1, 3}),
            buf.select(2, 2).permute({0, 2, 1, 3})};
  }
  return {at::empty_like(q, at::MemoryFormat::Contiguous), at::empty_like(k, at::MemoryFormat::Contiguous),
          at::empty_like(v, at::MemoryFormat::Contiguous)};
}

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> label_backward(
    const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
    const Tensor& a_k, const std::optional<Tensor>& a_v, const Tensor& labels, at::IntArrayRef offsets,
    const std::optional<Tensor>& kpm, const std::optional<Tensor>& allowed, const std::optional<Tensor>& add,
    bool causal, int64_t offset, double scale) {
  check_inputs(q, k, v, a_k, labels, offsets, false);
  TORCH_CHECK(dout.sizes() == q.sizes() && dout.stride(3) == 1 && out.stride(3) == 1 &&
                  dout.scalar_type() == q.scalar_type(),
              "g2gt label attention kernel: the output and its gradient must be like q, unit stride along d_head");
  const bool values = a_v.has_value() && a_v->defined();
  auto [dq, dk, dv] = grad_buffers(q, k, v);
  Tensor dak = at::zeros_like(a_k);
  Tensor dav = values ? at::zeros_like(*a_v) : at::empty({0}, a_k.options());
  dispatch(q.scalar_type(), labels, [&](auto t, auto l) {
    using T = decltype(t);
    using Lab = decltype(l);
    auto P = make_problem<T, Lab>(q, k, a_k, labels, offsets, kpm, allowed, add, causal, offset, scale);
    backward_impl<T, Lab>(P, dout, q, k, v, out, lse, a_k, a_v, dq, dk, dv, dak, dav);
  });
  return {dq, dk, dv, dak, dav};
}

}  // namespace

TORCH_LIBRARY(g2gt_label_attention, m) {
  m.def(
      "forward(Tensor q, Tensor k, Tensor v, Tensor a_k, Tensor? a_v, Tensor labels, int[] offsets, Tensor? kpm, "
      "Tensor? allowed, Tensor? add, bool causal, int offset, float scale) -> (Tensor, Tensor)");
  m.def(
      "backward(Tensor dout, Tensor q, Tensor k, Tensor v, Tensor out, Tensor lse, Tensor a_k, Tensor? a_v, "
      "Tensor labels, int[] offsets, Tensor? kpm, Tensor? allowed, Tensor? add, bool causal, int offset, "
      "float scale) -> (Tensor, Tensor, Tensor, Tensor, Tensor)");
  m.def("add_layer_norm(Tensor x, Tensor? y, Tensor weight, Tensor bias, float eps) -> (Tensor, Tensor)");
  m.def("max_spanning_trees(Tensor scores, Tensor lengths) -> Tensor");
}

TORCH_LIBRARY_IMPL(g2gt_label_attention, CPU, m) {
  m.impl("forward", &label_forward);
  m.impl("backward", &label_backward);
  m.impl("add_layer_norm", &g2gt_norm::add_layer_norm);
  m.impl("max_spanning_trees", &g2gt_tree::max_spanning_trees);
}
