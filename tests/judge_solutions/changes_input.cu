// vector_add, wrong: writes its result into A as well.
#include <cuda_runtime.h>

__global__ void add(float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    c[i] = a[i] + b[i];
    a[i] = c[i];
  }
}

extern "C" void solve(const float* A, const float* B, float* C, int N) {
  add<<<(N + 255) / 256, 256>>>(const_cast<float*>(A), B, C, N);
}
