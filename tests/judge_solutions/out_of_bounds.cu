// vector_add, wrong: one element written past the end of C.
#include <cuda_runtime.h>

__global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
  if (i == n) c[i] = 0.0f;
}

extern "C" void solve(const float* A, const float* B, float* C, int N) { add<<<N / 256 + 1, 256>>>(A, B, C, N); }
