// The persistent Hopper GEMM (sm_90a, fp16 and bf16): one block an SM walks its share of the 128 x BN
// tiles of C. In the one-tile-a-block kernels of wgmma.cu every tile pays the ring's fill (the first
// stages' TMA latency with the tensor cores idle) after the previous block's epilogue; here the
// producer runs ahead across tiles, so the next tile's first stages arrive while the consumers write
// the last one out, and its MMAs start at once.
//
// - Warpgroup 0 produces (40 registers a thread after setmaxnreg): one thread walks the block's tiles
//   in order and, for each, its K tiles, filling a ring of STAGES stages (TMA, 128-byte swizzle, full /
//   empty mbarriers as in mm_ws). Every tile has the same number of K tiles (kt): the ring position of
//   K tile j of the block's i-th tile is i * kt + j, and its stage and phase follow from it.
// - Warpgroups 1 and 2 consume (232 registers) as in mm_ws: 64 rows of the tile each, m64nBNk16.
// - Epilogue: a staging buffer of its own past the ring (the ring is already refilling): the plain
//   epilogue stages the whole tile in T (128 rows of BN + 8), the fused ones each warpgroup's 64 rows
//   in fp32 in turn (the same bytes), and both warpgroups write them out in 16-byte row chunks
//   (copy_staged / copy_out_fused; GELU's erf form without a residual through gelu_erf_16bit). Storing
//   the accumulator pairs straight from registers instead (4-byte stores, no buffer) ran 7 points slower
//   at 4096^3, and staging the plain tile in halves to fit a fourth stage 2 points slower
//   (docs/design/hopper-gemm.md).
//
// Dynamic shared memory: 1024 + STAGES * (128 + BN) * 128 + 64 * (BN + 8) * 4 bytes.
//
// mm_cluster is the same kernel in clusters of two CTAs that take tiles in pairs, 128 rows apart with the
// same columns: each CTA's producer loads its own A and half of the B tile, multicast into both CTAs, so
// B comes from L2 once a pair. A stage of a CTA is refilled (by either producer) only once the consumers
// of both CTAs left it: every consumer warp arrives on the empty mbarrier of both (16 arrivals a phase).
// An odd last row of tiles pairs a tile past M, whose CTA loads zeros and writes nothing.
//
// mm_tma_store is mm_persistent with TMA stores in the plain epilogue (stage_boxes, then one thread's UTMASTG):
// on an H100 a tie with mm_persistent (docs/design/hopper-gemm.md).
#include "wgmma_tile.cuh"

