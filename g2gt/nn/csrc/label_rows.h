// Row passes of the blocked label-attention kernels (label_attention.cpp): the exponential, the label
// gather and scatter, and the masks of one (batch, head) row. See label_attention.cpp for the maths.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace g2gt_rows {

using at::Tensor;

// exp(x) for x <= ~0 (a score minus its row maximum or log-sum-exp); exactly 0 for x < -87 (and -inf), NaN
// stays NaN. Cephes' expf polynomial (relative error about 2e-7), written once per vector width: 16 lanes
// with AVX-512, 8 with AVX2 + FMA (compilers leave the scalar form of this loop unvectorised there), one
// lane otherwise. exp_shift(x, n, m) sets x[j] = exp(x[j] - m) and returns the sum of the results.
namespace expf_poly {
constexpr float kLo = -87.0f, kLog2e = 1.44269504088896341f, kC1 = 0.693359375f, kC2 = -2.12194440e-4f;
constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f, kP2 = 8.3334519073e-3f, kP3 = 4.1665795894e-2f,
                kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;
}  // namespace expf_poly

inline float exp_one(float v) {
  using namespace expf_poly;
  const float c = v < kLo ? kLo : (v > 0.0f ? 0.0f : v);
  const float fx = (c * kLog2e + 12582912.0f) - 12582912.0f;  // round to nearest (1.5 * 2^23)
  const float r = (c - fx * kC1) - fx * kC2;
  float p = kP0;
  p = p * r + kP1;
  p = p * r + kP2;
  p = p * r + kP3;
  p = p * r + kP4;
  p = p * r + kP5;
  const float y = p * r * r + r + 1.0f;
  const float two_n = __builtin_bit_cast(float, (static_cast<int32_t>(fx) + 127) << 23);
  return v < kLo ? 0.0f : y * two_n;
}

#if defined(__AVX512F__)
inline __m512 exp16(__m512 v) {
  using namespace expf_poly;
  const __m512 c = _mm512_min_ps(_mm512_set1_ps(0.0f), _mm512_max_ps(_mm512_set1_ps(kLo), v));  // NaN stays
  const __m512 fx = _mm512_roundscale_ps(_mm512_mul_ps(c, _mm512_set1_ps(kLog2e)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(fx, _mm512_set1_ps(kC1), c);
  r = _mm512_fnmadd_ps(fx, _mm512_set1_ps(kC2), r);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(kP0), r, _mm512_set1_ps(kP1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP5));
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  const __m512 two_n = _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(fx), _mm512_set1_epi32(127)), 23));
  const __mmask16 under = _mm512_cmp_ps_mask(v, _mm512_set1_ps(kLo), _CMP_LT_OQ);
  return _mm512_maskz_mul_ps(static_cast<__mmask16>(~under), y, two_n);
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
inline __m256 exp8(__m256 v) {
  using namespace expf_poly;
  const __m256 c = _mm256_min_ps(_mm256_set1_ps(0.0f), _mm256_max_ps(_mm256_set1_ps(kLo), v));  // NaN stays
  const __m256 fx = _mm256_round_ps(_mm256_mul_ps(c, _mm256_set1_ps(kLog2e)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(kC1), c);
  r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(kC2), r);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(kP0), r, _mm256_set1_ps(kP1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP5));
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  const __m256 two_n = _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23));
  const __m256 under = _mm256_cmp_ps(v, _mm256_set1_ps(kLo), _CMP_LT_OQ);
  return _mm256_andnot_ps(under, _mm256_mul_ps(y, two_n));
}
#endif

inline float exp_shift(float* x, int64_t n, float m) {
  int64_t j = 0;
  float sum = 0.0f;
#if defined(__AVX512F__)
  const __m512 mv = _mm512_set1_ps(m);
  __m512 acc = _mm512_setzero_ps();
  for (; j + 16 <= n; j += 16) {
    const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j), mv));
    _mm512_storeu_ps(x + j, e);
    acc = _mm512_add_ps(acc, e);
  }
  if (j < n) {
    const __mmask16 k = static_cast<__mmask16>((1u << (n - j)) - 1);
    const __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + j), mv));
    _mm512_mask_storeu_ps(x + j, k, e);
    acc = _mm512_add_ps(acc, _mm512_maskz_mov_ps(k, e));
    j = n;
  }
  sum = _mm512_reduce_add_ps(acc);
