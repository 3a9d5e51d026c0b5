// vector_add, never finishes: a kernel that spins forever.
#include <cuda_runtime.h>

__global__ void spin(float* c, int n) {
  volatile int forever = 1;
  while (forever) {
  }
  c[0] = (float)n;
}

extern "C" void solve(const float* A, const float* B, float* C, int N) { spin<<<1, 1>>>(C, N); }
