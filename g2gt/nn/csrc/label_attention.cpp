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
#include <type_traits>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

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

// s[0:n) += t[l[j]]: the label gather. With AVX-512, uint8 labels and a table of at most 128 entries,
// 16 lanes at a time by in-register permutes (vpermi2ps over 32-entry slices of the table, the slice
// picked by the label's bits 5-6); otherwise one lane at a time.
template <typename T, typename Lab>
inline void gather_add(T* s, int64_t n, const T* t, int64_t size, const Lab* l) {
  int64_t j = 0;
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float> && std::is_same_v<Lab, uint8_t>) {
    if (size <= 128) {
      alignas(64) float tab[128] = {0};
      std::memcpy(tab, t, size * sizeof(float));
      __m512 lo[4], hi[4];
      for (int c = 0; c < 4; ++c) {
        lo[c] = _mm512_load_ps(tab + 32 * c);
        hi[c] = _mm512_load_ps(tab + 32 * c + 16);
      }
      const int slices = static_cast<int>((size + 31) / 32);
      for (; j + 16 <= n; j += 16) {
        const __m512i idx = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(l + j)));
        __m512 g = _mm512_permutex2var_ps(lo[0], idx, hi[0]);
        if (slices > 1) {
          const __m512i slice = _mm512_srli_epi32(idx, 5);
          for (int c = 1; c < slices; ++c) {
            const __mmask16 m = _mm512_cmpeq_epi32_mask(slice, _mm512_set1_epi32(c));
            g = _mm512_mask_blend_ps(m, g, _mm512_permutex2var_ps(lo[c], idx, hi[c]));
          }
        }
        _mm512_storeu_ps(s + j, _mm512_add_ps(_mm512_loadu_ps(s + j), g));
      }
    }
  }
