// The norms' reads of their per-column weight and bias: staged in shared memory (by each thread, or by
// cp.async), read at any column phase as shifted 16-byte chunks (ColumnChunks, for the window forms), or
// loaded per vector from global or shared memory. These touch no row statistics, so they sit apart from
// norm.cuh's reductions; norm.cuh includes this file, and every norm kernel reaches them through it.
#pragma once
#include "reduce.cuh"

namespace kk {

// Each thread copies its own elements of weight and bias (where present) into shared memory at ws and
// bs (its slots of the staged slices): read back by the same thread only, so no barrier is needed.
template <bool kVec, typename Tile, typename T>
__device__ __forceinline__ void stage_weight_bias(const T* weight, const T* bias, i64 col, int rem, T* ws, T* bs) {
  // written by plain vector stores: the tile's own aligned store is a global one (st.global), which
  // faults on a shared-memory address
  const auto put = [](const Tile& s, T* dst, int rem) {
#pragma unroll
    for (int k = 0; k < Tile::kCount; ++k)
      if (Tile::valid(k, 0, rem)) store_vec(reinterpret_cast<Vec<T, Tile::N>*>(dst + k * Tile::kStride), s.v[k]);
  };
  Tile s;
  if (weight) {
    s.template load<kVec>(weight + col, rem, from_float<T>(1.0f));
    put(s, ws, rem);
  }
  if (bias) {
    s.template load<kVec>(bias + col, rem, from_float<T>(0.0f));
    put(s, bs, rem);
  }
}

// stage_weight_bias for aligned slices, by asynchronous copies (cp.async, sm_80+): the copies take no
// registers and the thread does not wait for them, so the first row's loads are issued at once rather than
// after the weight and bias arrive (a round trip to L2 per CTA before its first row: at 4096 x 4096 fp16
// layer_norm, 1320 CTAs staging 16 KB each). The thread waits for its own copies (staged_wait) before it
// first reads them back. Vectors past the row are zeroed, never copied.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared_addr(smem)), "l"(gmem) : "memory");
}
__device__ __forceinline__ void staged_wait() { asm volatile("cp.async.wait_all;" ::: "memory"); }
template <typename Tile, typename T>
__device__ __forceinline__ void stage_weight_bias_async(const T* weight, const T* bias, i64 col, int rem, T* ws,
                                                        T* bs) {
#pragma unroll
  for (int k = 0; k < Tile::kCount; ++k) {
    const int off = k * Tile::kStride;
    const bool valid = Tile::valid(k, 0, rem);
    if (weight) {
      if (valid) cp_async16(ws + off, weight + col + off);
      else *reinterpret_cast<uint4*>(ws + off) = uint4{0u, 0u, 0u, 0u};
    }
    if (bias) {
      if (valid) cp_async16(bs + off, bias + col + off);
      else *reinterpret_cast<uint4*>(bs + off) = uint4{0u, 0u, 0u, 0u};
    }
  }
}

