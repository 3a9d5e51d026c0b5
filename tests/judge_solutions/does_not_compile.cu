// vector_add, does not compile: a missing semicolon.
#include <cuda_runtime.h>

extern "C" void solve(const float* A, const float* B, float* C, int N) {
  int x = N
}