#endif
  for (; j < n; ++j) s[j] += t[l[j]];
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
  int64_t size(int64_t c) const { return (c + 1 < C ? offs[c + 1] : L) - offs[c]; }
  const Lab* lab_row(int64_t b, int64_t c, int64_t i) const { return lab + b * lab_sb + c * lab_sc + i * lab_si; }

  // s[0:n) (scaled q.k) += label bias + add; -inf where masked.
  void score_row(T* s, int64_t n, int64_t b, int64_t h, int64_t i, const T* qa_row) const {
    for (int64_t c = 0; c < C; ++c) {
      const Lab* l = lab_row(b, c, i);
      gather_add(s, n, qa_row + offs[c], size(c), l);
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

  // dst[r, 0:L) += sum_c sum_j [off_c + l^c_ij = l] src[r, j] for the block's rows r (query i0 + r);
  // both with row stride ld (they are the label and key columns of one [rows, L + nk] buffer). Four rows are interleaved: a run of equal labels in one
  // row (chain graphs) is a chain of dependent read-modify-writes, and four independent chains overlap.
  void scatter_block(T* dst, const T* src, int64_t ld, int64_t rows, int64_t ncol, int64_t b, int64_t i0) const {
    for (int64_t c = 0; c < C; ++c) {
      int64_t r = 0;
      for (; r + 4 <= rows; r += 4) {
        const Lab* __restrict l0 = lab_row(b, c, i0 + r);
        const Lab* __restrict l1 = lab_row(b, c, i0 + r + 1);
        const Lab* __restrict l2 = lab_row(b, c, i0 + r + 2);
        const Lab* __restrict l3 = lab_row(b, c, i0 + r + 3);
        const T* __restrict s0 = src + r * ld;
        T* d0 = dst + r * ld + offs[c];
        for (int64_t j = 0; j < ncol; ++j) {
          d0[l0[j]] += s0[j];
          d0[ld + l1[j]] += s0[ld + j];
          d0[2 * ld + l2[j]] += s0[2 * ld + j];
          d0[3 * ld + l3[j]] += s0[3 * ld + j];
        }
      }
      for (; r < rows; ++r) {
        const Lab* l = lab_row(b, c, i0 + r);
        const T* sr = src + r * ld;
        T* d = dst + r * ld + offs[c];
        for (int64_t j = 0; j < ncol; ++j) d[l[j]] += sr[j];
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

// [a; m_bh]: the label table a [L, dh] on top of the rows of m for one (b, h), as one contiguous
// [L + n, dh] matrix, so that one product covers keys (values) and labels: with S_ext = Q [a_K; K]^T the
// first L columns are qa and the rest the scores; [per | P] [a_V; V] = P V + per a_V.
template <typename T>
struct Stacked {
  std::vector<T> buf;
  int64_t L, n, dh;
  Stacked(const Tensor& a, int64_t n_, bool used) : L(a.size(0)), n(n_), dh(a.size(1)) {
    if (!used) return;
    buf.resize((L + n) * dh);
    std::memcpy(buf.data(), a.data_ptr<T>(), L * dh * sizeof(T));
  }
  void load(const Rows<T>& m, int64_t b, int64_t h, int64_t rows) {
    for (int64_t j = 0; j < rows; ++j) std::memcpy(buf.data() + (L + j) * dh, m.row(b, h, j), dh * sizeof(T));
  }
  Tensor mat(int64_t rows, const at::TensorOptions& o) { return at::from_blob(buf.data(), {L + rows, dh}, o); }
};

template <typename T, typename Lab>
void forward_impl(const Problem<T, Lab>& P, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& a_k,
                  const std::optional<Tensor>& a_v, Tensor& out, Tensor& lse) {
  const int64_t nq = P.nq, nk = P.nk, dh = P.dh, L = P.L, H = P.H;
  const int64_t br = block_rows(nq, nk);
  const int64_t nblk = (nq + br - 1) / br;
  const Rows<T> Q(q), K(k), V(v), O(out);
  T* lp = lse.data_ptr<T>();
  const bool values = a_v.has_value() && a_v->defined();
  const auto opts = q.options();
  at::parallel_for(0, P.B * H * nblk, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> sbuf(br * (L + nk));
    Stacked<T> KA(a_k, nk, true), VA(values ? *a_v : a_k, nk, values);
    int64_t loaded = -1;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t bh = task / nblk, i0 = (task % nblk) * br, b = bh / H, h = bh % H;
      const int64_t rows = std::min(br, nq - i0);
      const int64_t jmax = P.ncols(i0 + rows - 1), w = L + jmax;  // w: row width of [qa | S]
      Tensor Ob = O.mat(b, h, i0, rows, dh, opts);
      if (jmax == 0) {
        Ob.zero_();
        std::fill(lp + bh * nq + i0, lp + bh * nq + i0 + rows, kNegInf<T>);
        continue;
      }
      if (bh != loaded) {
        KA.load(K, b, h, nk);
        if (values) VA.load(V, b, h, nk);
        loaded = bh;
      }
      Tensor S = at::from_blob(sbuf.data(), {rows, w}, opts);
      at::addmm_out(S, S, Q.mat(b, h, i0, rows, dh, opts), KA.mat(jmax, opts).t(), 0, P.scale);  // [qa | S]
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r, n = P.ncols(i);
        T* s = sbuf.data() + r * w + L;
        P.score_row(s, n, b, h, i, s - L);
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
      }
      if (values) {  // [per | P] [a_V; V]
        for (int64_t r = 0; r < rows; ++r) std::fill(sbuf.data() + r * w, sbuf.data() + r * w + L, T(0));
        P.scatter_block(sbuf.data(), sbuf.data() + L, w, rows, jmax, b, i0);
        at::mm_out(Ob, S, VA.mat(jmax, opts));
      } else {
        at::mm_out(Ob, S.narrow(1, L, jmax), V.mat(b, h, 0, jmax, dh, opts));
      }
    }
  });
}

template <typename T, typename Lab>
void backward_impl(const Problem<T, Lab>& P, const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                   const Tensor& out, const Tensor& lse, const Tensor& a_k, const std::optional<Tensor>& a_v,
                   Tensor& dq, Tensor& dk_ext, Tensor& dv_ext) {
  const int64_t nq = P.nq, nk = P.nk, dh = P.dh, L = P.L;
  const int64_t br = block_rows(nq, nk);
  const bool values = a_v.has_value() && a_v->defined();
  const Rows<T> Q(q), K(k), V(v), G(dout), O(out), dQ(dq), dKA(dk_ext), dVA(dv_ext);
  const T* lp = lse.data_ptr<T>();
  const auto opts = q.options();
  at::parallel_for(0, P.B * P.H, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> pbuf(br * (L + nk)), dsbuf(br * (L + nk)), delta(br);
    Stacked<T> KA(a_k, nk, true), VA(values ? *a_v : a_k, nk, values);
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / P.H, h = bh % P.H;
      KA.load(K, b, h, nk);
      if (values) VA.load(V, b, h, nk);
      for (int64_t i0 = 0; i0 < nq; i0 += br) {
        const int64_t rows = std::min(br, nq - i0);
        const int64_t jmax = P.ncols(i0 + rows - 1), w = L + jmax;
        const int64_t row0 = bh * nq + i0;
        Tensor dQb = dQ.mat(b, h, i0, rows, dh, opts);
        if (jmax == 0) {
          dQb.zero_();
          continue;
        }
        Tensor Qb = Q.mat(b, h, i0, rows, dh, opts), Gb = G.mat(b, h, i0, rows, dh, opts);
        Tensor Pm = at::from_blob(pbuf.data(), {rows, w}, opts), dS = at::from_blob(dsbuf.data(), {rows, w}, opts);
        at::addmm_out(Pm, Pm, Qb, KA.mat(jmax, opts).t(), 0, P.scale);  // [qa | S]
        if (values) {
          at::mm_out(dS, Gb, VA.mat(jmax, opts).t());  // [doa | dP]
        } else {
          Tensor dP = dS.narrow(1, L, jmax);
          at::mm_out(dP, Gb, V.mat(b, h, 0, jmax, dh, opts).t());
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
          T* p = pbuf.data() + r * w + L;
          T* ds = dsbuf.data() + r * w + L;
          const T l = lp[row0 + r];
          if (n == 0 || l == kNegInf<T>) {  // no visible key: no gradient
            std::fill(p, p + jmax, T(0));
            std::fill(ds, ds + jmax, T(0));
            continue;
          }
          P.score_row(p, n, b, h, i, p - L);
#pragma omp simd
          for (int64_t j = 0; j < n; ++j) p[j] -= l;
          exp_inplace(p, n);
          std::fill(p + n, p + jmax, T(0));
          if (values) {
            for (int64_t c = 0; c < P.C; ++c) gather_add(ds, n, ds - L + P.offs[c], P.size(c), P.lab_row(b, c, i));
          }
          const T d = delta[r];
#pragma omp simd
          for (int64_t j = 0; j < n; ++j) ds[j] = p[j] * (ds[j] - d);
          std::fill(ds + n, ds + jmax, T(0));
        }
        // [dqa | dS] and [per | P]: the label columns take the scatters (entries past a row's keys are 0)
        for (int64_t r = 0; r < rows; ++r) std::fill(dsbuf.data() + r * w, dsbuf.data() + r * w + L, T(0));
        P.scatter_block(dsbuf.data(), dsbuf.data() + L, w, rows, jmax, b, i0);
        if (values) {
          for (int64_t r = 0; r < rows; ++r) std::fill(pbuf.data() + r * w, pbuf.data() + r * w + L, T(0));
          P.scatter_block(pbuf.data(), pbuf.data() + L, w, rows, jmax, b, i0);
        }
        at::addmm_out(dQb, dQb, dS, KA.mat(jmax, opts), 0, P.scale);  // dS k + dqa a_K
        Tensor dKj = dKA.mat(b, h, 0, w, dh, opts);  // [da_K part; dk]
        at::addmm_out(dKj, dKj, dS.t(), Qb, 1, P.scale);
        if (values) {
          Tensor dVj = dVA.mat(b, h, 0, w, dh, opts);  // [da_V part; dv]
          at::addmm_out(dVj, dVj, Pm.t(), Gb, 1, 1);
        } else {
          Tensor dVj = dVA.mat(b, h, L, jmax, dh, opts);
          at::addmm_out(dVj, dVj, Pm.narrow(1, L, jmax).t(), Gb, 1, 1);
        }
      }
    }
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
  const int64_t B = q.size(0), H = q.size(1), nk = k.size(2), L = a_k.size(0), dh = q.size(3);
  // dk / dv with the label-table gradients of each (b, h) on top: [B, H, L + nk, dh]
  Tensor dq = at::empty_like(q, at::MemoryFormat::Contiguous);
  Tensor dk_ext = at::zeros({B, H, L + nk, dh}, q.options()), dv_ext = at::zeros({B, H, L + nk, dh}, q.options());
  dispatch(q, labels, [&](auto t, auto l) {
    using T = decltype(t);
    using Lab = decltype(l);
    auto P = make_problem<T, Lab>(q, k, a_k, labels, offsets, kpm, allowed, add, causal, offset, scale);
    backward_impl<T, Lab>(P, dout, q, k, v, out, lse, a_k, a_v, dq, dk_ext, dv_ext);
  });
  Tensor dak = dk_ext.narrow(2, 0, L).sum({0, 1});
  Tensor dav = values ? dv_ext.narrow(2, 0, L).sum({0, 1}) : at::empty({0}, a_k.options());
  return {dq, dk_ext.narrow(2, L, nk), dv_ext.narrow(2, L, nk), dak, dav};
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
