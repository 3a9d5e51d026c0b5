// Grayscale binarization: 255 where a pixel exceeds the threshold, else 0. Every rung is a template
// of byte_map.cuh instantiated with kk::Binarize.
#include "byte_map.cuh"

namespace kk {

// 255 where v > threshold, else 0; the host handles thresholds outside [0, 254] (all 255 or all 0).
struct Binarize {
  u32 t;
  __device__ __forceinline__ Binarize(u32 threshold, int) : t(threshold) {}
  __device__ __forceinline__ u8 byte(u8 v, i64) const { return v > t ? 255 : 0; }
  // per-byte unsigned compare (SIMD-within-a-word): 0xff in each byte lane where w > t
  __device__ __forceinline__ u32 word(u32 w) const { return __vcmpgtu4(w, t * 0x01010101u); }
};

}  // namespace kk