#elif defined(__AVX2__) && defined(__FMA__)
  const __m256 mv = _mm256_set1_ps(m);
  __m256 acc = _mm256_setzero_ps();
  for (; j + 8 <= n; j += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), mv));
    _mm256_storeu_ps(x + j, e);
    acc = _mm256_add_ps(acc, e);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  for (float l : lanes) sum += l;
#endif
  for (; j < n; ++j) {
    x[j] = exp_one(x[j] - m);
    sum += x[j];
  }
  return sum;
}

inline double exp_shift(double* x, int64_t n, double m) {
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    x[j] = std::exp(x[j] - m);
    sum += x[j];
  }
  return sum;
}

// max(x[0:n)), -inf for n = 0 (NaN entries are skipped).
template <typename T>
inline T row_max(const T* x, int64_t n) {
  T m = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < n; ++j) m = x[j] > m ? x[j] : m;
  return m;
}

#if defined(__AVX2__) && !defined(__AVX512F__)
// Whether AVX2's gather instruction beats one load per lane on this CPU: it is about twice as fast on some
// (recent AMD and Intel cores) and several times slower on others (e.g. under the microcode mitigation for
// "gather data sampling"), so both are timed once per process on a 4096-entry row (well under a
// millisecond). Both give the same sums. $G2GT_LABEL_GATHER = "vector" or "scalar" decides instead.
inline bool fast_gather() {
  static const bool fast = [] {
    if (const char* e = std::getenv("G2GT_LABEL_GATHER")) return std::strcmp(e, "vector") == 0;
    constexpr int n = 4096;
    std::vector<float> table(128), s(n, 0.0f);
    std::vector<uint8_t> l(n);
    for (int j = 0; j < n; ++j) l[j] = static_cast<uint8_t>((j * 37 + j / 7) & 127);
    for (int x = 0; x < 128; ++x) table[x] = 1e-3f * static_cast<float>(x);
    double best[2] = {1e30, 1e30};
    for (int round = 0; round < 3; ++round)
      for (int way = 0; way < 2; ++way) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int rep = 0; rep < 8; ++rep) {
          int j = 0;
          if (way == 1)
            for (; j + 8 <= n; j += 8) {
              const __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(&l[j])));
              _mm256_storeu_ps(&s[j], _mm256_add_ps(_mm256_loadu_ps(&s[j]),
                                                    _mm256_i32gather_ps(table.data(), idx, 4)));
            }
          for (; j < n; ++j) s[j] += table[l[j]];
        }
        const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best[way] = std::min(best[way], dt);
      }
    static volatile float sink;
    sink = s[n / 2];  // keeps the timed loops
    return best[1] < 0.9 * best[0];
  }();
  return fast;
}
#endif

// s[0:n) += t[l[j]] (t holds `size` entries): the label gather. With AVX-512, uint8 labels and a table of
// at most 128 entries, 16 lanes at a time by in-register permutes (vpermi2ps over 32-entry slices of the
// table, the slice picked by the label's bits 5-6); with AVX2, 8 lanes by the gather instruction where that
// is the faster way on this CPU (fast_gather); otherwise one lane at a time.
template <typename T, typename Lab>
inline void gather_add(T* s, int64_t n, const T* t, int64_t size, const Lab* l) {
  int64_t j = 0;
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float> && std::is_same_v<Lab, uint8_t>) {
    if (size <= 128 && n >= 16) {
      const int slices = static_cast<int>((size + 31) / 32);
      __m512 lo[4], hi[4];
      for (int c = 0; c < slices; ++c) {  // the table, read in place (masked past its end)
        const int64_t left = size - 32 * c;
        lo[c] = _mm512_maskz_loadu_ps(left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1), t + 32 * c);
        hi[c] = left <= 16 ? _mm512_setzero_ps()
                           : _mm512_maskz_loadu_ps(left >= 32 ? __mmask16(0xFFFF) : __mmask16((1u << (left - 16)) - 1),
                                                   t + 32 * c + 16);
      }
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
#elif defined(__AVX2__)
  if constexpr (std::is_same_v<T, float> && std::is_same_v<Lab, uint8_t>) {
    if (n >= 8 && fast_gather()) {
      for (; j + 8 <= n; j += 8) {
        const __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(l + j)));
        _mm256_storeu_ps(s + j, _mm256_add_ps(_mm256_loadu_ps(s + j), _mm256_i32gather_ps(t, idx, 4)));
      }
    }
  }
