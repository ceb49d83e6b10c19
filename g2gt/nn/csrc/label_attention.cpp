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
// Work goes over blocks of query rows against all (visible) keys, like flash attention: a block's
// scores S, P and dS ([rows, nk], sized to stay in the L2 cache) and its qa, doa, dqa, per ([rows, L])
// exist once per thread, so memory is linear in n: nothing [B, H, nq, nk] (nor [B, H, nq, L]) is ever
// allocated. The label bias is gathered and dqa / per scattered row by row (a label row is L values, in
// L1). Matrix products of a block use ATen's GEMM (MKL / oneDNN); the row passes are written to
// vectorise (-O3, OpenMP simd). Rows of different (b, h) run in parallel (at::parallel_for).
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
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <optional>
#include <vector>

namespace {

using at::Tensor;

// exp(x) for x <= ~0 (a score minus its row maximum or log-sum-exp); exactly 0 for x < -87 (and -inf).
// Cephes' expf polynomial: relative error about 2e-7.
inline void exp_inplace(float* x, int64_t n) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) {
    const float v = x[j];
    const float c = v < -87.0f ? -87.0f : (v > 0.0f ? 0.0f : v);
    const float fx = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest (1.5 * 2^23)
    float r = c - fx * 0.693359375f;
    r = r + fx * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const float y = p * r * r + r + 1.0f;
    const int32_t bits = (static_cast<int32_t>(fx) + 127) << 23;
    const float two_n = __builtin_bit_cast(float, bits);
    x[j] = v < -87.0f ? 0.0f : y * two_n;
  }
}

inline void exp_inplace(double* x, int64_t n) {
  for (int64_t j = 0; j < n; ++j) x[j] = std::exp(x[j]);
}

template <typename T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

// Strided view of a [B|1, H|1, nq|1, nk] mask (unit stride along nk; stride 0 on broadcast dims).
template <typename E>
struct MaskView {
  const E* data = nullptr;
  int64_t sb = 0, sh = 0, si = 0;

  MaskView() = default;
  explicit MaskView(const std::optional<Tensor>& t) {
    if (!t.has_value() || !t->defined()) return;
    data = t->data_ptr<E>();
    sb = t->size(0) == 1 ? 0 : t->stride(0);
    sh = t->size(1) == 1 ? 0 : t->stride(1);
    si = t->size(2) == 1 ? 0 : t->stride(2);
  }
  const E* row(int64_t b, int64_t h, int64_t i) const { return data + b * sb + h * sh + i * si; }
};

// Everything a row pass needs to know about one call.
template <typename T, typename Lab>
struct Problem {
  int64_t B, H, nq, nk, dh, L, C;
  bool causal;
  int64_t offset;  // query i sees keys j <= i + offset when causal
  double scale;
  const Lab* lab;
  int64_t lab_sb, lab_sc, lab_si;
  std::vector<int64_t> offs;
  const bool* kpm = nullptr;
  int64_t kpm_sb = 0;
  MaskView<bool> allowed;
  MaskView<T> add;

  // visible key columns of row i: [0, ncols(i))
  int64_t ncols(int64_t i) const { return causal ? std::clamp<int64_t>(i + offset + 1, 0, nk) : nk; }
  const Lab* lab_row(int64_t b, int64_t c, int64_t i) const { return lab + b * lab_sb + c * lab_sc + i * lab_si; }

  // s[0:n) (scaled q.k) += label bias + add; -inf where masked.
  void score_row(T* s, int64_t n, int64_t b, int64_t h, int64_t i, const T* qa_row) const {
    for (int64_t c = 0; c < C; ++c) {
      const Lab* l = lab_row(b, c, i);
      const T* t = qa_row + offs[c];
      for (int64_t j = 0; j < n; ++j) s[j] += t[l[j]];
    }
    if (add.data) {
      const T* a = add.row(b, h, i);
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) s[j] += a[j];
    }
    if (allowed.data) {
      const bool* al = allowed.row(b, h, i);
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) s[j] = al[j] ? s[j] : kNegInf<T>;
    }
    if (kpm) {
      const bool* pad = kpm + b * kpm_sb;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) s[j] = pad[j] ? kNegInf<T> : s[j];
    }
  }

  // dst[0:L) += sum_c sum_j [off_c + l^c_ij = l] src[j]; acc: 4 * L zeros (left zero). Four partial
  // tables break the store-to-load chains of runs of equal labels (chain graphs).
  void scatter_row(T* dst, const T* src, int64_t n, int64_t b, int64_t i, T* acc) const {
    const bool split = 4 * L <= n;
    for (int64_t c = 0; c < C; ++c) {
      const Lab* l = lab_row(b, c, i);
      T* base = split ? acc + offs[c] : dst + offs[c];
      if (split) {
        int64_t j = 0;
        for (; j + 4 <= n; j += 4) {
          base[l[j]] += src[j];
          base[L + l[j + 1]] += src[j + 1];
          base[2 * L + l[j + 2]] += src[j + 2];
          base[3 * L + l[j + 3]] += src[j + 3];
        }
        for (; j < n; ++j) base[l[j]] += src[j];
      } else {
        for (int64_t j = 0; j < n; ++j) base[l[j]] += src[j];
      }
    }
    if (split) {
      for (int64_t x = 0; x < L; ++x) {
        dst[x] += (acc[x] + acc[L + x]) + (acc[2 * L + x] + acc[3 * L + x]);
        acc[x] = acc[L + x] = acc[2 * L + x] = acc[3 * L + x] = T(0);
      }
    }
  }
};


