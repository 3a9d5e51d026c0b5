// Hopper (sm_90a) building blocks of the TMA + wgmma rungs: shared-memory matrix descriptors for
// 128-byte-swizzled tiles, the wgmma instructions and their fences, register reallocation between
// warpgroups, the tile order and the staged epilogue's pieces. The TMA's copies: tma.cuh.
//
// Tiles in shared memory. Every tile is a set of 1024-byte swizzle atoms: 8 lines of 128 bytes, the
// 16-byte chunk c of line r stored at chunk c ^ (r % 8). The TMA writes that pattern when its tensor
// map asks for the 128-byte swizzle, and a wgmma descriptor whose layout field says "128B" reads it;
// both XOR on address bits, so every tile starts on a 1024-byte boundary.
// - k-major operand (k contiguous in memory): one line = one row's 64 K elements (128 bytes); the
//   atoms of 8 rows follow each other (the descriptor's stride offset: 1024 bytes). A wgmma of K = 16
//   reads 32 bytes of each line: the k-th step starts 32 * k bytes further.
// - m- or n-major operand (rows contiguous): one line = 64 rows of one k; the atoms of 8 k follow each
//   other (stride offset 1024 bytes), and blocks of 64 rows lie 8192 bytes apart (the leading offset).
//   The k-th step of 16 starts 2048 bytes further. wgmma reads it transposed (its trans flag).
#pragma once
#include "tma.cuh"

