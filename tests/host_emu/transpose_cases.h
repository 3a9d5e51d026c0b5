// The host runs of transpose_window (tests/test_host_emulation_cpu.py): each returns 0 (right), 1 (wrong,
// with a line on stderr) or -1 (the case does not meet the form's promise; not run).
#pragma once
#include <cmath>
#include <random>

using i64 = long long;

// One batched transpose of (R, C) matrices through `run_kernel(out, in, in_sb, in_sr, out_sb, out_sc)`: x
// stored (B, R, C), or (R, B, C) with `batch_inner` (a batch stride smaller than a row), read `in_off`
// elements past a 256-byte boundary and written `out_off` elements past one; bit for bit, nothing written
// outside the output. IA / OA: the kernel's promises (input / output rows on 16-byte boundaries).
template <class T, bool IA, bool OA, class Run>
int check_transpose(i64 B, i64 R, i64 C, int in_off, int out_off, unsigned seed, bool batch_inner, Run run_kernel) {
  const i64 n = B * R * C, E = sizeof(T);
  std::vector<unsigned char> inbuf(n * E + 768), outbuf(n * E + 768, 0xA5);
  T* in = (T*)(((uintptr_t)inbuf.data() + 255) & ~(uintptr_t)255) + in_off;
  T* out = (T*)(((uintptr_t)outbuf.data() + 255) & ~(uintptr_t)255) + out_off;
  std::mt19937 rng(seed);
  for (i64 i = 0; i < n; ++i) in[i] = (T)rng();
  const i64 in_sb = batch_inner ? C : R * C, in_sr = batch_inner ? B * C : C, out_sb = R * C, out_sc = R;
  if (IA && (((uintptr_t)in & 15) || in_sr * E % 16 || in_sb * E % 16)) return -1;
  if (OA && (((uintptr_t)out & 15) || out_sc * E % 16 || out_sb * E % 16)) return -1;
  g_ranges = {{(uintptr_t)in & ~(uintptr_t)15, ((uintptr_t)(in + n) + 15) & ~(uintptr_t)15}};
  run_kernel(out, in, in_sb, in_sr, out_sb, out_sc);
  for (i64 b = 0; b < B; ++b)
    for (i64 r = 0; r < R; ++r)
      for (i64 c = 0; c < C; ++c)
        if (out[b * out_sb + c * out_sc + r] != in[b * in_sb + r * in_sr + c]) {
          fprintf(stderr, "element b=%lld r=%lld c=%lld differs\n", b, r, c);
          return 1;
        }
  const unsigned char* o = (const unsigned char*)out;
  for (const unsigned char* p = outbuf.data(); p < outbuf.data() + outbuf.size(); ++p)
    if ((p < o || p >= o + n * E) && *p != 0xA5) {
      fprintf(stderr, "a byte written outside the output\n");
      return 1;
    }
  return 0;
}

// transpose_window on a grid of at most 7 blocks (the tile loop).
template <class T, int TR, int TC, int TH, bool IA, bool OA>
int run_transpose(i64 B, i64 R, i64 C, int in_off, int out_off, unsigned seed, bool batch_inner) {
  return check_transpose<T, IA, OA>(B, R, C, in_off, out_off, seed, batch_inner,
                                    [&](T* out, const T* in, i64 in_sb, i64 in_sr, i64 out_sb, i64 out_sc) {
    const i64 tiles = B * ((R + TR - 1) / TR) * ((C + TC - 1) / TC);
    launch([&] { kk::transpose_window<T, TR, TC, TH, IA, OA>(out, in, B, R, C, in_sb, in_sr, out_sb, out_sc); },
           (unsigned)std::min<i64>(tiles, 7), TH);
  });
}

// transpose_skew (tiles of TR - V output rows over R + V - 1 rows) on a grid of at most 7 blocks.
template <class T, int TR, int TC, int TH, bool IA>
int run_skew(i64 B, i64 R, i64 C, int in_off, int out_off, unsigned seed, bool batch_inner) {
  return check_transpose<T, IA, false>(B, R, C, in_off, out_off, seed, batch_inner,
                                       [&](T* out, const T* in, i64 in_sb, i64 in_sr, i64 out_sb, i64 out_sc) {
    const i64 V = 16 / sizeof(T), A = TR - V, tiles = B * ((R + V - 1 + A - 1) / A) * ((C + TC - 1) / TC);
    launch([&] { kk::transpose_skew<T, TR, TC, TH, IA>(out, in, B, R, C, in_sb, in_sr, out_sb, out_sc); },
           (unsigned)std::min<i64>(tiles, 7), TH);
  });
}
