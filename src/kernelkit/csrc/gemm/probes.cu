// Instruction probes of the matmul family, not in the ladder. The r_* kernels measure each math
// instruction's peak rate from registers (each warp `iters` rounds of 8 independent instructions, 4 for
// the fp64 m16n8k16; `python benchmarks/matmul_table.py --ceilings`): the ceiling a kernel built on that
// instruction can reach. The sub_* kernels are the sub-byte mma shapes, compiled by the CPU tests to
// show what each arch makes of them (sm_80: native IMMA.16864.S4 / IMMA.8832.S4; sm_90: s4 unpacked to
// IMMA.16832.S8 with about a hundred instructions a step, b1 native BMMA.88128.AND.POPC on both).
extern "C" __global__ void r_hmma(float* out, int iters) {
  unsigned a[4] = {threadIdx.x, 1u, 2u, 3u}, b[2] = {5u, 7u};
  float d[8][4] = {};
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int j = 0; j < 8; ++j)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                   : "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  float s = 0; for (int j = 0; j < 8; ++j) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
extern "C" __global__ void r_tf32(float* out, int iters) {
  unsigned a[4] = {threadIdx.x, 1u, 2u, 3u}, b[2] = {5u, 7u};
  float d[8][4] = {};
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int j = 0; j < 8; ++j)
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                   : "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  float s = 0; for (int j = 0; j < 8; ++j) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
extern "C" __global__ void r_imma(float* out, int iters) {
  unsigned a[4] = {threadIdx.x, 1u, 2u, 3u}, b[2] = {5u, 7u};
  int d[8][4] = {};
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int j = 0; j < 8; ++j)
      asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                   : "+r"(d[j][0]), "+r"(d[j][1]), "+r"(d[j][2]), "+r"(d[j][3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  int s = 0; for (int j = 0; j < 8; ++j) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
extern "C" __global__ void r_dmma884(float* out, int iters) {
  double a = threadIdx.x, b = 2.0;
  double d[8][2] = {};
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int j = 0; j < 8; ++j)
      asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};" : "+d"(d[j][0]), "+d"(d[j][1]) : "d"(a), "d"(b));
  double s = 0; for (int j = 0; j < 8; ++j) s += d[j][0] + d[j][1];
  out[blockIdx.x * blockDim.x + threadIdx.x] = (float)s;
}
extern "C" __global__ void r_dmma16816(float* out, int iters) {
#if __CUDA_ARCH__ >= 900  // the fp64 m16n8k16 shape is sm_90's
  double a[8], b[4];
  for (int i = 0; i < 8; ++i) a[i] = threadIdx.x + i;
  for (int i = 0; i < 4; ++i) b[i] = i;
  double d[4][4] = {};
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int j = 0; j < 4; ++j)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3};"
                   : "+d"(d[j][0]), "+d"(d[j][1]), "+d"(d[j][2]), "+d"(d[j][3])
                   : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]), "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
  double s = 0; for (int j = 0; j < 4; ++j) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = (float)s;
#endif
}
extern "C" __global__ void r_ffma(float* out, int iters) {
  float x[16];
  for (int j = 0; j < 16; ++j) x[j] = threadIdx.x + j;
  const float a = 1.0001f, b = 0.999f;
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int j = 0; j < 16; ++j) x[j] = fmaf(x[j], a, b);
  float s = 0; for (int j = 0; j < 16; ++j) s += x[j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

extern "C" __global__ void sub_s4(const int* a, int* c) {
  int d[4] = {};
  unsigned x[4], y[2];
  for (int i = 0; i < 4; ++i) x[i] = a[threadIdx.x + 32 * i];
  for (int i = 0; i < 2; ++i) y[i] = a[threadIdx.x + 32 * i + 128];
  asm volatile("mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
               : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(y[0]), "r"(y[1]));
  c[threadIdx.x] = d[0] + d[1] + d[2] + d[3];
}
extern "C" __global__ void sub_b1(const int* a, int* c) {
  int d0 = 0, d1 = 0;
  const unsigned x = a[threadIdx.x], y = a[threadIdx.x + 32];
  asm volatile("mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.and.popc {%0,%1}, {%2}, {%3}, {%0,%1};"
               : "+r"(d0), "+r"(d1) : "r"(x), "r"(y));
  c[threadIdx.x] = d0 + d1;
}
