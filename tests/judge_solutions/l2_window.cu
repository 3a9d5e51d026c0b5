// vector_add, a trick: keeps A in L2 through a persisting access-policy window on the default stream,
// which a judge timing with a cold L2 must refuse.
#include <cuda_runtime.h>

__global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

extern "C" void solve(const float* A, const float* B, float* C, int N) {
  size_t bytes = (size_t)N * sizeof(float);
  cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, bytes < (4u << 20) ? bytes : (4u << 20));
  cudaStreamAttrValue attr = {};
  attr.accessPolicyWindow.base_ptr = (void*)A;
  attr.accessPolicyWindow.num_bytes = bytes < (4u << 20) ? bytes : (4u << 20);
  attr.accessPolicyWindow.hitRatio = 1.0f;
  attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  cudaStreamSetAttribute(0, cudaStreamAttributeAccessPolicyWindow, &attr);
  add<<<(N + 255) / 256, 256>>>(A, B, C, N);
}
