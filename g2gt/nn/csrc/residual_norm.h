// Residual add + LayerNorm for inference (the pre-LN encoder's step between two sublayers), one pass over the
// rows. For each row of d values (x and y float32 or bfloat16, w and b float32):
//
//   s = x + y                      (rounded to the input dtype: the residual stream the unfused code keeps)
//   mu = mean(s),  var = mean((s - mu)^2)                       (float32, two passes over the row)
//   out = (s - mu) / sqrt(var + eps) * w + b                    (rounded to the input dtype)
//
// Without y, s = x and only out is written (the op returns an empty tensor in place of s). The same maths as torch's x + y followed by layer_norm (float32
// accumulation of bfloat16 inputs, round-to-nearest-even bfloat16 results); only the order of the float32
// sums differs. ATen's kernels for this step run as two passes with per-row statistics on their own; for the
// narrow rows of g2gt's encoders (d = 64 ... 512) one fused pass is several times faster. AVX-512 (F + BW +
// VL) code where the compiler targets it, plain loops elsewhere.
#pragma once

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include <immintrin.h>
#define G2GT_NORM_AVX512 1
#endif

namespace g2gt_norm {

using at::Tensor;

inline float widen(float v) { return v; }
inline float widen(at::BFloat16 v) { return static_cast<float>(v); }
template <typename In>
inline In narrow(float f) { return static_cast<In>(f); }  // BFloat16: round to nearest even, NaN kept

#if G2GT_NORM_AVX512
// 16 lanes (those set in `m`) of In <-> float32; rounded(v): v rounded to In and widened back
inline __m512 load16(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
inline __m512 load16(const at::BFloat16* p, __mmask16 m) {
  const __m256i h = _mm256_maskz_loadu_epi16(m, p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
inline __m256i to_bf16(__m512 v) {  // round to nearest even; NaN stays NaN
#if defined(__AVX512BF16__)
  return (__m256i)_mm512_cvtneps_pbh(v);
#else
  const __m512i u = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
  r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), _mm512_set1_epi32(0x7FC0));
  return _mm512_cvtepi32_epi16(r);
#endif
}
inline void store16(float* p, __m512 v, __mmask16 m) { _mm512_mask_storeu_ps(p, m, v); }
inline void store16(at::BFloat16* p, __m512 v, __mmask16 m) { _mm256_mask_storeu_epi16(p, m, to_bf16(v)); }
inline __m512 rounded(float*, __m512 v) { return v; }
inline __m512 rounded(at::BFloat16*, __m512 v) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(to_bf16(v)), 16));
}
inline __mmask16 lanes(int64_t left) { return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1u); }

// up to 16 rows at once (their statistics as vectors: one division and square root for all of them);
// v: 16 * dp floats of scratch, dp = d rounded up to whole vectors
template <typename In>
inline void rows(const In* x, const In* y, In* s_out, In* out, const float* w, const float* b, float* v,
                 int64_t count, int64_t d, float eps) {
  const int64_t dp = (d + 15) / 16 * 16;
  alignas(64) float stat[16] = {0};
  for (int64_t r = 0; r < count; ++r) {
    __m512 acc = _mm512_setzero_ps();
    for (int64_t j = 0; j < d; j += 16) {
      const __mmask16 m = lanes(d - j);
      __m512 s = load16(x + r * d + j, m);
      if (y != nullptr) {
        s = _mm512_add_ps(s, load16(y + r * d + j, m));
        store16(s_out + r * d + j, s, m);
        s = rounded(s_out, s);  // the rounded residual, as the unfused code normalises it
      }
      _mm512_storeu_ps(v + r * dp + j, s);  // masked lanes are zeros
      acc = _mm512_add_ps(acc, s);
    }
    stat[r] = _mm512_reduce_add_ps(acc);
  }
  const __m512 inv_d = _mm512_set1_ps(1.0f / static_cast<float>(d));
  alignas(64) float mean[16];
  _mm512_store_ps(mean, _mm512_mul_ps(_mm512_load_ps(stat), inv_d));
  for (int64_t r = 0; r < count; ++r) {
    const __m512 mu = _mm512_set1_ps(mean[r]);
    __m512 sq = _mm512_setzero_ps();
    for (int64_t j = 0; j < d; j += 16) {
      const __m512 t = _mm512_maskz_sub_ps(lanes(d - j), _mm512_loadu_ps(v + r * dp + j), mu);
      sq = _mm512_fmadd_ps(t, t, sq);
    }
    stat[r] = _mm512_reduce_add_ps(sq);
  }
  alignas(64) float rstd[16];
  _mm512_store_ps(rstd, _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_sqrt_ps(_mm512_fmadd_ps(
                                          _mm512_load_ps(stat), inv_d, _mm512_set1_ps(eps)))));
  for (int64_t r = 0; r < count; ++r) {
    const __m512 mu = _mm512_set1_ps(mean[r]), rs = _mm512_set1_ps(rstd[r]);
    for (int64_t j = 0; j < d; j += 16) {
      const __mmask16 m = lanes(d - j);
      const __m512 t = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(v + r * dp + j), mu), rs);
      store16(out + r * d + j, _mm512_fmadd_ps(t, _mm512_maskz_loadu_ps(m, w + j), _mm512_maskz_loadu_ps(m, b + j)),
              m);
    }
  }
}
constexpr int64_t kRows = 16;
#else
// one row at a time; v: d floats of scratch
template <typename In>
inline void rows(const In* x, const In* y, In* s_out, In* out, const float* w, const float* b, float* v,
                 int64_t count, int64_t d, float eps) {
  for (int64_t r = 0; r < count; ++r, x += d, out += d) {
    float sum = 0.0f;
    for (int64_t j = 0; j < d; ++j) {
      float s = widen(x[j]);
      if (y != nullptr) {
        const In rounded = narrow<In>(s + widen(y[r * d + j]));
        s_out[r * d + j] = rounded;
        s = widen(rounded);
      }
      v[j] = s;
      sum += s;
    }
    const float mean = sum / static_cast<float>(d);
    float sq = 0.0f;
    for (int64_t j = 0; j < d; ++j) sq += (v[j] - mean) * (v[j] - mean);
    const float rstd = 1.0f / std::sqrt(sq / static_cast<float>(d) + eps);
    for (int64_t j = 0; j < d; ++j) out[j] = narrow<In>((v[j] - mean) * rstd * w[j] + b[j]);
  }
}
constexpr int64_t kRows = 1;
#endif

