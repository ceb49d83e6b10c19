// Matrix products of the blocked label-attention kernels (label_attention.cpp), on raw row-major buffers:
//
//   nn(C, A, B):  C[m, n]  = alpha * A[m, k] B[k, n] + beta * C
//   nt(C, A, B):  C[m, n]  = alpha * A[m, k] B[n, k]^T + beta * C
//   tn(C, A, B):  C[n, d] += alpha * A[m, n]^T B[m, d]
//
// with leading dimensions (row strides) lda, ldb, ldc; they run as ATen addmm (MKL / oneDNN GEMM) on
// views of the buffers, nothing is copied.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace g2gt_gemm {

using at::Tensor;

template <typename T>
Tensor view(const T* p, int64_t rows, int64_t cols, int64_t ld) {
  return at::from_blob(const_cast<T*>(p), {rows, cols}, {ld, 1},
                       at::TensorOptions().dtype(c10::CppTypeToScalarType<T>()));
}

template <typename T>
void nn(int64_t m, int64_t n, int64_t k, T alpha, const T* A, int64_t lda, const T* B, int64_t ldb, T beta, T* C,
        int64_t ldc) {
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
void tn(int64_t m, int64_t n, int64_t d, T alpha, const T* A, int64_t lda, const T* B, int64_t ldb, T* C,
        int64_t ldc) {
  Tensor c = view(C, n, d, ldc);
  at::addmm_out(c, c, view(A, m, n, lda).t(), view(B, m, d, ldb), 1, alpha);
}

}  // namespace g2gt_gemm
