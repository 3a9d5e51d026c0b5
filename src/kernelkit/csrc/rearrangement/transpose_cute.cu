// The shared-memory transpose written with CuTe, its tile's layout swizzled instead of padded.
//
// Same problem and tile order as transpose_tile (transpose.cu): a batch of R x C transposes with free
// strides, 32 x 32 tiles of one element size, 256 threads, 4 elements a thread each way. The tile is a
// CuTe tensor in shared memory whose layout is the row-major 32 x 32 layout composed with a Swizzle:
// element (row, col) lives at row * 32 + (col ^ f(row)), where f XORs bits of the row into the bits of
// the column that pick its 4-byte bank word (Swizzle<B, M, 5>: M = log2 of the elements a word holds,
// B = log2 of the words, or 8-byte units, one wavefront reaches along a row). A warp writes one tile row
// (lanes along the columns: a permutation of the row, so the same banks as unswizzled) and reads one
// tile column (lanes down the rows: col ^ f(row) takes a different bank word for every lane), so
// neither side conflicts, and the tile needs no padding: 32 x 32 elements exactly.
// Load: thread t takes rows t / 32 + 8 i, column t % 32 (coalesced input rows); store: thread t takes
// rows t % 32, columns t / 32 + 8 i (coalesced output rows). Both are local_partition's of the tile by
// a 256-thread layout, with an identity tensor giving each element's coordinates for the edge predicate.
// Compiled with the CuTe header set (runtime/cute_headers.py).
#include <cute/tensor.hpp>

#include "transpose.cuh"  // TileGrid: the tile order shared with the other tile kernels

namespace kk {

// The swizzle of a 32 x 32 tile of E-byte elements (offsets in elements; the row is bits 5..9).
template <int E> struct TileSwizzle;
template <> struct TileSwizzle<1> { using type = cute::Swizzle<3, 2, 5>; };  // 4 elements a word, 8 words a row
template <> struct TileSwizzle<2> { using type = cute::Swizzle<4, 1, 5>; };  // 2 elements a word, 16 words a row
template <> struct TileSwizzle<4> { using type = cute::Swizzle<5, 0, 5>; };  // 1 element a word, 32 words a row
template <> struct TileSwizzle<8> { using type = cute::Swizzle<4, 0, 5>; };  // 2 words an element: 16 a wavefront

template <typename T>
__global__ void __launch_bounds__(256) transpose_cute(T* __restrict__ out, const T* __restrict__ in, i64 B, i64 R,
                                                      i64 C, i64 in_sb, i64 in_sr, i64 out_sb, i64 out_sc) {
  using namespace cute;
  constexpr int TILE = 32;
  using TileShape = Shape<Int<TILE>, Int<TILE>>;
  __shared__ T buf[TILE * TILE];
  using Swz = typename TileSwizzle<sizeof(T)>::type;
  const auto swizzled = composition(Swz{}, Layout<TileShape, Stride<Int<TILE>, _1>>{});
  Tensor s = make_tensor(make_smem_ptr(buf), swizzled);  // the tile: (row, col) -> row * 32 + (col ^ f(row))
  const Layout<Shape<_8, _32>, Stride<_32, _1>> by_rows{};  // thread t: row t / 32, column t % 32
  const Layout<Shape<_32, _8>, Stride<_1, _32>> by_cols{};  // thread t: row t % 32, column t / 32
  const Tensor coord = make_identity_tensor(TileShape{});    // (row, col) of each tile element
  const int tid = threadIdx.x;
  Tensor s_in = local_partition(s, by_rows, tid);  // this thread's 4 elements of the tile, load side
  const Tensor s_out = local_partition(s, by_cols, tid);  // ... and store side
  const Tensor c_in = local_partition(coord, by_rows, tid);
  const Tensor c_out = local_partition(coord, by_cols, tid);
  const TileGrid g(B, R, C, TILE, TILE);
  for (i64 t = blockIdx.x; t < g.ntiles; t += gridDim.x) {
    i64 b, r0, c0;
    g.at(t, TILE, TILE, b, r0, c0);
    // the tile of the input and of the output, both indexed by input (row, col)
    const Tensor gi = make_tensor(make_gmem_ptr(in + b * in_sb + r0 * in_sr + c0),
                                  make_layout(TileShape{}, make_stride(in_sr, _1{})));
    const Tensor go = make_tensor(make_gmem_ptr(out + b * out_sb + c0 * out_sc + r0),
                                  make_layout(TileShape{}, make_stride(_1{}, out_sc)));
    const auto inside = make_coord((int)min<i64>(R - r0, TILE), (int)min<i64>(C - c0, TILE));
    Tensor ok_in = make_tensor<bool>(shape(c_in));
    Tensor ok_out = make_tensor<bool>(shape(c_out));
    CUTE_UNROLL
    for (int i = 0; i < size(ok_in); ++i) ok_in(i) = elem_less(c_in(i), inside);
    CUTE_UNROLL
    for (int i = 0; i < size(ok_out); ++i) ok_out(i) = elem_less(c_out(i), inside);
    // through registers both ways: the 4 loads issue before the first shared store waits on one
    const Tensor g_in = local_partition(gi, by_rows, tid);
    Tensor r = make_fragment_like(g_in);
    copy_if(ok_in, g_in, r);
    copy(r, s_in);  // an element outside the matrix stores garbage that no thread writes out
    __syncthreads();
    Tensor g_out = local_partition(go, by_cols, tid);
    Tensor w = make_fragment_like(g_out);
    copy(s_out, w);  // every shared read first, then the stores
    copy_if(ok_out, w, g_out);
    __syncthreads();  // the next tile overwrites the buffer
  }
}

}  // namespace kk
