// Matrix products of the blocked label-attention kernels (label_attention.cpp), on raw row-major buffers:
//
//   nn(C, A, B):  C[m, n]  = alpha * A[m, k] B[k, n] + beta * C
//   nt(C, A, B):  C[m, n]  = alpha * A[m, k] B[n, k]^T + beta * C     (ATen only)
//   tn(C, A, B):  C[n, d] += alpha * A[m, n]^T B[m, d]
//
// with leading dimensions (row strides) lda, ldb, ldc. A short sentence's products are tens of rows by tens
// of columns, where a library call's dispatch and packing cost as much as the arithmetic: when `own(...)`
// says so (float, AVX-512, small products) nn / tn run here in register tiles (4 rows of C by up to 64
// columns, the accumulators in registers, B read in place); otherwise through ATen's addmm (MKL / oneDNN),
// whose packed kernels win on large blocks.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace g2gt_gemm {

using at::Tensor;

template <typename T>
Tensor view(const T* p, int64_t rows, int64_t cols, int64_t ld) {
  return at::from_blob(const_cast<T*>(p), {rows, cols}, {ld, 1},
                       at::TensorOptions().dtype(c10::CppTypeToScalarType<T>()));
}

#if defined(__AVX512F__)
inline __mmask16 lanes(int64_t left) {
  return left >= 16 ? __mmask16(0xFFFF) : left <= 0 ? __mmask16(0) : __mmask16((1u << left) - 1);
}

// C[r, 0 : 16 NC) = alpha * sum_p a(r, p) B[p, :] + beta * C for r < MR (the last vector masked by `last`),
// a(r, p) = A[r * lda + p], or A[p * lda + r] when TA (A transposed).
template <int MR, int NC, bool TA>
inline void tile(int64_t k, float alpha, const float* __restrict A, int64_t lda, const float* __restrict B,
                 int64_t ldb, float beta, float* __restrict C, int64_t ldc, __mmask16 last) {
  __m512 acc[MR][NC];
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) acc[r][c] = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    const float* b = B + p * ldb;
    __m512 bv[NC];
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c)
      bv[c] = c == NC - 1 ? _mm512_maskz_loadu_ps(last, b + 16 * c) : _mm512_loadu_ps(b + 16 * c);
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
      const __m512 a = _mm512_set1_ps(TA ? A[p * lda + r] : A[r * lda + p]);
#pragma GCC unroll 4
      for (int c = 0; c < NC; ++c) acc[r][c] = _mm512_fmadd_ps(a, bv[c], acc[r][c]);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) {
      const __mmask16 m = c == NC - 1 ? last : __mmask16(0xFFFF);
      float* dst = C + r * ldc + 16 * c;
      __m512 x = _mm512_mul_ps(va, acc[r][c]);
      if (beta != 0.0f) x = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m, dst), x);
      _mm512_mask_storeu_ps(dst, m, x);
    }
}

template <int MR, bool TA>
inline void tile_cols(int64_t k, float alpha, const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                      float* C, int64_t ldc, int64_t cols) {  // cols in 1 .. 64
  const int nc = static_cast<int>((cols + 15) / 16);
  const __mmask16 last = lanes(cols - 16 * (nc - 1));
  switch (nc) {
    case 1: tile<MR, 1, TA>(k, alpha, A, lda, B, ldb, beta, C, ldc, last); break;
    case 2: tile<MR, 2, TA>(k, alpha, A, lda, B, ldb, beta, C, ldc, last); break;
    case 3: tile<MR, 3, TA>(k, alpha, A, lda, B, ldb, beta, C, ldc, last); break;
    default: tile<MR, 4, TA>(k, alpha, A, lda, B, ldb, beta, C, ldc, last); break;
  }
}

// C[m, n] = alpha * op(A) B + beta * C over tiles; row r of op(A) starts at A + r * (TA ? 1 : lda).
template <bool TA>
inline void tiles(int64_t m, int64_t n, int64_t k, float alpha, const float* A, int64_t lda, const float* B,
                  int64_t ldb, float beta, float* C, int64_t ldc) {
  const int64_t step = TA ? 1 : lda;
  for (int64_t j0 = 0; j0 < n; j0 += 64) {
    const int64_t cols = std::min<int64_t>(64, n - j0);
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) tile_cols<4, TA>(k, alpha, A + i * step, lda, B + j0, ldb, beta, C + i * ldc + j0, ldc, cols);
    for (; i < m; ++i) tile_cols<1, TA>(k, alpha, A + i * step, lda, B + j0, ldb, beta, C + i * ldc + j0, ldc, cols);
  }
}
#endif

// Whether a call's products (at most m x n x k) run in the register tiles; $G2GT_LABEL_GEMM = "tiles" or
// "aten" forces one way (the tests cover both).
template <typename T>
inline bool own(int64_t m, int64_t n, int64_t k) {
#if defined(__AVX512F__)
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
#if defined(__AVX512F__)
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
#if defined(__AVX512F__)
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
