// Matrix multiplication on Hopper's warpgroup tensor cores (sm_90a): operand tiles brought into shared
// memory by the TMA (tensor maps built on the host from the operands' strides, 128-byte swizzle),
// completion counted on mbarriers, a ring of STAGES tiles, wgmma reading both operands from shared
// memory into fp32 accumulators in registers. fp16 and bf16.
//
// A block computes a 128 x BN tile of C (BN = 128 or 256) with two consumer warpgroups of 64 rows each
// (m64nBNk16: BN / 2 accumulators a thread), K in tiles of 64 elements (one 128-byte swizzle line).
// Two rungs share the stage and the epilogue:
// - mm_tma_wgmma: 256 threads, all consumers; thread 0 also issues the copies. A stage is refilled once
//   both warpgroups' MMAs on it are done (wgmma.wait_group 1 keeps one K tile of MMAs in flight, then
//   a block barrier).
// - mm_ws: warp specialization, 384 threads. Warpgroup 0 is the producer: it gives registers back
//   (setmaxnreg.dec) and one thread issues the copies, waiting on an "empty" mbarrier per stage; the two
//   consumer warpgroups take the registers (setmaxnreg.inc), wait on the "full" mbarrier, and arrive on
//   "empty" once their MMAs on a stage are done. No block-wide barrier in the main loop.
// Split-K (splitk.cuh): grid y is the number of K slices; block y takes slice y's K tiles, and where
// there is more than one slice the tile's blocks meet in the workspace `ws` (tickets in `tickets`), the
// last one summing the partials in slice order before the epilogue below.
// Edges: the TMA zero-fills the parts of a box outside the tensor (M, N and K tails), and the epilogue
// writes only inside C. The epilogue stages the C tile (plus bias, rounded to T) in shared memory and
// writes it as 16-byte row chunks where the row and the address allow, element by element otherwise.
// linear's fused epilogues (EPI other than mm::kPlain) stage the tile in fp32 instead and apply the
// activation and the residual on the way out, so that the result is rounded once.
#include "splitk.cuh"
#include "wgmma_tile.cuh"

