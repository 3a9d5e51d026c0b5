// Row tiles: a thread's slice of a row held in registers as 16-byte vectors (RowTile, or WordTile over
// whole 32-bit words), with the row forms (kRowElems, kRowAligned, kRowWindow, kRowWindowIn) by which a
// slice moves between global memory and the tile. They need only common.cuh's vector loads and stores,
// none of the reductions or cluster exchange, so they live apart from reduce.cuh; reduce.cuh includes
// this file, so its includers (softmax.cu, norm.cu, ...) see them unchanged.
#pragma once
#include "common.cuh"

namespace kk {

// ---- row tiles: thread `lane` of a group of kGroup holds kVecs 16-byte vectors of one row slice.
// Vector k of the thread starts at element k * kGroup * N + lane * N of the slice: consecutive lanes
// read consecutive 16 bytes (coalesced). Callers pass the thread's own start (slice + lane * N),
// `rem` = slice end - lane * N and `head` = slice start - lane * N (the elements before the row in a
// window form, <= 0 but for the row's first thread), so every address is that pointer plus a
// compile-time offset and every bound check a compare with a constant: no per-element address registers.
//
// How a slice moves between global memory and the tile (the row form, a template parameter):
//   kRowElems     element by element: any alignment, any length
//   kRowAligned   16-byte vectors: every row starts 16-byte aligned and is a whole number of vectors
//   kRowWindow    16-byte vectors of the aligned window that covers the row, whatever its start: the row's
//                 first vector (a head of 0 .. N - 1 elements of the row before it) and its last (a tail)
//                 are loaded whole with the elements outside the row replaced by `fill`, and stored
//                 element by element; every other vector moves as one 128-bit access. x and out must
//                 share their phase (their addresses differ by a multiple of 16 bytes), which holds when
//                 both tensors start aligned: then every row has the same misalignment in both.
//   kRowWindowIn  loads as kRowWindow, stores element by element (out at another phase than x)
// A window of a row of len elements starting `a` elements past a 16-byte boundary spans a + len elements:
// a tile holds such rows when its capacity is at least len + N - 1. The loads never leave the aligned
// 16-byte chunks that hold the row's elements, so they stay within the pages of the row's allocation.
enum : int { kRowElems = 0, kRowAligned = 1, kRowWindow = 2, kRowWindowIn = 3 };

template <typename T, int kGroup, int kVecs>
struct RowTile {
  using Elem = T;
  static constexpr int N = 16 / sizeof(T);
  static constexpr int kStride = kGroup * N;  // elements between a thread's consecutive vectors
  static constexpr int kCount = kVecs;
  Vec<T, N> v[kVecs];

  __device__ __forceinline__ static bool valid(int k, int j, int rem) { return k * kStride + j < rem; }
  // element j of vector k belongs to the row: only vector 0 can start before it (head > 0)
  __device__ __forceinline__ static bool valid(int k, int j, int head, int rem) {
    return (k > 0 || j >= head) && k * kStride + j < rem;
  }
  // vector k lies wholly within the row
  __device__ __forceinline__ static bool whole(int k, int head, int rem) {
    return (k > 0 || head <= 0) && k * kStride + N <= rem;
  }

