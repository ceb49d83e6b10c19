// Matrix products of the blocked label-attention kernels (label_attention.cpp), on raw row-major buffers:
//
//   nn(C, A, B):  C[m, n]  = alpha * A[m, k] B[k, n] + beta * C
//   nt(C, A, B):  C[m, n]  = alpha * A[m, k] B[n, k]^T + beta * C     (ATen only)
//   tn(C, A, B):  C[n, d] += alpha * A[m, n]^T B[m, d]
//
// with leading dimensions (row strides) lda, ldb, ldc. A short sentence's products are tens of rows by tens
// of columns, where a library call's dispatch and packing cost as much as the arithmetic: when `own(...)`
// says so (float, AVX-512 or AVX2 + FMA, small products) nn / tn run here in register tiles (4 rows of C by
// up to 4 vectors: 64 columns with AVX-512, 16 with AVX2's 16 registers; the accumulators in registers, B
// read in place); otherwise through ATen's addmm (MKL / oneDNN), whose packed kernels win on large blocks.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#define G2GT_TILES 1
#endif

namespace g2gt_gemm {

using at::Tensor;

template <typename T>
Tensor view(const T* p, int64_t rows, int64_t cols, int64_t ld) {
  return at::from_blob(const_cast<T*>(p), {rows, cols}, {ld, 1},
                       at::TensorOptions().dtype(c10::CppTypeToScalarType<T>()));
}

#if defined(G2GT_TILES)
// One vector of floats: 16 lanes (AVX-512) or 8 (AVX2); `Mask` selects the first lanes of a partial vector.
#if defined(__AVX512F__)
struct Vec {
  using R = __m512;
  using Mask = __mmask16;
  static constexpr int W = 16, NC = 4;  // columns per tile: NC vectors
  static Mask first(int64_t left) {
    return left >= 16 ? Mask(0xFFFF) : left <= 0 ? Mask(0) : Mask((1u << left) - 1);
  }
  static R zero() { return _mm512_setzero_ps(); }
  static R set1(float x) { return _mm512_set1_ps(x); }
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static R load(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float* p, R x, Mask m) { _mm512_mask_storeu_ps(p, m, x); }
  static R fmadd(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
};
#else
struct Vec {
  using R = __m256;
  using Mask = __m256i;
  static constexpr int W = 8, NC = 2;  // 4 x 2 accumulators + operands fit AVX2's 16 registers
  static Mask first(int64_t left) {
    const int n = static_cast<int>(std::clamp<int64_t>(left, 0, 8));
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static R zero() { return _mm256_setzero_ps(); }
  static R set1(float x) { return _mm256_set1_ps(x); }
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static R load(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void store(float* p, R x, Mask m) { _mm256_maskstore_ps(p, m, x); }
  static R fmadd(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
};
#endif

// C[r, 0 : W NC) = alpha * sum_p a(r, p) B[p, :] + beta * C for r < MR (the last vector masked by `last`),
// a(r, p) = A[r * lda + p], or A[p * lda + r] when TA (A transposed).
template <int MR, int NC, bool TA>
inline void tile(int64_t k, float alpha, const float* __restrict A, int64_t lda, const float* __restrict B,
                 int64_t ldb, float beta, float* __restrict C, int64_t ldc, Vec::Mask last) {
  constexpr int W = Vec::W;
  const Vec::Mask full = Vec::first(W);
  Vec::R acc[MR][NC];
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) acc[r][c] = Vec::zero();
  for (int64_t p = 0; p < k; ++p) {
    const float* b = B + p * ldb;
    Vec::R bv[NC];
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) bv[c] = c == NC - 1 ? Vec::load(b + W * c, last) : Vec::load(b + W * c);
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
      const Vec::R a = Vec::set1(TA ? A[p * lda + r] : A[r * lda + p]);
#pragma GCC unroll 4
      for (int c = 0; c < NC; ++c) acc[r][c] = Vec::fmadd(a, bv[c], acc[r][c]);
    }
  }
  const Vec::R va = Vec::set1(alpha), vb = Vec::set1(beta);
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) {
      const Vec::Mask m = c == NC - 1 ? last : full;
      float* dst = C + r * ldc + W * c;
      Vec::R x = Vec::mul(va, acc[r][c]);
      if (beta != 0.0f) x = Vec::fmadd(vb, Vec::load(dst, m), x);
      Vec::store(dst, x, m);
    }
}

template <int MR, bool TA>
inline void tile_cols(int64_t k, float alpha, const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                      float* C, int64_t ldc, int64_t cols) {  // cols in 1 .. W NC
  const int nc = static_cast<int>((cols + Vec::W - 1) / Vec::W);
  const Vec::Mask last = Vec::first(cols - Vec::W * (nc - 1));
  switch (nc) {
    case 1: tile<MR, 1, TA>(k, alpha, A, lda, B, ldb, beta, C, ldc, last); break;
    case 2: tile<MR, 2, TA>(k, alpha, A, lda, B, ldb, beta, C, ldc, last); break;
    case 3: tile<MR, std::min(3, Vec::NC), TA>(k, alpha, A, lda, B, ldb, beta, C, ldc, last); break;
    default: tile<MR, Vec::NC, TA>(k, alpha, A, lda, B, ldb, beta, C, ldc, last); break;
  }
}

// C[m, n] = alpha * op(A) B + beta * C over tiles; row r of op(A) starts at A + r * (TA ? 1 : lda).
template <bool TA>
inline void tiles(int64_t m, int64_t n, int64_t k, float alpha, const float* A, int64_t lda, const float* B,
                  int64_t ldb, float beta, float* C, int64_t ldc) {
  const int64_t step = TA ? 1 : lda, strip = int64_t(Vec::W) * Vec::NC;
  for (int64_t j0 = 0; j0 < n; j0 += strip) {
    const int64_t cols = std::min<int64_t>(strip, n - j0);
    int64_t i = 0;
    for (; i + 4 <= m; i += 4)
      tile_cols<4, TA>(k, alpha, A + i * step, lda, B + j0, ldb, beta, C + i * ldc + j0, ldc, cols);
    for (; i < m; ++i) tile_cols<1, TA>(k, alpha, A + i * step, lda, B + j0, ldb, beta, C + i * ldc + j0, ldc, cols);
  }
}
#endif

// Whether a call's products (at most m x n x k) run in the register tiles; $G2GT_LABEL_GEMM = "tiles" or
// "aten" forces one way (the tests cover both).
template <typename T>
inline bool own(int64_t m, int64_t n, int64_t k) {
#if defined(G2GT_TILES)
  if constexpr (std::is_same_v<T, float>) {
    const char* force = std::getenv("G2GT_LABEL_GEMM");
    if (force && std::strcmp(force, "tiles") == 0) return true;
    if (force && std::strcmp(force, "aten") == 0) return false;
    return m * n * k <= (int64_t(1) << 20);
  }
#endif
  (void)m, (void)n, (void)k;
  return false;
}

template <typename T>
void nn(bool tiled, int64_t m, int64_t n, int64_t k, T alpha, const T* A, int64_t lda, const T* B, int64_t ldb,
        T beta, T* C, int64_t ldc) {
#if defined(G2GT_TILES)
  if constexpr (std::is_same_v<T, float>) {
    if (tiled) {
      tiles<false>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
      return;
    }
  }
#endif
  Tensor c = view(C, m, n, ldc);
  at::addmm_out(c, c, view(A, m, k, lda), view(B, k, n, ldb), beta, alpha);
}

template <typename T>
void nt(int64_t m, int64_t n, int64_t k, T alpha, const T* A, int64_t lda, const T* B, int64_t ldb, T beta, T* C,
        int64_t ldc) {
  Tensor c = view(C, m, n, ldc);
  at::addmm_out(c, c, view(A, m, k, lda), view(B, n, k, ldb).t(), beta, alpha);
}

template <typename T>
void tn(bool tiled, int64_t m, int64_t n, int64_t d, T alpha, const T* A, int64_t lda, const T* B, int64_t ldb,
        T* C, int64_t ldc) {
#if defined(G2GT_TILES)
  if constexpr (std::is_same_v<T, float>) {
    if (tiled) {
      tiles<true>(n, d, m, alpha, A, lda, B, ldb, T(1), C, ldc);
      return;
    }
  }
#endif
  Tensor c = view(C, n, d, ldc);
  at::addmm_out(c, c, view(A, m, n, lda).t(), view(B, m, d, ldb), 1, alpha);
}

}  // namespace g2gt_gemm
