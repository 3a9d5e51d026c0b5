// vector_add, wrong: the last element is never written.
#include <cuda_runtime.h>

__global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n - 1) c[i] = a[i] + b[i];
}

extern "C" void solve(const float* A, const float* B, float* C, int N) { add<<<(N + 255) / 256, 256>>>(A, B, C, N); }