// Query rows per block: the block's [rows, nk] score buffers (two of them in backward) stay in L2.
int64_t block_rows(int64_t nq, int64_t nk) {
  int64_t rows = std::clamp<int64_t>(int64_t(65536) / std::max<int64_t>(nk, 1), 32, 256);
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
  // rows i0 .. i0 + rows of (b, h) as a [rows, dh] matrix (no copy)
  Tensor mat(int64_t b, int64_t h, int64_t i0, int64_t rows, int64_t dh, const at::TensorOptions& o) const {
    return at::from_blob(row(b, h, i0), {rows, dh}, {si, 1}, o);
  }
};

template <typename T>
Tensor buffer(std::vector<T>& v, int64_t rows, int64_t cols, const at::TensorOptions& o) {
  return at::from_blob(v.data(), {rows, cols}, o);
}

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
  if (kpm.has_value() && kpm->defined()) {
    p.kpm = kpm->data_ptr<bool>();
    p.kpm_sb = kpm->size(0) == 1 ? 0 : kpm->stride(0);
  }
  p.allowed = MaskView<bool>(allowed);
  p.add = MaskView<T>(add);
  return p;
}

template <typename T, typename Lab>
void forward_impl(const Problem<T, Lab>& P, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& a_k,
                  const std::optional<Tensor>& a_v, Tensor& out, Tensor& lse) {
  const int64_t nq = P.nq, dh = P.dh, L = P.L, H = P.H;
  const int64_t br = block_rows(nq, P.nk);
  const int64_t nblk = (nq + br - 1) / br;
  const Rows<T> Q(q), K(k), V(v), O(out);
  T* lp = lse.data_ptr<T>();
  const bool values = a_v.has_value() && a_v->defined();
  const auto opts = q.options();
  const Tensor akT = a_k.t();
  at::parallel_for(0, P.B * H * nblk, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> sbuf(br * P.nk), qa(br * L), per(values ? br * L : 0), acc(4 * L);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t bh = task / nblk, i0 = (task % nblk) * br, b = bh / H, h = bh % H;
      const int64_t rows = std::min(br, nq - i0);
      const int64_t jmax = P.ncols(i0 + rows - 1);
      Tensor Ob = O.mat(b, h, i0, rows, dh, opts);
      if (jmax == 0) {
        Ob.zero_();
        std::fill(lp + bh * nq + i0, lp + bh * nq + i0 + rows, kNegInf<T>);
        continue;
      }
      Tensor Qb = Q.mat(b, h, i0, rows, dh, opts), S = buffer(sbuf, rows, jmax, opts);
      at::addmm_out(S, S, Qb, K.mat(b, h, 0, jmax, dh, opts).t(), 0, P.scale);
      Tensor QA = buffer(qa, rows, L, opts);
      at::addmm_out(QA, QA, Qb, akT, 0, P.scale);
      if (values) std::fill(per.begin(), per.end(), T(0));
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r, n = P.ncols(i);
        T* s = sbuf.data() + r * jmax;
        P.score_row(s, n, b, h, i, qa.data() + r * L);
        T m = kNegInf<T>;
#pragma omp simd reduction(max : m)
        for (int64_t j = 0; j < n; ++j) m = s[j] > m ? s[j] : m;
        if (m == kNegInf<T>) {  // no visible key: zeros
          std::fill(s, s + jmax, T(0));
          lp[bh * nq + i] = kNegInf<T>;
          continue;
        }
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) s[j] -= m;
        exp_inplace(s, n);
        T sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < n; ++j) sum += s[j];
        const T inv = T(1) / sum;
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) s[j] *= inv;
        std::fill(s + n, s + jmax, T(0));
        lp[bh * nq + i] = m + std::log(sum);
        if (values) P.scatter_row(per.data() + r * L, s, n, b, i, acc.data());
      }
      at::mm_out(Ob, S, V.mat(b, h, 0, jmax, dh, opts));
      if (values) at::addmm_out(Ob, Ob, buffer(per, rows, L, opts), *a_v, 1, 1);
    }
  });
}