#endif
  for (; j < n; ++j) s[j] += t[l[j]];
}

// d[l[j]] += s[j] for j < n: the label scatter of one row. Rows of real label matrices are mostly runs of
// one or two labels (clipped relative positions: the far-left and far-right labels; a tree channel: "no
// edge"), and a run is a chain of dependent read-modify-writes of one entry of d. With AVX2 / AVX-512 the
// two most likely run labels (those of the row's first and last key, else its middle one) are summed in
// vector registers by comparison; the other entries go one at a time (all of a vector's lanes when most of
// them are others, as with uniformly random labels, else lane by lane over the set bits).
template <typename T, typename Lab>
inline void scatter_row(T* __restrict d, const T* __restrict s, const Lab* __restrict l, int64_t n) {
  int64_t j = 0;
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
  if constexpr (std::is_same_v<T, float> && std::is_same_v<Lab, uint8_t>) {
    if (n >= 16) {
      const int d0 = l[0], d1 = l[n - 1] != d0 ? l[n - 1] : (l[n / 2] != d0 ? l[n / 2] : -1);
#if defined(__AVX512F__)
      constexpr int W = 16;
      const __m512i v0 = _mm512_set1_epi32(d0), v1 = _mm512_set1_epi32(d1);
      __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
      for (; j + W <= n; j += W) {
        const __m512i idx = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(l + j)));
        const __m512 v = _mm512_loadu_ps(s + j);
        const __mmask16 m0 = _mm512_cmpeq_epi32_mask(idx, v0), m1 = _mm512_cmpeq_epi32_mask(idx, v1);
        a0 = _mm512_mask_add_ps(a0, m0, a0, v);
        a1 = _mm512_mask_add_ps(a1, m1, a1, v);
        unsigned rest = static_cast<unsigned>(static_cast<__mmask16>(~(m0 | m1)));
#else
      constexpr int W = 8;
      const __m256i v0 = _mm256_set1_epi32(d0), v1 = _mm256_set1_epi32(d1);
      __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
      for (; j + W <= n; j += W) {
        const __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(l + j)));
        const __m256 v = _mm256_loadu_ps(s + j);
        const __m256 m0 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(idx, v0));
        const __m256 m1 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(idx, v1));
        a0 = _mm256_add_ps(a0, _mm256_and_ps(m0, v));
        a1 = _mm256_add_ps(a1, _mm256_and_ps(m1, v));
        unsigned rest = ~static_cast<unsigned>(_mm256_movemask_ps(_mm256_or_ps(m0, m1))) & 0xFFu;
#endif
        if (__builtin_popcount(rest) >= W - W / 4) {  // mostly other labels: all lanes, the run lanes as 0
          alignas(64) T z[W];
#if defined(__AVX512F__)
          _mm512_store_ps(z, _mm512_maskz_mov_ps(static_cast<__mmask16>(rest), v));
#else
          _mm256_store_ps(z, _mm256_andnot_ps(_mm256_or_ps(m0, m1), v));
#endif
          for (int t = 0; t < W; ++t) d[l[j + t]] += z[t];
        } else {
          for (; rest; rest &= rest - 1) {
            const int t = __builtin_ctz(rest);
            d[l[j + t]] += s[j + t];
          }
        }
      }
      T rest0 = 0, rest1 = 0;
      for (; j < n; ++j) {  // the tail: run labels into the register sums too
        const int x = l[j];
        if (x == d0) rest0 += s[j];
        else if (x == d1) rest1 += s[j];
        else d[x] += s[j];
      }
#if defined(__AVX512F__)
      d[d0] += _mm512_reduce_add_ps(a0) + rest0;
      if (d1 >= 0) d[d1] += _mm512_reduce_add_ps(a1) + rest1;
