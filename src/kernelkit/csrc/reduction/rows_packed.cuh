// Short rows packed (softmax_packed, norm_packed): a CTA moves a block of whole consecutive rows between
// global memory and shared memory as one contiguous stream of 16-byte vectors, and kG lanes reduce each
// row there, kE elements a lane.
//
// Why: a row of a few elements held by its own lanes in registers (the warp slices of softmax_rows and
// norm_rows) moves as the vectors of its own aligned window: a row of 31 16-bit elements is 5 vectors of
// which 2 are partial (stored element by element), a row of 7 shares its vectors with its neighbours and
// each is loaded twice. Rows of a contiguous tensor are one stream, so a block of R rows is R x len
// consecutive elements: only the block's first and last vectors are partial, every other one moves as one
// 16-byte copy (cp.async in, STG.E.128 out), whatever the row length or its alignment.
//
// The block's rows are reduced in shared memory: row i of the block starts at element a + i len of the
// buffer (a: the block's start past a 16-byte boundary), lane g of its kG lanes takes its elements g, g + kG,
// ... (consecutive lanes, consecutive elements: no bank conflicts), and the row's statistics come from
// butterfly shuffles within the kG lanes. The output is written back in place and leaves as vectors of the
// output's own window (the input's phase or any other).
#pragma once
#include "reduce.cuh"

namespace kk {

// The configuration of a packed-rows kernel: kG lanes a row (a power of two <= 32), kE elements a lane,
// CTAs of kBlock threads moving kVecs 16-byte vectors each a block of rows.
template <int kG_, int kE_>
struct PackedConfig {
  static constexpr int kG = kG_;
  static constexpr int kE = kE_;
  static constexpr int kBlock = 256;
  static constexpr int kVecs = 4;  // 64 bytes in flight a thread, 16 KB a CTA: 8 CTAs an SM keep 128 KB moving
  static constexpr int kMinBlocks = 8;  // 2048 threads an SM: 32 registers (kE floats a thread and addresses)
  static_assert(kG >= 1 && kG <= 32 && (kG & (kG - 1)) == 0, "a power-of-two slice of a warp a row");
};

__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared_addr(smem)), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_all;" ::: "memory"); }

template <typename T, typename C>
struct PackedRows {
  static constexpr int N = 16 / sizeof(T);
  static constexpr int kElems = C::kBlock * C::kVecs * N;  // the buffer, in elements
  T* buf;                                                  // shared, 16-byte aligned

  // Rows a block holds: its window (the rows and up to N - 1 elements before them) fits the buffer.
  __host__ __device__ static constexpr i64 rows_per_block(i64 len) { return (kElems - (N - 1)) / len; }

  // Elements [s, s + count) of p into the buffer from element a (their start's phase, returned), by
  // asynchronous 16-byte copies of the aligned chunks that hold them (cp.async.wait_all and a barrier
  // before reading them).
  __device__ __forceinline__ int load(const T* __restrict__ p, i64 s, int count) const {
    const unsigned long long addr = reinterpret_cast<unsigned long long>(p + s);
    const int a = (int)((addr & 15) / sizeof(T));
    const uint4* const src = reinterpret_cast<const uint4*>(addr & ~15ull);
    const int vectors = (a + count + N - 1) / N;
#pragma unroll
    for (int k = 0; k < C::kVecs; ++k) {
      const int v = k * C::kBlock + (int)threadIdx.x;
      if (v < vectors) cp_async_16(reinterpret_cast<uint4*>(buf) + v, src + v);
    }
    return a;
  }

  // The buffer's elements [a, a + count) to p's elements [s, s + count), as the 16-byte vectors of p's own
  // window: whole ones by one 128-bit store, the first and last element by element.
  __device__ __forceinline__ void store(T* __restrict__ p, i64 s, int count, int a) const {
    const unsigned long long addr = reinterpret_cast<unsigned long long>(p + s);
    const int b = (int)((addr & 15) / sizeof(T));
    T* const base = reinterpret_cast<T*>(addr & ~15ull);  // element 0 of the window: p + s - b
    const int vectors = (b + count + N - 1) / N;
#pragma unroll
    for (int k = 0; k < C::kVecs; ++k) {
      const int v = k * C::kBlock + (int)threadIdx.x;
      if (v >= vectors) continue;
      const int lo = v * N - b;  // the vector's first element, from s
      if (lo >= 0 && lo + N <= count) {
        uint4 r;
        if (a == b) {
          r = reinterpret_cast<const uint4*>(buf)[v];
        } else {  // another phase than the input's: gathered element by element
          Vec<T, N> e;
#pragma unroll
          for (int j = 0; j < N; ++j) e.v[j] = buf[a + lo + j];
          memcpy(&r, &e, 16);
        }
        asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(base + v * N), "r"(r.x), "r"(r.y), "r"(r.z),
                     "r"(r.w));
      } else {  // a block's first and last vectors only: a loop, not N unrolled stores whose offsets the
                // compiler would hold in registers across the block loop (norm_packed spilled)
#pragma unroll 1
        for (int j = 0; j < N; ++j)
          if (lo + j >= 0 && lo + j < count) base[v * N + j] = buf[a + lo + j];
      }
    }
  }
};

// The blocks of rows of a launch: block b holds rows [b R, b R + R) (R = rows_per_block), CTAs taking
// blocks in a grid stride. fn(r0, nr, count, a) reduces the nr rows from r0 once they are in the buffer.
template <typename T, typename C, typename Rows>
__device__ __forceinline__ void packed_blocks(const T* __restrict__ in, T* __restrict__ out, i64 rows, i64 len,
                                              i64 per_block, const PackedRows<T, C>& pr, Rows&& fn) {
  for (i64 r0 = (i64)blockIdx.x * per_block; r0 < rows; r0 += (i64)gridDim.x * per_block) {  // no 64-bit divide
    const int nr = (int)min(per_block, rows - r0);
    const int count = nr * (int)len;
    const int a = pr.load(in, r0 * len, count);
    cp_async_wait();
    __syncthreads();
    fn(nr, a);
    __syncthreads();
    pr.store(out, r0 * len, count, a);
    __syncthreads();  // the buffer is read before the next block's copies land in it
  }
}

}  // namespace kk
