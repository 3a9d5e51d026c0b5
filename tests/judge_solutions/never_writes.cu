// vector_add, wrong: launches nothing, leaving C as it was.
#include <cuda_runtime.h>

extern "C" void solve(const float* A, const float* B, float* C, int N) {}