#else
      alignas(32) float h0[8], h1[8];
      _mm256_store_ps(h0, a0);
      _mm256_store_ps(h1, a1);
      for (int t = 0; t < 8; ++t) rest0 += h0[t], rest1 += h1[t];
      d[d0] += rest0;
      if (d1 >= 0) d[d1] += rest1;
#endif
      return;
    }
  }
#endif
  for (; j < n; ++j) d[l[j]] += s[j];
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

// The label ids of one block of query rows: channel c of block row r is row(c, r)[0:ncol), ids into a table
// whose channel c starts at offs[c] and holds sizes[c] entries. Either the call's labels as given, or a
// block's renumbered copy (see LabelSet in label_blocks.h), whose channels share one table.
template <typename Lab>
struct BlockLabels {
  const Lab* base;
  int64_t sc, sr, C;
  const int64_t* offs;
  const int64_t* sizes;
  const Lab* row(int64_t c, int64_t r) const { return base + c * sc + r * sr; }
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
  std::vector<int64_t> offs, sizes;
  const bool* kpm = nullptr;
  int64_t kpm_sb = 0;
  MaskView<bool> allowed;
  MaskView<T> add;

  // visible key columns of row i: [0, ncols(i))
  int64_t ncols(int64_t i) const { return causal ? std::clamp<int64_t>(i + offset + 1, 0, nk) : nk; }
  const Lab* lab_row(int64_t b, int64_t c, int64_t i) const { return lab + b * lab_sb + c * lab_sc + i * lab_si; }
  BlockLabels<Lab> direct(int64_t b, int64_t i0) const {
    return {lab_row(b, 0, i0), lab_sc, lab_si, C, offs.data(), sizes.data()};
  }

  // s[0:n) (scaled q.k of query i = block row r) += label bias + add; -inf where masked.
  template <typename BL>
  void score_row(T* s, int64_t n, int64_t b, int64_t h, int64_t i, const T* qa_row, const BL& bl, int64_t r) const {
    for (int64_t c = 0; c < C; ++c) gather_add(s, n, qa_row + bl.offs[c], bl.sizes[c], bl.row(c, r));
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

  // dst[r, l] += sum_c sum_j [offs_c + id^c_rj = l] src[r, j] for the block's rows r, both with row stride ld
  // (the label and key columns of one [rows, labels + keys] buffer). Four rows are interleaved: a run of
  // equal labels in one row (chain graphs) is a chain of dependent read-modify-writes, and four
  // independent chains overlap.
  template <typename BL>
  void scatter_block(T* dst, const T* src, int64_t ld, int64_t rows, int64_t ncol, const BL& bl) const {
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
    if constexpr (std::is_same_v<T, float> && std::is_same_v<decltype(bl.base), const uint8_t*>) {
      if (ncol >= 16) {
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < C; ++c) scatter_row(dst + r * ld + bl.offs[c], src + r * ld, bl.row(c, r), ncol);
        return;
      }
    }
#endif
    for (int64_t c = 0; c < C; ++c) {
      int64_t r = 0;
      for (; r + 4 <= rows; r += 4) {
        const auto* __restrict l0 = bl.row(c, r);
        const auto* __restrict l1 = bl.row(c, r + 1);
        const auto* __restrict l2 = bl.row(c, r + 2);
        const auto* __restrict l3 = bl.row(c, r + 3);
        const T* __restrict s0 = src + r * ld;
        T* d0 = dst + r * ld + bl.offs[c];
        for (int64_t j = 0; j < ncol; ++j) {
          d0[l0[j]] += s0[j];
          d0[ld + l1[j]] += s0[ld + j];
          d0[2 * ld + l2[j]] += s0[2 * ld + j];
          d0[3 * ld + l3[j]] += s0[3 * ld + j];
        }
      }
      for (; r < rows; ++r) {
        const auto* l = bl.row(c, r);
        const T* sr = src + r * ld;
        T* d = dst + r * ld + bl.offs[c];
        for (int64_t j = 0; j < ncol; ++j) d[l[j]] += sr[j];
      }
    }
  }
};

}  // namespace g2gt_rows