namespace kk {
namespace hop {

// The shared-memory matrix descriptor of a 128-byte-swizzled tile starting at p: leading and stride
// byte offsets (multiples of 16), layout 1 (128-byte swizzle) in bits 62-63, base offset 0 (p lies
// in a 1024-byte-aligned atom at a whole line).
__device__ __forceinline__ unsigned long long sw128_desc(const void* p, unsigned lead, unsigned stride) {
  const unsigned long long a = shared_addr(p);
  return ((a >> 4) & 0x3FFFull) | ((unsigned long long)((lead >> 4) & 0x3FFF) << 16) |
         ((unsigned long long)((stride >> 4) & 0x3FFF) << 32) | (1ull << 62);
}

// wgmma ordering: fence before the first MMA that reads accumulators other instructions wrote; commit
// the MMAs issued so far as a group; wait until at most N groups are in flight.
__device__ __forceinline__ void wg_fence() {
#if KK_SM90A
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void wg_commit() {
#if KK_SM90A
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void wg_wait() {
#if KK_SM90A
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
#endif
}

// Keep the compiler from moving accumulator reads or writes across the asynchronous MMAs.
template <int R>
__device__ __forceinline__ void pin(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Register reallocation: a warpgroup gives registers back (producer) or takes them (consumers).
template <int R>
__device__ __forceinline__ void regs_release() {
#if KK_SM90A
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R));
#endif
}
template <int R>
__device__ __forceinline__ void regs_claim() {
#if KK_SM90A
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R));
#endif
}

// A barrier among `threads` threads (whole warps) under id `id` (1 to 15; 0 is __syncthreads).
__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// The dynamic shared memory's first 1024-byte boundary: the swizzled tiles start on one.
__device__ __forceinline__ unsigned char* align1024(unsigned char* p) {
  const unsigned a = shared_addr(p);
  return p + ((1024 - (a & 1023)) & 1023);
}

// The origin (m0, n0) of tile `idx` of the BM x BN tiles of C (M x N): groups of 8 M tiles walk N
// together, so that tiles running at once share A's rows and B's columns in L2 (as the mma rung).
template <int BM, int BN>
__device__ __forceinline__ void tile_at(int idx, int M, int N, int& m0, int& n0) {
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int width = 8 * tiles_n, first = (idx / width) * 8;
  const int gsize = min(tiles_m - first, 8);
  m0 = (first + (idx % width) % gsize) * BM;
  n0 = ((idx % width) / gsize) * BN;
}

// This block's tile: one tile a block.
template <int BM, int BN>
__device__ __forceinline__ void tile_of(int M, int N, int& m0, int& n0) {
  tile_at<BM, BN>(blockIdx.x, M, N, m0, n0);
}

// Thread 0's start of a block: both tensor maps prefetched, each stage's "full" mbarrier (one arrival,
// the producer's, plus the TMA's bytes) and, with warp specialization (CONSUMERS > 0), its "empty" one
// (every consumer thread arrives) initialised and fenced. The caller's block barrier follows.
template <int STAGES, int CONSUMERS = 0>
__device__ __forceinline__ void init_ring(const TensorMap* ta, const TensorMap* tb, unsigned long long* full,
                                          unsigned long long* empty = nullptr) {
  prefetch_map(ta);
  prefetch_map(tb);
#pragma unroll
  for (int s = 0; s < STAGES; ++s) {
    bar_init(&full[s], 1);
    if constexpr (CONSUMERS > 0) bar_init(&empty[s], CONSUMERS);
  }
  mbar_init_fence();
}

// The ring of the one-tile-a-block rungs (wgmma.cu, wgmma_fp8.cu): K tile kt lies in slot kt % STAGES,
// whose "full" mbarrier completes phase (kt / STAGES) & 1 when it lands. load(slot, kt): one thread's
// copies of K tile kt into a slot.

// One thread: the first STAGES K tiles (all of them where there are fewer).
template <int STAGES, typename Load>
__device__ __forceinline__ void ring_fill(int ktiles, Load load) {
  for (int s = 0; s < STAGES && s < ktiles; ++s) load(s, s);
}

// The producer's thread with warp specialization: every K tile in turn, each once the consumers have
// handed back (arrived on "empty") the K tile STAGES before it in the same slot.
template <int STAGES, typename Load>
__device__ __forceinline__ void ring_produce(int ktiles, unsigned long long* empty, Load load) {
  for (int kt = 0; kt < ktiles; ++kt) {
    const int slot = kt % STAGES;
    if (kt >= STAGES) mbar_wait(&empty[slot], (kt / STAGES - 1) & 1);  // K tile kt - STAGES consumed
    load(slot, kt);
  }
}

// A consuming warpgroup's K loop: K tile kt's MMAs (mma(slot)) are issued once it has landed, then
// waited for until at most INFLIGHT groups remain, and done(kt) hands back the stage those waited for
// freed: with one group in flight across K tiles, that of kt - 1; with none, kt's own.
template <int STAGES, int INFLIGHT = 1, typename Mma, typename Done>
__device__ __forceinline__ void ring_consume(int ktiles, unsigned long long* full, Mma mma, Done done) {
  for (int kt = 0; kt < ktiles; ++kt) {
    const int slot = kt % STAGES;
    mbar_wait(&full[slot], (kt / STAGES) & 1);
    wg_fence();
    mma(slot);
    wg_commit();
    wg_wait<INFLIGHT>();
    done(kt);
  }
}

// done(kt) without warp specialization: once both warpgroups are past K tile kt's wait (a block
// barrier), thread 0 refills the stage of kt - 1 with K tile kt - 1 + STAGES.
template <int STAGES, typename Load>
__device__ __forceinline__ void ring_refill(int kt, int ktiles, int tid, Load load) {
  __syncthreads();  // the other warpgroup's MMAs of kt - 1 are done too: that stage may be refilled
  const int next = kt - 1 + STAGES;
  if (tid == 0 && kt >= 1 && next < ktiles) load((kt - 1) % STAGES, next);
}

// Two adjacent elements of a staged C tile (16-bit or fp32) in one store.
template <typename S>
__device__ __forceinline__ void put_pair(S* p, float a, float b) {
  using W = typename Carrier<2 * sizeof(S)>::type;
  const S x[2] = {from_float<S>(a), from_float<S>(b)};
  W w;
  memcpy(&w, x, sizeof(W));
  *reinterpret_cast<W*>(p) = w;
}

// The C tile the epilogue stages in the ring of stages after the last MMA: 128 rows of BN + 8 elements,
// so that the 8 rows of a warp's pair stores start 16 (16-bit) or 32 (fp32) bytes apart in the banks,
// either way the fewest wavefronts. It fits where STAGES stages of 128 + BN rows of 128 bytes hold it.
template <int BN>
__host__ __device__ constexpr int staged_pitch() {
  return BN + 8;
}
template <int BN, int STAGES, int bytes>
__host__ __device__ constexpr bool staged_tile_fits() {
  return 128 * staged_pitch<BN>() * bytes <= STAGES * (128 + BN) * 128;
}

// The tile's BN bias values into shared memory (bs; 0 past N or without a bias), by threads tid of
// `threads`, early in the kernel so that the loads' latency hides behind the pipeline's fill; the
// epilogue reads them there. Read from global between its shared stores instead, each load waited on
// the stores before it (a generic store may alias it): 5% of a 4096^3 bf16 linear with a bias.
template <int BN, typename T>
__device__ __forceinline__ void load_bias(float* bs, const T* bias, int n0, int N, int tid, int threads) {
  for (int c = tid; c < BN; c += threads) bs[c] = bias && n0 + c < N ? to_float(bias[n0 + c]) : 0.0f;
}

// Warpgroup wg's accumulators into the C tile staged at t. Columns c, c + 1 of a row are staged as
// value(acc, bs[c]) (bs: the tile's bias from load_bias). ct: the thread's index among the consumer
// threads.
template <int BN, typename S, typename Value>
__device__ __forceinline__ void stage_acc(const float (&d)[BN / 2], S* t, const float* bs, int wg, int ct,
                                          Value value) {
  constexpr int P = staged_pitch<BN>();
  const int w = (ct % 128) / 32, l = ct % 32, g = l / 4, q = l % 4;
  const int r = wg * 64 + w * 16 + g;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int c = 8 * j + 2 * q;
    const float2 b = *reinterpret_cast<const float2*>(bs + c);
    put_pair(t + r * P + c, value(d[4 * j], b.x), value(d[4 * j + 1], b.y));
    put_pair(t + (r + 8) * P + c, value(d[4 * j + 2], b.x), value(d[4 * j + 3], b.y));
  }
}