namespace kk {

// C[z] = A[z] @ B[z] (+ bias): ta / tb the tensor maps of A (K, M, batch) or (M, K, batch) and B
// likewise (innermost first), flags bit 0 / 1: A / B have a batch dim (else z = 0 for them), bits 8-15:
// the rows of A's box over 8 where it is shorter than the tile (a k-major A of few rows; 0: 128). With
// gridDim.y > 1 slices of K: ws holds gridDim.x * gridDim.z * gridDim.y partial tiles of 128 x BN
// floats, tickets one counter a tile (0 at launch; left at 0).
// Dynamic shared memory: 1024 + STAGES * (128 + BN) * 128 bytes.
template <typename T, int BN, int STAGES, bool kAK, bool kBK, int EPI = 0>
__global__ void __launch_bounds__(256, 1)
mm_tma_wgmma(const __grid_constant__ hop::TensorMap ta, const __grid_constant__ hop::TensorMap tb, T* C,
             const T* bias, i64 M, i64 N, i64 K, i64 ldc, i64 bsc, i64 flags, const T* res, i64 ldr, float* ws,
             unsigned* tickets) {
  using S = hop::Stage<T, BN, kAK, kBK>;
  static_assert(hop::staged_tile_fits<BN, STAGES, EPI == mm::kPlain ? 2 : 4>(),
                "the epilogue's C tile reuses the stages");
  extern __shared__ unsigned char dyn[];
  __shared__ unsigned long long full[STAGES];
  __shared__ float bias_s[BN];
  unsigned char* smem = hop::align1024(dyn);
  const int tid = threadIdx.x, wg = tid / 128;
  const int Mi = (int)M, Ni = (int)N, slices = gridDim.y;
  int kt0, ktiles;  // this block's K tiles: [kt0, kt0 + ktiles)
  hop::k_slice((int)((K + hop::BK - 1) / hop::BK), blockIdx.y, slices, kt0, ktiles);
  int m0, n0;
  hop::tile_of<hop::BM, BN>(Mi, Ni, m0, n0);
  const int z = blockIdx.z;
  const int za = (flags & 1) ? z : 0, zb = (flags & 2) ? z : 0;
  const int a_bytes = hop::a_box_bytes(flags);
  auto load = [&](int s, int kt) {
    S::load(smem + s * S::BYTES, &ta, &tb, m0, n0, (kt0 + kt) * hop::BK, za, zb, &full[s], a_bytes);
  };
  if (tid == 0) hop::init_ring<STAGES>(&ta, &tb, full);
  __syncthreads();
  if (tid == 0) hop::ring_fill<STAGES>(ktiles, load);
  hop::load_bias<BN>(bias_s, bias, n0, Ni, tid, 256);  // seen after the main loop's block barriers
  float d[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
  hop::pin(d);
  hop::ring_consume<STAGES>(ktiles, full, [&](int slot) { S::mma(d, smem + slot * S::BYTES, wg); },
                            [&](int kt) { hop::ring_refill<STAGES>(kt, ktiles, tid, load); });
  hop::wg_wait<0>();
  hop::pin(d);
  if (slices > 1 && !hop::split_meet<hop::BM, BN>(d, ws, tickets, z * gridDim.x + blockIdx.x, blockIdx.y, slices,
                                                  min(Mi - m0, hop::BM), tid, 0))
    return;  // another slice's block finishes the tile
  __syncthreads();  // every MMA has read its stage: the stages hold the C tile now
  hop::epilogue<T, BN, EPI>(d, smem, C + z * bsc, ldc, bias_s, res, ldr, m0, n0, Mi, Ni, wg, tid,
                            [] { __syncthreads(); });
}

// The same tile with warp specialization: warpgroup 0 produces (40 registers a thread), warpgroups 1
// and 2 consume (232), full / empty mbarrier pairs per stage; consumers sync among themselves only
// (named barrier 1) for the epilogue.
template <typename T, int BN, int STAGES, bool kAK, bool kBK, int EPI = 0>
__global__ void __launch_bounds__(384, 1)
mm_ws(const __grid_constant__ hop::TensorMap ta, const __grid_constant__ hop::TensorMap tb, T* C, const T* bias,
      i64 M, i64 N, i64 K, i64 ldc, i64 bsc, i64 flags, const T* res, i64 ldr, float* ws, unsigned* tickets) {
  using S = hop::Stage<T, BN, kAK, kBK>;
  static_assert(hop::staged_tile_fits<BN, STAGES, EPI == mm::kPlain ? 2 : 4>(),
                "the epilogue's C tile reuses the stages");
  extern __shared__ unsigned char dyn[];
  __shared__ unsigned long long full[STAGES], empty[STAGES];
  __shared__ float bias_s[BN];
  unsigned char* smem = hop::align1024(dyn);
  const int tid = threadIdx.x;
  const int Mi = (int)M, Ni = (int)N, slices = gridDim.y;
  int kt0, ktiles;  // this block's K tiles: [kt0, kt0 + ktiles)
  hop::k_slice((int)((K + hop::BK - 1) / hop::BK), blockIdx.y, slices, kt0, ktiles);
  int m0, n0;
  hop::tile_of<hop::BM, BN>(Mi, Ni, m0, n0);
  const int z = blockIdx.z;
  const int za = (flags & 1) ? z : 0, zb = (flags & 2) ? z : 0;
  const int a_bytes = hop::a_box_bytes(flags);
  if (tid == 0) hop::init_ring<STAGES, 256>(&ta, &tb, full, empty);  // 256 consumer threads empty a stage
  __syncthreads();
  if (tid < 128) {
    hop::regs_release<40>();
    if (tid == 0) {
      hop::ring_produce<STAGES>(ktiles, empty, [&](int s, int kt) {
        S::load(smem + s * S::BYTES, &ta, &tb, m0, n0, (kt0 + kt) * hop::BK, za, zb, &full[s], a_bytes);
      });
    }
  } else {
    hop::regs_claim<232>();
    const int ct = tid - 128, wg = ct / 128;
    hop::load_bias<BN>(bias_s, bias, n0, Ni, ct, 256);  // seen after the consumers' barrier below
    float d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
    hop::pin(d);
    // once the MMAs of K tile kt - 1 are done, its stage goes back to the producer
    hop::ring_consume<STAGES>(ktiles, full, [&](int slot) { S::mma(d, smem + slot * S::BYTES, wg); },
                              [&](int kt) { if (kt > 0) hop::bar_arrive(&empty[(kt - 1) % STAGES]); });
    hop::wg_wait<0>();
    hop::pin(d);
    if (slices > 1 && !hop::split_meet<hop::BM, BN>(d, ws, tickets, z * gridDim.x + blockIdx.x, blockIdx.y,
                                                    slices, min(Mi - m0, hop::BM), ct, 1))
      return;  // another slice's block finishes the tile
    hop::named_sync(1, 256);  // both consumer warpgroups are past their last MMA
    hop::epilogue<T, BN, EPI>(d, smem, C + z * bsc, ldc, bias_s, res, ldr, m0, n0, Mi, Ni, wg, ct,
                              [] { hop::named_sync(1, 256); });
  }
}

}  // namespace kk