// 16 bytes starting `bytes` (0 .. 15, a multiple of the element size) into the 32 bytes of two consecutive
// aligned chunks: a word select by bit 3, a word select by bit 2, then (16-bit) a half-word funnel shift.
template <typename T>
__device__ __forceinline__ uint4 shift16(uint4 lo, uint4 hi, int bytes) {
  const unsigned src[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  unsigned t[6], u[5];
#pragma unroll
  for (int i = 0; i < 6; ++i) t[i] = bytes & 8 ? src[i + 2] : src[i];
#pragma unroll
  for (int i = 0; i < 5; ++i) u[i] = bytes & 4 ? t[i + 1] : t[i];
  if constexpr (sizeof(T) == 4) {
    return uint4{u[0], u[1], u[2], u[3]};
  } else {
    const unsigned sh = (bytes & 2) * 8;
    return uint4{__funnelshift_r(u[0], u[1], sh), __funnelshift_r(u[1], u[2], sh), __funnelshift_r(u[2], u[3], sh),
                 __funnelshift_r(u[3], u[4], sh)};
  }
}

// A per-column array of the norms (weight or bias) read as 16-byte vectors of columns [c, c + N) for any c:
// rows at any alignment (the window forms) put a thread's columns at a phase that changes from row to row.
// The array's memory is a run of aligned 16-byte chunks, chunk q holding its elements [q N - phase, q N -
// phase + N) (phase: its start past a 16-byte boundary, in elements), so columns [c, c + N) are the two
// chunks from q = floor((phase + c) / N), shifted by (phase + c) mod N elements. Reads are clamped to the
// chunks [lo, hi] (the array's own, or those a CTA staged in shared memory): a clamped chunk holds no
// column the thread uses. kShared: the chunks a CTA staged in shared memory, every chunk its threads' columns
// can reach (no clamp; volatile reads: kept per row rather than hoisted into registers across the row loop).
template <typename T, bool kShared>
struct ColumnChunks {
  static constexpr int N = 16 / sizeof(T);
  static constexpr int kLog = N == 8 ? 3 : 2;
  const uint4* chunks;  // chunk 0's place (staged: the buffer less its first chunk's number)
  int phase, lo, hi;

  __device__ __forceinline__ uint4 chunk(int q) const {
    const uint4* c = chunks + (kShared ? q : min(max(q, lo), hi));
    if constexpr (kShared) {
      uint4 r;
      asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "r"(shared_addr(c)));
      return r;
    } else {
      return __ldg(c);
    }
  }
  // the first chunk of columns from c, and the shift in bytes (the same for c + k N: every vector of a thread)
  __device__ __forceinline__ int first(i64 c) const { return (phase + (int)c) >> kLog; }
  __device__ __forceinline__ int shift(i64 c) const { return ((phase + (int)c) & (N - 1)) * (int)sizeof(T); }
  __device__ __forceinline__ Vec<T, N> at(int q, int bytes) const {
    const uint4 r = shift16<T>(chunk(q), chunk(q + 1), bytes);
    Vec<T, N> v;
    memcpy(&v, &r, 16);
    return v;
  }
};

// The reader of `w` (len elements) over its own chunks in global memory.
template <typename T>
__device__ __forceinline__ ColumnChunks<T, false> global_columns(const T* w, i64 len) {
  constexpr int N = 16 / sizeof(T);
  const unsigned long long addr = reinterpret_cast<unsigned long long>(w);
  const int phase = (int)((addr & 15) / sizeof(T));
  return {reinterpret_cast<const uint4*>(addr & ~15ull), phase, 0, (int)((phase + len - 1) / N)};
}

// The weight and bias vectors (where present) at element `at` of a row, from global memory.
template <typename V, typename T>
__device__ __forceinline__ void load_weight_bias(V& wv, V& bv, const T* weight, const T* bias, i64 at) {
  if (weight) wv = load_vec(reinterpret_cast<const V*>(weight + at));
  if (bias) bv = load_vec(reinterpret_cast<const V*>(bias + at));
}

// load_weight_bias for the kernels held to 48 registers: present or not chosen on whole words
// (load_vec_or), absent ones read as zero bits.
template <typename V, typename T>
__device__ __forceinline__ void load_weight_bias_words(V& wv, V& bv, const T* weight, const T* bias, i64 at) {
  wv = load_vec_or(weight != nullptr, reinterpret_cast<const V*>(weight + at), T{});
  bv = load_vec_or(bias != nullptr, reinterpret_cast<const V*>(bias + at), T{});
}

// 16 bytes from shared memory by a volatile load where `ok` (else zero bits, chosen on whole words): the
// compiler may not hoist it out of the row loop into registers (which is what staging in shared memory
// avoids).
template <typename V>
__device__ __forceinline__ V lds_volatile_if(bool ok, const V* p) {
  static_assert(sizeof(V) == 16, "16-byte shared loads");
  uint4 r = {0u, 0u, 0u, 0u};
  if (ok) {
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "r"(shared_addr(p)));
  }
  V v;
  memcpy(&v, &r, 16);
  return v;
}
template <typename V>
__device__ __forceinline__ V lds_volatile(const V* p) { return lds_volatile_if(true, p); }

// RowConfig's kWeights for the norms' third way (reduce.cuh names the first two): kWeightsPhased, weight and
// bias read shifted to a row phase once and kept, per thread, in shared memory (norm_rows, the window forms).
enum : int { kWeightsPhased = 2 };

// 16 bytes into shared memory at p (the phased slots: written by one thread, read back by it alone).
__device__ __forceinline__ void sts_volatile(void* p, uint4 v) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(shared_addr(p)), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w) : "memory");
}

}  // namespace kk