// The staged tile (128 rows) to C (row stride ldc): 16-byte chunks along rows, consecutive threads on
// consecutive chunks; a chunk past N or at an address off the 16-byte grid is written element by element.
template <int BN, typename T>
__device__ __forceinline__ void copy_staged(const T* t, T* C, i64 ldc, int m0, int n0, int M, int N, int ct,
                                            int threads) {
  constexpr int E = 16 / sizeof(T), CPR = BN / E, P = staged_pitch<BN>();
  for (int i = ct; i < 128 * CPR; i += threads) {
    const int r = i / CPR, c = (i % CPR) * E, m = m0 + r, n = n0 + c;
    if (m >= M || n >= N) continue;
    const T* src = t + r * P + c;
    T* dst = C + (i64)m * ldc + n;
    if (n + E <= N && (reinterpret_cast<unsigned long long>(dst) & 15) == 0) {
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
    } else {
      for (int e = 0; e < E && n + e < N; ++e) dst[e] = src[e];
    }
  }
}

// D (64 x N, fp32, in registers) += A (64 x 16) * B (16 x N), both from shared memory through their
// descriptors. kTA / kTB: A m-major / B n-major (read transposed). The fragment of D: warp w of the
// warpgroup holds rows 16w..16w+15; lane l holds, for each n8 block j, d[4j..4j+3] = (row g, cols
// 8j+2q, +1) and (row g+8, same cols), g = l / 4, q = l % 4. One asm statement per (types, N), since
// both are part of the instruction's name; the macros below write out its accumulator operands
// (%0 .. %(N/2 - 1), each "+f") once for every instruction of this header and hopper_fp8.cuh.
#define KK_WG_ACC64 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, " \
  "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, " \
  "%62, %63"
#define KK_WG_ACC96 KK_WG_ACC64 ", " \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, " \
  "%84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define KK_WG_ACC128 KK_WG_ACC96 ", " \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, " \
  "%114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define KK_WG_OUT64(d) \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
  "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define KK_WG_OUT96(d) KK_WG_OUT64(d), \
  "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
  "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
  "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
  "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
#define KK_WG_OUT128(d) KK_WG_OUT96(d), \
  "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), \
  "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), \
  "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), \
  "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), \
  "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

// The statement itself; off sm_90a (a build for another arch) the wrappers trap.
#if KK_SM90A
#define KK_WG_ASM(...) asm volatile(__VA_ARGS__)
#else
#define KK_WG_ASM(...) __trap()
#endif

// A 16-bit wgmma: ACC / OUT the accumulator macros of NACC registers, IA.. the operand numbers that
// follow them (descriptors of A and B, the two transpose immediates, the scale-d predicate's source).
#define KK_WGMMA_16BIT(NAME, SHAPE, TY, NACC, ACC, OUT, IA, IB, ITA, ITB, IS)                                \
  template <int kTA, int kTB>                                                                                \
  __device__ __forceinline__ void NAME(float (&d)[NACC], unsigned long long da, unsigned long long db) {     \
    KK_WG_ASM("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %" IS ", 0;\n\twgmma.mma_async.sync.aligned." SHAPE     \
              ".f32." TY "." TY " {" ACC "}, %" IA ", %" IB ", p, 1, 1, %" ITA ", %" ITB ";\n\t}"          \
              : OUT(d)                                                                                       \
              : "l"(da), "l"(db), "n"(kTA), "n"(kTB), "r"(1));                                             \
  }

KK_WGMMA_16BIT(wgmma_bf16_n128, "m64n128k16", "bf16", 64, KK_WG_ACC64, KK_WG_OUT64, "64", "65", "66", "67", "68")
KK_WGMMA_16BIT(wgmma_bf16_n256, "m64n256k16", "bf16", 128, KK_WG_ACC128, KK_WG_OUT128, "128", "129", "130", "131",
               "132")
KK_WGMMA_16BIT(wgmma_f16_n128, "m64n128k16", "f16", 64, KK_WG_ACC64, KK_WG_OUT64, "64", "65", "66", "67", "68")
KK_WGMMA_16BIT(wgmma_f16_n256, "m64n256k16", "f16", 128, KK_WG_ACC128, KK_WG_OUT128, "128", "129", "130", "131",
               "132")

template <typename T>
struct IsBf16 {
  static constexpr bool value = false;
};
template <>
struct IsBf16<__nv_bfloat16> {
  static constexpr bool value = true;
};

template <typename T, int N, int kTA, int kTB>
__device__ __forceinline__ void wgmma(float (&d)[N / 2], unsigned long long da, unsigned long long db) {
  static_assert(N == 128 || N == 256, "m64n128k16 and m64n256k16");
  if constexpr (IsBf16<T>::value) {
    if constexpr (N == 128) wgmma_bf16_n128<kTA, kTB>(d, da, db);
    else wgmma_bf16_n256<kTA, kTB>(d, da, db);
  } else {
    if constexpr (N == 128) wgmma_f16_n128<kTA, kTB>(d, da, db);
    else wgmma_f16_n256<kTA, kTB>(d, da, db);
  }
}

}  // namespace hop
}  // namespace kk