template <typename T, typename Lab>
void backward_impl(const Problem<T, Lab>& P, const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                   const Tensor& out, const Tensor& lse, const Tensor& a_k, const std::optional<Tensor>& a_v,
                   Tensor& dq, Tensor& dk, Tensor& dv, Tensor& dak, Tensor& dav) {
  const int64_t nq = P.nq, nk = P.nk, dh = P.dh, L = P.L;
  const int64_t br = block_rows(nq, nk);
  const bool values = a_v.has_value() && a_v->defined();
  const Rows<T> Q(q), K(k), V(v), G(dout), O(out), dQ(dq), dK(dk), dV(dv);
  const T* lp = lse.data_ptr<T>();
  const auto opts = q.options();
  const Tensor akT = a_k.t();
  std::mutex lock;
  at::parallel_for(0, P.B * P.H, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> pbuf(br * nk), dsbuf(br * nk), qa(br * L), dqa(br * L), acc(4 * L), delta(br);
    std::vector<T> doa(values ? br * L : 0), per(values ? br * L : 0);
    Tensor dAK = at::zeros({L, dh}, opts), dAV = values ? at::zeros({L, dh}, opts) : Tensor();
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / P.H, h = bh % P.H;
      for (int64_t i0 = 0; i0 < nq; i0 += br) {
        const int64_t rows = std::min(br, nq - i0);
        const int64_t jmax = P.ncols(i0 + rows - 1);
        const int64_t row0 = bh * nq + i0;
        Tensor dQb = dQ.mat(b, h, i0, rows, dh, opts);
        if (jmax == 0) {
          dQb.zero_();
          continue;
        }
        Tensor Qb = Q.mat(b, h, i0, rows, dh, opts), Gb = G.mat(b, h, i0, rows, dh, opts);
        Tensor Kj = K.mat(b, h, 0, jmax, dh, opts), Vj = V.mat(b, h, 0, jmax, dh, opts);
        Tensor Pm = buffer(pbuf, rows, jmax, opts), dS = buffer(dsbuf, rows, jmax, opts);
        Tensor QA = buffer(qa, rows, L, opts), dQA = buffer(dqa, rows, L, opts);
        at::addmm_out(Pm, Pm, Qb, Kj.t(), 0, P.scale);
        at::addmm_out(QA, QA, Qb, akT, 0, P.scale);
        at::mm_out(dS, Gb, Vj.t());  // dP
        if (values) {
          Tensor DOA = buffer(doa, rows, L, opts);
          at::mm_out(DOA, Gb, a_v->t());
          std::fill(per.begin(), per.begin() + rows * L, T(0));
        }
        std::fill(dqa.begin(), dqa.begin() + rows * L, T(0));
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t i = i0 + r, n = P.ncols(i);
          T* p = pbuf.data() + r * jmax;
          T* ds = dsbuf.data() + r * jmax;
          const T l = lp[row0 + r];
          if (n == 0 || l == kNegInf<T>) {  // no visible key: no gradient
            std::fill(p, p + jmax, T(0));
            std::fill(ds, ds + jmax, T(0));
            continue;
          }
          const T* g = G.row(b, h, i);
          const T* o = O.row(b, h, i);
          T d = 0;
#pragma omp simd reduction(+ : d)
          for (int64_t x = 0; x < dh; ++x) d += g[x] * o[x];
          P.score_row(p, n, b, h, i, qa.data() + r * L);
#pragma omp simd
          for (int64_t j = 0; j < n; ++j) p[j] -= l;
          exp_inplace(p, n);
          std::fill(p + n, p + jmax, T(0));
          if (values) {
            P.scatter_row(per.data() + r * L, p, n, b, i, acc.data());
            for (int64_t c = 0; c < P.C; ++c) {
              const Lab* lab = P.lab_row(b, c, i);
              const T* tc = doa.data() + r * L + P.offs[c];
              for (int64_t j = 0; j < n; ++j) ds[j] += tc[lab[j]];
            }
          }
#pragma omp simd
          for (int64_t j = 0; j < n; ++j) ds[j] = p[j] * (ds[j] - d);
          std::fill(ds + n, ds + jmax, T(0));
          P.scatter_row(dqa.data() + r * L, ds, n, b, i, acc.data());
        }
        at::addmm_out(dQb, dQb, dS, Kj, 0, P.scale);
        at::addmm_out(dQb, dQb, dQA, a_k, 1, P.scale);
        at::addmm_out(dAK, dAK, dQA.t(), Qb, 1, P.scale);
        if (values) at::addmm_out(dAV, dAV, buffer(per, rows, L, opts).t(), Gb, 1, 1);
        Tensor dKj = dK.mat(b, h, 0, jmax, dh, opts), dVj = dV.mat(b, h, 0, jmax, dh, opts);
        at::addmm_out(dKj, dKj, dS.t(), Qb, 1, P.scale);
        at::addmm_out(dVj, dVj, Pm.t(), Gb, 1, 1);
      }
    }
    std::lock_guard<std::mutex> guard(lock);
    dak.add_(dAK);
    if (values) dav.add_(dAV);
  });
}

