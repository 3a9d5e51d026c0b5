// mbarriers (sm_90): the shared-memory barriers that count arrivals and bytes in flight, on which
// bulk copies (bulk.cuh) and stores into another CTA of the cluster (st.async: ClusterShare in
// reduce.cuh) signal completion. A thread waiting on one waits for exactly the data it guards, where
// a cluster barrier (barrier.cluster) also waits for every earlier global store of the thread
// (MEMBAR.ALL.GPU in the SASS) and invalidates L1 (CCTL.IVALL).
//
// Compiled for sm_80 too (the ladders are compiled for both): there the operations trap, and the host
// launches the kernels using them only on sm_90 and later.
#pragma once
#include "common.cuh"

namespace kk {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define KK_SM90 1
#else
#define KK_SM90 0
#endif

__device__ __forceinline__ unsigned shared_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// An mbarrier completing a phase on one arrival (the thread announcing the bytes) and those bytes.
__device__ __forceinline__ void mbar_init(unsigned long long* bar) {
#if KK_SM90
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_addr(bar)) : "memory");
#endif
}

// Make initialized barriers visible to the async proxy (the copy engine) before any copy uses them.
__device__ __forceinline__ void mbar_init_fence() {
#if KK_SM90
  asm volatile("fence.mbarrier_init.release.cluster;\n\tfence.proxy.async.shared::cta;" ::: "memory");
#endif
}

// The one arrival of this phase of `bar`, which then completes when `bytes` more have landed (bulk
// copies, st.async; they may land before this is announced).
__device__ __forceinline__ void mbar_expect_bytes(unsigned long long* bar, unsigned bytes) {
#if KK_SM90
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_addr(bar)), "r"(bytes)
               : "memory");
#else
  __trap();
#endif
}

// Wait (acquire) until phase `parity` of `bar` has completed: the copied bytes are then visible.
__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) {
#if KK_SM90
  unsigned done = 0;
  while (!done) {
    asm volatile(
        "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(shared_addr(bar)), "r"(parity)
        : "memory");
  }
#else
  __trap();
#endif
}

// This CTA's rank in its cluster, and the cluster's CTAs (0 and 1 before sm_90). Volatile: a kernel may read
// them again after a long loop rather than hold them in registers across it.
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r = 0;
#if KK_SM90
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
#endif
  return r;
}
__device__ __forceinline__ unsigned cluster_size() {
  unsigned n = 1;
#if KK_SM90
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
#endif
  return n;
}

// Store v into the shared memory of CTA `rank` of this cluster at the address that `local` has in
// this CTA, counting its 8 bytes on that CTA's mbarrier at the address `bar` has here.
__device__ __forceinline__ void st_async_peer(const float2* local, float2 v, const unsigned long long* bar,
                                              unsigned rank) {
#if KK_SM90
  unsigned dst, rbar;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(dst) : "r"(shared_addr(local)), "r"(rank));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rbar) : "r"(shared_addr(bar)), "r"(rank));
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];" ::"r"(dst),
               "f"(v.x), "f"(v.y), "r"(rbar)
               : "memory");
#else
  (void)local, (void)v, (void)bar, (void)rank;
  __trap();
#endif
}

}  // namespace kk