  template <int kForm>
  __device__ __forceinline__ void load(const T* __restrict__ p, int rem, T fill, int head = 0) {
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      if constexpr (kForm == kRowAligned) {
        if (valid(k, 0, rem)) {
          v[k] = load_vec(reinterpret_cast<const Vec<T, N>*>(p + k * kStride));
        } else {
#pragma unroll
          for (int j = 0; j < N; ++j) v[k].v[j] = fill;
        }
      } else if constexpr (kForm >= kRowWindow) {
        // the vector is read whole if it holds any of the row's elements; the rest become fill, chosen on
        // whole 32-bit words (a choice per 16-bit element merges register halves: a PRMT and a register each)
        v[k] = load_vec_or(valid(k, 0, rem), reinterpret_cast<const Vec<T, N>*>(p + k * kStride), fill);
        if (!whole(k, head, rem)) {
          constexpr int kPer = 4 / sizeof(T);  // elements a word
          unsigned w[4];
          memcpy(w, &v[k], 16);
          const unsigned f = fill_word(fill);
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            unsigned keep = 0;
#pragma unroll
            for (int e = 0; e < kPer; ++e)
              if (valid(k, i * kPer + e, head, rem)) keep |= (kPer == 1 ? 0xffffffffu : 0xffffu << (16 * e));
            w[i] = (w[i] & keep) | (f & ~keep);
          }
          memcpy(&v[k], w, 16);
        }
      } else {
#pragma unroll
        for (int j = 0; j < N; ++j) v[k].v[j] = valid(k, j, rem) ? p[k * kStride + j] : fill;
      }
    }
  }

  // load<kRowAligned> with the choice of data or fill made on 32-bit words (load_vec_or): a choice per
  // 16-bit element costs a PRMT and a register each, which kernels held to 48 registers cannot spare
  __device__ __forceinline__ void load_words(const T* __restrict__ p, int rem, T fill) {
#pragma unroll
    for (int k = 0; k < kVecs; ++k) v[k] = load_vec_or(valid(k, 0, rem), reinterpret_cast<const Vec<T, N>*>(p + k * kStride), fill);
  }

  // vector k alone (kernels that write each vector as soon as it is computed keep its values short-lived)
  template <int kForm>
  __device__ __forceinline__ void store_one(int k, T* __restrict__ p, int rem, int head = 0) const {
    if constexpr (kForm == kRowAligned) {
      if (valid(k, 0, rem)) store_global16(reinterpret_cast<Vec<T, N>*>(p + k * kStride), v[k]);
    } else if constexpr (kForm == kRowWindow) {
      if (whole(k, head, rem)) {  // (written as st.global.v4: NVVM merged a plain store with the
                                  // element-wise branch into four 32-bit STGs)
        store_global16(reinterpret_cast<Vec<T, N>*>(p + k * kStride), v[k]);
      } else if (valid(k, 0, rem)) {  // the row's head or tail vector
        store_words(k, p, rem, head);
      }
    } else if constexpr (kForm == kRowWindowIn) {
      if (valid(k, 0, rem)) store_words(k, p, rem, head);
    } else {
#pragma unroll
      for (int j = 0; j < N; ++j)
        if (valid(k, j, head, rem)) p[k * kStride + j] = v[k].v[j];
    }
  }

  template <int kForm>
  __device__ __forceinline__ void store(T* __restrict__ p, int rem, int head = 0) const {
#pragma unroll
    for (int k = 0; k < kVecs; ++k) store_one<kForm>(k, p, rem, head);
  }

  // vector k's elements within the row, a 32-bit word at a time where both its halves are (16-bit T), at
  // any alignment of p (kRowWindowIn) or at p's 16-byte boundary (kRowWindow): taken from the words as
  // loaded, not element by element (which splits each 16-bit value into a register of its own)
  __device__ __forceinline__ void store_words(int k, T* __restrict__ p, int rem, int head) const {
    unsigned w[4];
    memcpy(w, &v[k], 16);
    T* const q = p + k * kStride;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (sizeof(T) == 4) {
        if (valid(k, i, head, rem)) reinterpret_cast<unsigned*>(q)[i] = w[i];
      } else {
        const bool lo = valid(k, 2 * i, head, rem), hi = valid(k, 2 * i + 1, head, rem);
        unsigned short* const h = reinterpret_cast<unsigned short*>(q + 2 * i);
        if (lo && hi && (reinterpret_cast<unsigned long long>(h) & 3) == 0) {
          *reinterpret_cast<unsigned*>(h) = w[i];
        } else {
          if (lo) h[0] = (unsigned short)(w[i] & 0xffffu);
          if (hi) h[1] = (unsigned short)(w[i] >> 16);
        }
      }
    }
  }
};

