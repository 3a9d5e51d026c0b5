// Hopper (sm_90a) asynchronous copies of the GEMM rungs: tensor maps and the TMA's tile loads completing on
// mbarriers, the loads multicast into a 2-CTA cluster with the barriers across it, and the TMA's stores of
// staged tiles. Compiled for other arches too (the ladders are compiled for sm_80): there they trap.
#pragma once
#include "mbarrier.cuh"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KK_SM90A 1
#else
#define KK_SM90A 0
#endif

namespace kk {
namespace hop {

// A CUtensorMap (the driver's 128-byte opaque descriptor), passed by value as a __grid_constant__
// kernel parameter so that the TMA reads it from the parameter space.
struct alignas(64) TensorMap {
  unsigned long long raw[16];
};

// An mbarrier whose phase completes after `count` arrivals (and the bytes announced to it).
__device__ __forceinline__ void bar_init(unsigned long long* bar, unsigned count) {
#if KK_SM90A
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_addr(bar)), "r"(count) : "memory");
#endif
}

__device__ __forceinline__ void bar_arrive(unsigned long long* bar) {
#if KK_SM90A
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_addr(bar)) : "memory");
#else
  __trap();
#endif
}

__device__ __forceinline__ void prefetch_map(const TensorMap* map) {
#if KK_SM90A
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
#endif
}

// The box of `map` at coordinates (c0 innermost, c1, c2) into shared memory at dst; its bytes are
// counted on `bar`. Parts of the box outside the tensor arrive as zeros (and are counted too).
__device__ __forceinline__ void tma_load(void* dst, const TensorMap* map, int c0, int c1, int c2,
                                         unsigned long long* bar) {
#if KK_SM90A
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];" ::
          "r"(shared_addr(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(shared_addr(bar))
      : "memory");
#else
  (void)dst, (void)map, (void)c0, (void)c1, (void)c2, (void)bar;
  __trap();
#endif
}

// ---- 2-CTA clusters (the cluster rung): a box multicast into both CTAs, barriers across them.

using kk::cluster_rank;  // this CTA's rank in its cluster (mbarrier.cuh)

// Every thread of every CTA of the cluster: its shared-memory work released, everyone's acquired. At a
// kernel's start (the peers' mbarriers exist before any copy or arrival reaches them) and end (no CTA
// leaves while a peer may still arrive on its barriers).
__device__ __forceinline__ void cluster_sync() {
#if KK_SM90A
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

// An arrival on the mbarrier at bar's address in CTA `rank` of the cluster (this one included). The
// default (CTA-scope) release, as for a local arrival: a release at cluster scope compiles to MEMBAR.ALL.GPU,
// which would wait for the previous tile's C stores in every stage. What it orders is this warp's wgmma reads
// of the stage, complete at the wgmma wait before it, against the TMA's refill the arrival enables.
__device__ __forceinline__ void bar_arrive_cluster(unsigned long long* bar, unsigned rank) {
#if KK_SM90A
  asm volatile("{\n\t.reg .b32 ra;\n\tmapa.shared::cluster.u32 ra, %0, %1;\n\t"
               "mbarrier.arrive.shared::cluster.b64 _, [ra];\n\t}" ::"r"(shared_addr(bar)), "r"(rank)
               : "memory");
#else
  (void)bar, (void)rank;
  __trap();
#endif
}

// tma_load's box written at dst's offset into the shared memory of every CTA in `mask` (bit r: rank r),
// its bytes counted on the mbarrier at bar's offset in each of them.
__device__ __forceinline__ void tma_load_multicast(void* dst, const TensorMap* map, int c0, int c1, int c2,
                                                   unsigned long long* bar, unsigned short mask) {
#if KK_SM90A
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3, %4}], [%5], %6;" ::"r"(shared_addr(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(shared_addr(bar)), "h"(mask)
      : "memory");
#else
  (void)dst, (void)map, (void)c0, (void)c1, (void)c2, (void)bar, (void)mask;
  __trap();
#endif
}

// ---- TMA stores (the tma_store rung's epilogue): a staged box of C written to global memory by the TMA.

// Make this thread's generic-proxy writes to shared memory visible to the TMA (async proxy) reading them.
__device__ __forceinline__ void fence_async_shared() {
#if KK_SM90A
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

// The box of `map` at (c0, c1, c2) from shared memory at src to global memory; parts outside the tensor are
// not written. Tracked in this thread's bulk groups (store_commit, store_wait_read, store_wait_all).
__device__ __forceinline__ void tma_store(const TensorMap* map, const void* src, int c0, int c1, int c2) {
#if KK_SM90A
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(shared_addr(src)), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
#else
  (void)map, (void)src, (void)c0, (void)c1, (void)c2;
  __trap();
#endif
}
__device__ __forceinline__ void store_commit() {
#if KK_SM90A
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#endif
}
// Until the committed stores have read their shared memory (it may be written again).
__device__ __forceinline__ void store_wait_read() {
#if KK_SM90A
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
#endif
}
// Until the committed stores are complete.
__device__ __forceinline__ void store_wait_all() {
#if KK_SM90A
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#endif
}

}  // namespace hop
}  // namespace kk
