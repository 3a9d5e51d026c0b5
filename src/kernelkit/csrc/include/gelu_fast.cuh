// GELU's erf form for results rounded to 16 bits (fp16, bf16): the element-wise fast rung (gelu.cu) and
// the fused epilogues of the Hopper GEMM (gemm/wgmma_tile.cuh) use it.
//
// erff costs ~27 instructions an element (two polynomials whose coefficients are picked by FSEL, plus
// an exp for |z| >= 1). Here 0.5 erfc(z), z = |x| / sqrt(2), is t 2^(s(t) - u^2) with t = 1 / (1 + z/2),
// u = z sqrt(log2 e) and s a degree-5 polynomial in t (fitted to the largest relative error of erfc
// over z >= 0: 5.1e-5, a tenth of fp16's half ulp; 5.9e-5 on the result): 12 instructions and two
// MUFU (rcp, ex2), branch-free. gelu is then x (1 - h) for x >= 0 and x h below, with no cancellation
// of 1 + erf for negative x. x = -inf gives NaN, +inf gives inf, as torch's form does.
#pragma once

namespace kk {

__device__ __forceinline__ float gelu_erf_16bit(float x) {
  const float u = fabsf(x) * 0.849321783f;  // |x| sqrt(log2(e) / 2)
  float t, e;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(t) : "f"(fmaf(u, 0.416277319f, 1.0f)));
  float s = 0.259329736f;  // log2(e) times the fitted coefficients, less 1 in the constant (the 0.5)
  s = fmaf(s, t, -0.824691892f);
  s = fmaf(s, t, 0.478466213f);
  s = fmaf(s, t, 0.464045346f);
  s = fmaf(s, t, 1.44859874f);
  s = fmaf(s, t, -2.82582092f);
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(fmaf(-u, u, s)));
  const float h = t * e;  // 0.5 erfc(|x| / sqrt(2))
  return x * (x >= 0.0f ? 1.0f - h : h);
}

}  // namespace kk