// The row tile of kernels that keep a row as loaded and convert at each use (the norms): RowTile's layout
// and forms over 16-byte words (uint4), never over 16-bit elements. NVVM gives each 16-bit element of a
// Vec a register of its own once any is touched alone (a mask, an element store), merged back by a PRMT
// each: the masks of the window forms and the element-wise head and tail stores here work on whole words.
template <typename T, int kGroup, int kVecs>
struct WordTile {
  using Elem = T;
  using Shape = RowTile<T, kGroup, kVecs>;
  static constexpr int N = 16 / sizeof(T);
  static constexpr int kStride = kGroup * N;
  static constexpr int kCount = kVecs;
  static constexpr int kPer = 4 / sizeof(T);  // elements a word
  uint4 v[kVecs];

  __device__ __forceinline__ static bool valid(int k, int j, int rem) { return Shape::valid(k, j, rem); }
  __device__ __forceinline__ static bool valid(int k, int j, int head, int rem) { return Shape::valid(k, j, head, rem); }
  __device__ __forceinline__ static bool whole(int k, int head, int rem) { return Shape::whole(k, head, rem); }
  __device__ __forceinline__ static unsigned word(const uint4& u, int i) {
    return i == 0 ? u.x : i == 1 ? u.y : i == 2 ? u.z : u.w;
  }

  // kRowAligned or a window form (RowTile's); elements outside the row read as `fill`
  template <int kForm>
  __device__ __forceinline__ void load(const T* __restrict__ p, int rem, T fill, int head = 0) {
    static_assert(kForm != kRowElems, "word tiles move 16-byte vectors");
    const unsigned f = fill_word(fill);
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      v[k] = valid(k, 0, rem) ? *reinterpret_cast<const uint4*>(p + k * kStride) : make_uint4(f, f, f, f);
      if constexpr (kForm >= kRowWindow) {
        if (!whole(k, head, rem)) {  // the row's head or tail vector: the elements outside it become fill
          unsigned w[4] = {v[k].x, v[k].y, v[k].z, v[k].w};
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            unsigned keep = 0;
#pragma unroll
            for (int e = 0; e < kPer; ++e)
              if (valid(k, i * kPer + e, head, rem)) keep |= kPer == 1 ? 0xffffffffu : 0xffffu << (16 * e);
            w[i] = (w[i] & keep) | (f & ~keep);
          }
          v[k] = make_uint4(w[0], w[1], w[2], w[3]);
        }
      }
    }
  }

  // vector k (RowTile::store_one's forms), the head and tail a word at a time where both halves belong
  template <int kForm>
  __device__ __forceinline__ void store_one(int k, T* __restrict__ p, int rem, int head = 0) const {
    T* const q = p + k * kStride;
    const bool in_row = kForm == kRowAligned ? valid(k, 0, rem) : whole(k, head, rem);
    if (kForm != kRowWindowIn && in_row) {
      asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(q), "r"(v[k].x), "r"(v[k].y), "r"(v[k].z),
                   "r"(v[k].w));
    } else if (kForm != kRowAligned && valid(k, 0, rem)) {
      // p's words: at a 4-byte boundary for every vector (they are 16 bytes apart) or for none
      const bool pairs = (reinterpret_cast<unsigned long long>(p) & 3) == 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const unsigned w = word(v[k], i);
        if constexpr (kPer == 1) {
          if (valid(k, i, head, rem)) reinterpret_cast<unsigned*>(q)[i] = w;
        } else {
          const bool lo = valid(k, 2 * i, head, rem), hi = valid(k, 2 * i + 1, head, rem);
          unsigned short* const h = reinterpret_cast<unsigned short*>(q + 2 * i);
          if (lo && hi && pairs) {
            *reinterpret_cast<unsigned*>(h) = w;
          } else {
            if (lo) h[0] = (unsigned short)(w & 0xffffu);
            if (hi) h[1] = (unsigned short)(w >> 16);
          }
        }
      }
    }
  }
};

// A row's place in its aligned window (the window forms): `a` elements of the row's start past the
// 16-byte boundary below it (0 in the other forms).
template <int kForm, typename T>
__device__ __forceinline__ int row_phase(const T* row_start) {
  if constexpr (kForm >= kRowWindow) {
    return (int)((reinterpret_cast<unsigned long long>(row_start) & 15) / sizeof(T));
  } else {
    return 0;
  }
}

}  // namespace kk