namespace kk {
namespace hop {

// The block's i-th tile of BM x BN: batch index z and origin (m0, n0), or false past the last tile. In
// clusters of CLUSTER CTAs the cluster walks tiles of CLUSTER * BM rows (`tiles` of them a matrix), the CTA
// of rank r taking rows r * BM on (the rank read again at each call: kept live across the main loop, its
// register spilled 4 bytes in the fused GELU epilogue).
template <int BN, int CLUSTER>
__device__ __forceinline__ bool nth_tile(int i, int tiles, int batch, int M, int N, int& z, int& m0, int& n0) {
  const int t = blockIdx.x / CLUSTER + i * (gridDim.x / CLUSTER);
  if (t >= tiles * batch) return false;
  z = t / tiles;
  tile_at<CLUSTER * BM, BN>(t - z * tiles, M, N, m0, n0);
  if constexpr (CLUSTER > 1) m0 += cluster_rank() * BM;
  return true;
}

}  // namespace hop

// A consumer's release of a stage it has read: every consumer thread arrives on this CTA's empty mbarrier,
// or in a cluster one lane a warp on both CTAs' (the wgmma wait before it is warp-synchronous).
template <int CLUSTER>
__device__ __forceinline__ void release(unsigned long long* empty) {
  if constexpr (CLUSTER > 1) {
    if ((threadIdx.x & 31) == 0) {
#pragma unroll
      for (unsigned r = 0; r < CLUSTER; ++r) hop::bar_arrive_cluster(empty, r);
    }
  } else {
    hop::bar_arrive(empty);
  }
}

// C[z] = A[z] @ B[z] (+ bias), arguments as mm_ws's but for the batch, which is flags bits 16-31 plus
// one (grid y and z are 1), and ws and tickets, unused (no split of K). Grid: at most one block an SM,
// block b walking tiles b, b + gridDim.x, ... of the batch's tiles in order (mm_cluster: cluster c
// walking pairs c, c + gridDim.x / 2, ...). K >= 1.
// kStore (mm_tma_store): the plain epilogue stages C as the boxes of tc (stage_boxes) and one thread writes
// them with TMA stores, which run on while the consumers start the next tile; where flags bit 2 is clear (C
// not on the 16-byte grid the TMA needs: no tc) it writes as mm_persistent.
template <typename T, int BN, int STAGES, bool kAK, bool kBK, int EPI, int CLUSTER, bool kStore = false>
__device__ __forceinline__ void persistent_body(const hop::TensorMap& ta, const hop::TensorMap& tb,
                                                const hop::TensorMap& tc, T* C, const T* bias, i64 M, i64 N, i64 K,
                                                i64 ldc, i64 bsc, i64 flags, const T* res, i64 ldr) {
  using S = hop::Stage<T, BN, kAK, kBK>;
  extern __shared__ unsigned char dyn[];
  __shared__ unsigned long long full[STAGES], empty[STAGES];
  __shared__ float bias_s[BN];
  unsigned char* smem = hop::align1024(dyn);
  const int tid = threadIdx.x;
  const int Mi = (int)M, Ni = (int)N;
  const int nb = (int)((flags >> 16) & 0xFFFF) + 1;  // flags bits 16-31: the batch minus one
  const int tiles = ((Mi + CLUSTER * hop::BM - 1) / (CLUSTER * hop::BM)) * ((Ni + BN - 1) / BN);
  const int kt = (int)((K + hop::BK - 1) / hop::BK);
  const int a_bytes = hop::a_box_bytes(flags);
  // a stage is emptied by the 256 consumer threads, or in a cluster by the 8 consumer warps of each CTA
  constexpr int kReleases = CLUSTER > 1 ? 8 * CLUSTER : 256;
  if (tid == 0) hop::init_ring<STAGES, kReleases>(&ta, &tb, full, empty);
  if constexpr (CLUSTER > 1) hop::cluster_sync();
  else __syncthreads();
  int z, m0, n0;
  if (tid < 128) {
    hop::regs_release<40>();
    if (tid == 0) {
      int q = 0;  // ring position
      for (int i = 0; hop::nth_tile<BN, CLUSTER>(i, tiles, nb, Mi, Ni, z, m0, n0); ++i) {
        const int za = (flags & 1) ? z : 0, zb = (flags & 2) ? z : 0;
        for (int j = 0; j < kt; ++j, ++q) {
          const int slot = q % STAGES;
          // position q - STAGES consumed (in a cluster: in both CTAs)
          if (q >= STAGES) mbar_wait(&empty[slot], (q / STAGES - 1) & 1);
          if constexpr (CLUSTER > 1) {
            S::load_shared_b(smem + slot * S::BYTES, &ta, &tb, m0, n0, j * hop::BK, za, zb, &full[slot], a_bytes,
                             hop::cluster_rank());
          } else {
            S::load(smem + slot * S::BYTES, &ta, &tb, m0, n0, j * hop::BK, za, zb, &full[slot], a_bytes);
          }
        }
      }
    }
  } else {
    hop::regs_claim<232>();
    const int ct = tid - 128, wg = ct / 128;
    unsigned char* staged = smem + STAGES * S::BYTES;
    int q = 0;
    for (int i = 0; hop::nth_tile<BN, CLUSTER>(i, tiles, nb, Mi, Ni, z, m0, n0); ++i) {
      float d[BN / 2];
#pragma unroll
      for (int e = 0; e < BN / 2; ++e) d[e] = 0.0f;
      hop::pin(d);
      for (int j = 0; j < kt; ++j, ++q) {
        const int slot = q % STAGES;
        mbar_wait(&full[slot], (q / STAGES) & 1);
        hop::wg_fence();
        S::mma(d, smem + slot * S::BYTES, wg);
        hop::wg_commit();
        hop::wg_wait<1>();  // the MMAs of position q - 1 are done: its stage goes back to the producer
        if (j > 0) release<CLUSTER>(&empty[(q - 1) % STAGES]);
      }
      hop::wg_wait<0>();
      hop::pin(d);
      release<CLUSTER>(&empty[(q - 1) % STAGES]);
      if (kStore && ct == 0) hop::store_wait_read();  // the last tile's TMA stores have read `staged`
      hop::named_sync(1, 256);  // the last tile's copy-out has read `staged` and bias_s
      hop::load_bias<BN>(bias_s, bias, n0, Ni, ct, 256);
      hop::named_sync(1, 256);
      T* Cz = C + z * bsc;
      if (kStore && EPI == mm::kPlain && (flags & 4)) {  // boxes of C out by the TMA (one thread issues them)
        hop::stage_boxes<T, BN>(d, staged, bias_s, wg, ct);
        hop::fence_async_shared();
        hop::named_sync(1, 256);
        if (ct == 0) {
#pragma unroll
          for (int b = 0; b < BN / 64; ++b) hop::tma_store(&tc, staged + b * 16384, n0 + 64 * b, m0, z);
          hop::store_commit();
        }
      } else if constexpr (EPI == mm::kPlain) {  // the whole tile staged in T at once, as mm_ws's
        hop::epilogue<T, BN, EPI>(d, staged, Cz, ldc, bias_s, res, ldr, m0, n0, Mi, Ni, wg, ct,
                                  [] { hop::named_sync(1, 256); });
      } else {  // act(acc + bias) (+ residual) in fp32 on the way out, one warpgroup's rows at a time
        float* t = reinterpret_cast<float*>(staged);
#pragma unroll 1
        for (int h = 0; h < 2; ++h) {
          if (h == 1) hop::named_sync(1, 256);  // rows 0-63 are out
          if (wg == h) hop::stage_out<float, BN>(d, t, bias_s, 0, ct);
          hop::named_sync(1, 256);
          hop::copy_out_act<T, BN, EPI, 64>(t, Cz, ldc, res, ldr, m0 + 64 * h, n0, Mi, Ni, ct, 256);
        }
      }
    }
  }
  if (kStore && tid == 128) hop::store_wait_all();  // the shared memory stays until the last stores read it
  if constexpr (CLUSTER > 1) hop::cluster_sync();  // the peer's last arrivals on this CTA's barriers are in
}

template <typename T, int BN, int STAGES, bool kAK, bool kBK, int EPI = 0>
__global__ void __launch_bounds__(384, 1)
mm_persistent(const __grid_constant__ hop::TensorMap ta, const __grid_constant__ hop::TensorMap tb, T* C,
              const T* bias, i64 M, i64 N, i64 K, i64 ldc, i64 bsc, i64 flags, const T* res, i64 ldr, float* ws,
              unsigned* tickets) {
  (void)ws, (void)tickets;
  persistent_body<T, BN, STAGES, kAK, kBK, EPI, 1>(ta, tb, ta, C, bias, M, N, K, ldc, bsc, flags, res, ldr);
}

// Launched in clusters of two (grid: an even number of CTAs, at most the clusters that fit at once).
template <typename T, int BN, int STAGES, bool kAK, bool kBK, int EPI = 0>
__global__ void __launch_bounds__(384, 1)
mm_cluster(const __grid_constant__ hop::TensorMap ta, const __grid_constant__ hop::TensorMap tb, T* C, const T* bias,
           i64 M, i64 N, i64 K, i64 ldc, i64 bsc, i64 flags, const T* res, i64 ldr, float* ws, unsigned* tickets) {
  (void)ws, (void)tickets;
  persistent_body<T, BN, STAGES, kAK, kBK, EPI, 2>(ta, tb, ta, C, bias, M, N, K, ldc, bsc, flags, res, ldr);
}

// mm_persistent with TMA stores in the plain epilogue: tc, C's tensor map (boxes of 64 columns x 128 rows,
// 128-byte swizzle; flags bit 2 says it is valid).
template <typename T, int BN, int STAGES, bool kAK, bool kBK, int EPI = 0>
__global__ void __launch_bounds__(384, 1)
mm_tma_store(const __grid_constant__ hop::TensorMap ta, const __grid_constant__ hop::TensorMap tb,
             const __grid_constant__ hop::TensorMap tc, T* C, const T* bias, i64 M, i64 N, i64 K, i64 ldc, i64 bsc,
             i64 flags, const T* res, i64 ldr, float* ws, unsigned* tickets) {
  (void)ws, (void)tickets;
  persistent_body<T, BN, STAGES, kAK, kBK, EPI, 1, true>(ta, tb, tc, C, bias, M, N, K, ldc, bsc, flags, res, ldr);
}

}  // namespace kk