// rows of x (and y) -> (s, out); s is not written when y is None
template <typename In>
void run(const Tensor& x, const std::optional<Tensor>& y, const Tensor& w, const Tensor& b, double eps, Tensor& s,
         Tensor& out) {
  const int64_t d = x.size(-1), rows = d == 0 ? 0 : x.numel() / d;
  const In* xp = x.data_ptr<In>();
  const In* yp = y.has_value() ? y->data_ptr<In>() : nullptr;
  In* sp = y.has_value() ? s.data_ptr<In>() : nullptr;
  In* op = out.data_ptr<In>();
  const float* wp = w.data_ptr<float>();
  const float* bp = b.data_ptr<float>();
  at::parallel_for(0, (rows + kRows - 1) / kRows, 4, [&](int64_t begin, int64_t end) {
    std::vector<float> v(kRows * ((d + 15) / 16 * 16));
    for (int64_t g = begin; g < end; ++g) {
      const int64_t i = g * kRows, count = std::min(kRows, rows - i);
      g2gt_norm::rows<In>(xp + i * d, yp == nullptr ? nullptr : yp + i * d, sp == nullptr ? nullptr : sp + i * d,
                          op + i * d, wp, bp, v.data(), count, d, static_cast<float>(eps));
    }
  });
}

// (x + y, layer_norm(x + y)); without y (an empty tensor, layer_norm(x)). x, y: [..., d] float32 / bfloat16,
// the same shape and
// dtype; weight, bias: [d] (any floating dtype).
inline std::tuple<Tensor, Tensor> add_layer_norm(const Tensor& x_in, const std::optional<Tensor>& y_in,
                                                 const Tensor& weight, const Tensor& bias, double eps) {
  TORCH_CHECK(x_in.scalar_type() == at::kFloat || x_in.scalar_type() == at::kBFloat16,
              "g2gt add_layer_norm: x must be float32 or bfloat16, got ", x_in.scalar_type());
  TORCH_CHECK(x_in.dim() >= 1 && weight.dim() == 1 && bias.dim() == 1 && weight.size(0) == x_in.size(-1) &&
                  bias.size(0) == x_in.size(-1),
              "g2gt add_layer_norm: weight and bias must be [d] with d the last dim of x");
  const Tensor x = x_in.contiguous();
  std::optional<Tensor> y;
  if (y_in.has_value() && y_in->defined()) {
    TORCH_CHECK(y_in->sizes() == x_in.sizes() && y_in->scalar_type() == x_in.scalar_type(),
                "g2gt add_layer_norm: y must have x's shape and dtype");
    y = y_in->contiguous();
  }
  const Tensor w = weight.to(at::kFloat).contiguous(), b = bias.to(at::kFloat).contiguous();
  Tensor s = y.has_value() ? at::empty_like(x) : x.new_empty({0});
  Tensor out = at::empty_like(x);
  if (x.scalar_type() == at::kFloat) {
    run<float>(x, y, w, b, eps, s, out);
  } else {
    run<at::BFloat16>(x, y, w, b, eps, s, out);
  }
  return {s, out};
}

}  // namespace g2gt_norm
