// The host runs of the reduction kernels (tests/test_host_emulation_cpu.py): each returns 0 (right), 1 (wrong,
// with a line on stderr) or -1 (the case does not meet the form's promise; not run).
#pragma once
#include <cmath>
#include <numeric>
#include <random>

using i64 = long long;

template <class T> double as_double(T x) { return (double)kk::to_float(x); }
template <class T> T from(float f) { return kk::from_float<T>(f); }
template <class Op> double combine(double a, double b);
template <> double combine<kk::SumOp>(double a, double b) { return a + b; }
template <> double combine<kk::MaxOp>(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
template <class Op> double identity();
template <> double identity<kk::SumOp>() { return 0; }
template <> double identity<kk::MaxOp>() { return -INFINITY; }

// got against the float64 reduction of `n` values v(k), within the dtype's share of their magnitudes
template <class T, class Op, class F>
int check_reduction(T got, i64 n, F v, const char* what, i64 at) {
  double r = identity<Op>(), mag = 0;
  for (i64 k = 0; k < n; ++k) {
    const double x = as_double(v(k));
    r = combine<Op>(r, x);
    mag += std::fabs(x);
  }
  const double g = as_double(got), tol = sizeof(T) == 4 ? 1e-5 : 1e-2;
  if (std::fabs(g - r) <= tol * (mag + 1)) return 0;
  fprintf(stderr, "%s %lld: got %g, want %g\n", what, at, g, r);
  return 1;
}

template <class T>
T* random_input(std::vector<unsigned char>& buf, i64 n, int off, unsigned seed) {
  buf.assign(n * sizeof(T) + 768, 0);
  T* in = (T*)(((uintptr_t)buf.data() + 255) & ~(uintptr_t)255) + off;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  for (i64 i = 0; i < n; ++i) in[i] = from<T>(nd(rng));
  g_ranges = {{(uintptr_t)in & ~(uintptr_t)15, ((uintptr_t)(in + n) + 15) & ~(uintptr_t)15}};
  return in;
}

// reduce_cols over dim 1 of an (outer, R, inner) input `off` elements past a boundary, rows split
// about `rsplit` ways (as the host plans it); the tickets must be back at 0.
template <class T, class Op, bool W>
int run_cols(i64 outer, i64 R, i64 inner, int off, i64 rsplit, unsigned seed) {
  constexpr int V = 16 / sizeof(T);
  if (!W && (off * sizeof(T) % 16 || inner % V)) return -1;
  std::vector<unsigned char> buf;
  T* in = random_input<T>(buf, outer * R * inner, off, seed);
  const i64 width = (W ? 31 : 32) * V, col_blocks = (inner + width - 1) / width;
  const i64 rps = (R + rsplit - 1) / rsplit;
  rsplit = (R + rps - 1) / rps;
  std::vector<T> out(outer * inner, from<T>(NAN));
  std::vector<float> partials(outer * rsplit * inner, NAN);
  std::vector<unsigned> tickets(outer * col_blocks, 0);
  launch([&] { kk::reduce_cols<T, T, Op, V, W>(in, out.data(), partials.data(), tickets.data(), R, inner, col_blocks,
                                                rsplit, rps, 1.0f); },
         (unsigned)(col_blocks * outer * rsplit), 32, 8);
  for (unsigned t : tickets)
    if (t) {
      fprintf(stderr, "a ticket not back at 0\n");
      return 1;
    }
  for (i64 o = 0; o < outer; ++o)
    for (i64 c = 0; c < inner; ++c)
      if (check_reduction<T, Op>(out[o * inner + c], R, [&](i64 k) { return in[(o * R + k) * inner + c]; }, "column", c))
        return 1;
  return 0;
}

// A column reduction over dim 1 with rows read in groups of g (16 / gcd(inner * size, 16)), as the host
// plans it: reduce_cols over the (outer, R / g, g * inner) view into fp32 partials with no ticket, split
// about `rsplit` ways, then reduce_cols_fold over the partials and the R % g rows past the last group.
template <class T, class Op, bool W>
int run_grouped(i64 outer, i64 R, i64 inner, int off, i64 rsplit, unsigned seed) {
  constexpr int V = 16 / sizeof(T);
  const i64 g = 16 / std::gcd(inner * (i64)sizeof(T), (i64)16), Rg = R / g, rem = R % g, wide = g * inner;
  if ((!W && off * sizeof(T) % 16) || (outer > 1 && rem) || Rg == 0) return -1;
  std::vector<unsigned char> buf;
  T* in = random_input<T>(buf, outer * R * inner, off, seed);
  const i64 col_blocks = (wide + (W ? 31 : 32) * V - 1) / ((W ? 31 : 32) * V);
  const i64 rps = (Rg + rsplit - 1) / rsplit;
  rsplit = (Rg + rps - 1) / rps;
  const i64 P = rsplit * g;
  std::vector<float> partials(outer * P * inner, NAN);
  launch([&] { kk::reduce_cols<T, float, Op, V, W>(in, partials.data(), partials.data(), nullptr, Rg, wide, col_blocks,
                                                    rsplit, rps, 1.0f); },
         (unsigned)(col_blocks * outer * rsplit), 32, 8);
  std::vector<T> out(outer * inner, from<T>(NAN));
  launch([&] { kk::reduce_cols_fold<T, T, Op>(partials.data(), in + Rg * g * inner, out.data(), P, inner, R * inner,
                                               (int)rem, 1.0f); },
         (unsigned)((inner + 31) / 32), 32, 32, (unsigned)outer);
  for (i64 o = 0; o < outer; ++o)
    for (i64 c = 0; c < inner; ++c)
      if (check_reduction<T, Op>(out[o * inner + c], R, [&](i64 k) { return in[(o * R + k) * inner + c]; }, "grouped column", c))
        return 1;
  return 0;
}

// reduce_fast<BLOCK, 4> (BLOCK > 0, each row split over `bpr` blocks) or reduce_warp_rows (BLOCK == 0)
template <class T, class Op, int BLOCK>
int run_rows(i64 rows, i64 len, int off, i64 bpr, unsigned seed) {
  std::vector<unsigned char> buf;
  T* in = random_input<T>(buf, rows * len, off, seed);
  std::vector<T> out(rows, from<T>(NAN));
  std::vector<float> partials(rows * bpr, NAN);
  std::vector<unsigned> tickets(rows, 0);
  if constexpr (BLOCK > 0)
    launch([&] { kk::reduce_fast<T, T, Op, BLOCK, 4>(in, out.data(), partials.data(), tickets.data(), len, (int)bpr, 1.0f); },
           (unsigned)(rows * bpr), BLOCK);
  else
    launch([&] { kk::reduce_warp_rows<T, T, Op, 256>(in, out.data(), rows, len, 1.0f); }, (unsigned)((rows + 7) / 8), 256);
  for (i64 r = 0; r < rows; ++r)
    if (check_reduction<T, Op>(out[r], len, [&](i64 k) { return in[r * len + k]; }, "row", r)) return 1;
  return 0;
}