void check_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& a_k, const Tensor& labels,
                  at::IntArrayRef offsets) {
  TORCH_CHECK(q.device().is_cpu(), "g2gt label attention kernel: CPU tensors expected, got ", q.device());
  TORCH_CHECK(q.scalar_type() == at::kFloat || q.scalar_type() == at::kDouble,
              "g2gt label attention kernel: float32 or float64 expected, got ", q.scalar_type());
  for (const Tensor* t : {&q, &k, &v}) {
    TORCH_CHECK(t->dim() == 4 && t->stride(3) == 1 && t->scalar_type() == q.scalar_type(),
                "g2gt label attention kernel: q, k, v must be 4-d, of one dtype, with unit stride along d_head");
  }
  TORCH_CHECK(a_k.dim() == 2 && a_k.is_contiguous() && a_k.size(1) == q.size(3) && a_k.scalar_type() == q.scalar_type(),
              "g2gt label attention kernel: the label table must be a contiguous [L, d_head] tensor of q's dtype");
  TORCH_CHECK(labels.dim() == 4 && labels.stride(3) == 1 && labels.size(1) == int64_t(offsets.size()),
              "g2gt label attention kernel: labels must be [B|1, C, nq, nk] with unit stride along nk and C offsets");
}

template <typename F>
void dispatch(const Tensor& q, const Tensor& labels, F&& f) {
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "g2gt_label_attention", [&] {
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

std::tuple<Tensor, Tensor> label_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& a_k,
                                         const std::optional<Tensor>& a_v, const Tensor& labels,
                                         at::IntArrayRef offsets, const std::optional<Tensor>& kpm,
                                         const std::optional<Tensor>& allowed, const std::optional<Tensor>& add,
                                         bool causal, int64_t offset, double scale) {
  check_inputs(q, k, v, a_k, labels, offsets);
  Tensor out = at::empty({q.size(0), q.size(2), q.size(1), q.size(3)}, q.options()).transpose(1, 2);
  Tensor lse = at::empty({q.size(0), q.size(1), q.size(2)}, q.options());
  dispatch(q, labels, [&](auto t, auto l) {
    using T = decltype(t);
    using Lab = decltype(l);
    auto P = make_problem<T, Lab>(q, k, a_k, labels, offsets, kpm, allowed, add, causal, offset, scale);
    forward_impl<T, Lab>(P, q, k, v, a_k, a_v, out, lse);
  });
  return {out, lse};
}

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> label_backward(
    const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
    const Tensor& a_k, const std::optional<Tensor>& a_v, const Tensor& labels, at::IntArrayRef offsets,
    const std::optional<Tensor>& kpm, const std::optional<Tensor>& allowed, const std::optional<Tensor>& add,
    bool causal, int64_t offset, double scale) {
  check_inputs(q, k, v, a_k, labels, offsets);
  TORCH_CHECK(dout.sizes() == q.sizes() && dout.stride(3) == 1 && out.stride(3) == 1 &&
                  dout.scalar_type() == q.scalar_type(),
              "g2gt label attention kernel: the output and its gradient must be like q, unit stride along d_head");
  const bool values = a_v.has_value() && a_v->defined();
  Tensor dq = at::empty_like(q, at::MemoryFormat::Contiguous), dk = at::zeros(k.sizes(), k.options());
  Tensor dv = at::zeros(v.sizes(), v.options()), dak = at::zeros_like(a_k);
  Tensor dav = values ? at::zeros_like(*a_v) : at::empty({0}, a_k.options());
  dispatch(q, labels, [&](auto t, auto l) {
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
}

TORCH_LIBRARY_IMPL(g2gt_label_attention, CPU, m) {
  m.impl("forward", &label_forward);
  m.impl("backward", &label_backward);
}
