"""Tests for kernelkit.analyze: SASS census, resource usage, occupancy.

Kernels are compiled with NVRTC (the runtime's header options) for sm_80 and sm_90 and the
real cuobjdump output is checked, so a change in the tools' spelling or in our
parsing makes these fail.  No GPU is needed.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

try:
    import kernelkit.analyze  # noqa: F401
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from kernelkit.analyze import (
    ToolNotFoundError,
    census,
    disassemble,
    find_tool,
    kernel_census,
    resource_usage,
    spills_from_log,
    theoretical_occupancy,
)

ARCHS = ("sm_80", "sm_90")

KERNELS = r"""
#include <cuda_fp16.h>
#include <mma.h>

extern "C" __global__ void copy_f32(const float* __restrict__ a, float* __restrict__ b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i];
}

extern "C" __global__ void copy_f32x4(const float4* __restrict__ a, float4* __restrict__ b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i];
}

// A runtime-indexed, runtime-updated array cannot live in registers.
extern "C" __global__ void local_array(const int* idx, float* out, int n) {
    float arr[32];
    for (int i = 0; i < 32; ++i) arr[i] = out[i];
    for (int k = 0; k < n; ++k) arr[idx[k] & 31] += 1.0f;
    out[threadIdx.x] = arr[idx[threadIdx.x] & 31];
}

extern "C" __global__ void wmma_16x16x16(const half* a, const half* b, float* c) {
    using namespace nvcuda;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

extern "C" __global__ void smem_reverse(const float* a, float* b) {
    __shared__ float s[512];  // 2048 bytes
    s[threadIdx.x] = a[threadIdx.x];
    __syncthreads();
    b[threadIdx.x] = s[511 - threadIdx.x];
}

template <typename T>
__global__ void add_one(T* a) { a[threadIdx.x] += T(1); }
"""


@pytest.fixture(scope="module", params=ARCHS)
def compiled(request):
    """(arch, cubin bytes, {name expression: mangled}, ptxas log) per arch."""
    core = pytest.importorskip("cuda.core")
    try:
        find_tool("cuobjdump")
    except ToolNotFoundError as exc:
        pytest.skip(str(exc))
    arch = request.param
    from kernelkit.runtime import header_options

    opts = core.ProgramOptions(arch=arch, std="c++17", ptxas_options="-v", **header_options())
    log = io.StringIO()
    obj = core.Program(KERNELS, "c++", opts).compile(
        "cubin", name_expressions=("add_one<float>",), logs=log
    )
    mapping = {
        k: v.decode() if isinstance(v, bytes) else v for k, v in obj.symbol_mapping.items()
    }
    return arch, obj.code, mapping, log.getvalue()


@pytest.fixture(scope="module")
def sass_census(compiled):
    return kernel_census(compiled[1])


def test_disassemble_keys_are_kernel_names(compiled):
    _, cubin, mapping, _ = compiled
    listing = disassemble(cubin)
    assert mapping["add_one<float>"] in listing
    assert {"copy_f32", "copy_f32x4", "local_array", "wmma_16x16x16"} <= set(listing)
    assert "LDG" in listing["copy_f32"] and "Function : copy_f32\n" in listing["copy_f32"]


def test_scalar_copy_is_32_bit(sass_census):
    c = sass_census["copy_f32"]
    assert c.global_load_widths == {32: 1}
    assert c.global_store_widths == {32: 1}
    assert 128 not in c.global_load_widths
    # ptxas emits HFMA2.MMA as a register move here on sm_80: not a tensor op.
    assert c.tensor_core_ops == 0
    assert c.local_memory_ops == 0


def test_float4_copy_is_128_bit(sass_census):
    c = sass_census["copy_f32x4"]
    assert c.global_load_widths == {128: 1}
    assert c.global_store_widths == {128: 1}


def test_local_array_uses_local_memory(compiled, sass_census):
    _, cubin, _, log = compiled
    c = sass_census["local_array"]
    assert c.local_loads > 0 and c.local_stores > 0
    res = resource_usage(cubin)["local_array"]
    assert res.stack > 0
    info = spills_from_log(log)["local_array"]
    assert info.stack_frame == res.stack
    assert not info.spills  # an indexed array, not a register spill


def test_wmma_uses_tensor_cores(sass_census):
    c = sass_census["wmma_16x16x16"]
    assert c.tensor_core_ops > 0
    assert c.count("HMMA") == c.tensor_core_ops


def test_shared_memory_ops_and_size(compiled, sass_census):
    _, cubin, _, log = compiled
    c = sass_census["smem_reverse"]
    assert c.shared_store_widths == {32: 1} and c.shared_load_widths == {32: 1}
    assert c.barriers == 1
    res = resource_usage(cubin)["smem_reverse"]
    # sm_90 cubins fold the 1 KB system reservation in; `shared` removes it.
    assert res.shared == 2048
    assert res.shared == spills_from_log(log)["smem_reverse"].shared


def test_resource_usage_registers(compiled):
    _, cubin, mapping, log = compiled
    usage = resource_usage(cubin)
    mangled = mapping["add_one<float>"]
    assert usage[mangled].registers > 0
    assert usage[mangled].registers == spills_from_log(log)[mangled].registers
    assert usage[mangled].constant > 0  # kernel parameters live in bank 0


def test_census_parses_modifiers():
    text = """
        /*0000*/                   LDG.E.128.CONSTANT R4, desc[UR4][R2.64] ;
        /*0010*/              @!P0 LDG.E.64 R6, desc[UR4][R2.64] ;
        /*0020*/                   LDG.E.EL R0, desc[UR4][R2.64] ;
        /*0030*/                   LDG.E.LTC128B R1, desc[UR4][R2.64] ;
        /*0040*/                   LDG.E.U8 R8, desc[UR4][R2.64] ;
        /*0050*/                   STG.E.U16 desc[UR4][R2.64], R8 ;
        /*0060*/                   LDL.LU.64 R10, [R1+0x8] ;
        /*0070*/                   STL.128 [R1], R12 ;
        /*0080*/                   LDSM.16.M88.4 R16, [R20] ;
        /*0090*/                   LDS.128 R16, [R21] ;
        /*00a0*/                   HFMA2.MMA R3, -RZ, RZ, 0, 0 ;
        /*00b0*/                   HGMMA.64x16x16.F32 R24, gdesc[UR4], RZ, !UPT ;
        /*00c0*/                   UTMALDG.2D [UR8], [UR4] ;
        /*00d0*/                   UBLKCP.S.G [UR8], [UR4], UR6 ;
        /*00e0*/                   UTMACMDFLUSH ;
        /*00f0*/                   LDGSTS.E.BYPASS.128 [R5], desc[UR4][R2.64] ;
        /*0100*/                   REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR4][R2.64], R0 ;
        /*0110*/                   ATOMS.POPC.INC.32 RZ, [UR4] ;
        /*0120*/                   NOP ;
    """
    c = census(text)
    assert c.global_load_widths == {8: 1, 32: 2, 64: 1, 128: 1}
    assert c.global_store_widths == {16: 1}
    assert c.local_loads == 1 and c.local_stores == 1
    assert c.widths("LDL") == {64: 1} and c.widths("STL") == {128: 1}
    assert c.ldmatrix_ops == 1 and c.shared_loads == 1
    assert c.shared_load_widths == {128: 1}
    assert c.tensor_core_ops == 1
    assert c.opcodes["HGMMA.64x16x16.F32"] == 1  # lower-case shape kept whole
    assert c.tma_ops == 2
    assert c.cp_async_ops == 1
    assert c.atomics == 2
    assert c.total == 18


def test_spills_from_log_parses_ptxas_lines():
    log = (
        "ptxas info    : 0 bytes gmem\n"
        "ptxas info    : Compiling entry function 'spill' for 'sm_80'\n"
        "ptxas info    : Function properties for spill\n"
        "ptxas         .     424 bytes stack frame, 484 bytes spill stores, 572 bytes spill loads\n"
        "ptxas info    : Used 32 registers, used 1 barriers, 2048 bytes smem, 360 bytes cmem[0]\n"
        "ptxas info    : Compile time = 1.0 ms\n"
    )
    info = spills_from_log(log)["spill"]
    assert (info.stack_frame, info.spill_stores, info.spill_loads) == (424, 484, 572)
    assert (info.registers, info.barriers, info.shared) == (32, 1, 2048)
    assert info.spills
    assert spills_from_log("no ptxas here") == {}


@pytest.mark.parametrize(
    ("arch", "block", "regs", "smem", "blocks", "warps", "fraction", "limiter"),
    [
        ("sm_90", 256, 32, 0, 8, 64, 1.0, "threads"),
        ("sm_90", 256, 128, 0, 2, 16, 0.25, "registers"),
        ("sm_90", 256, 32, 100 * 1024, 2, 16, 0.25, "shared"),
        ("sm_90", 32, 16, 0, 32, 32, 0.5, "blocks"),
        ("sm_80", 128, 72, 0, 7, 28, 28 / 64, "registers"),  # 2304 regs/warp
        ("sm_90", 256, 33, 0, 6, 48, 0.75, "registers"),  # 1056 -> 1280 regs/warp
        ("sm_86", 256, 32, 0, 6, 48, 1.0, "threads"),
        ("sm_89", 64, 32, 0, 24, 48, 1.0, "threads"),
        ("sm_90a", 1024, 65, 0, 0, 0, 0.0, "registers"),  # too many regs for the block
    ],
)
def test_occupancy_known_cases(arch, block, regs, smem, blocks, warps, fraction, limiter):
    occ = theoretical_occupancy(arch, block, regs, smem)
    assert occ.blocks_per_sm == blocks
    assert occ.active_warps == warps
    assert occ.fraction == pytest.approx(fraction)
    assert occ.limiter == limiter


def test_occupancy_shared_over_limit_cannot_launch():
    occ = theoretical_occupancy("sm_86", 128, 32, 100 * 1024)
    assert occ.blocks_per_sm == 0 and occ.limiter == "shared"


def test_occupancy_unknown_arch_raises():
    with pytest.raises(ValueError, match="sm_80"):
        theoretical_occupancy("sm_70", 256, 32, 0)


def test_occupancy_rejects_bad_block_size():
    with pytest.raises(ValueError):
        theoretical_occupancy("sm_90", 2048, 32, 0)


def test_missing_tool_error_lists_places_and_pip_hint():
    with pytest.raises(ToolNotFoundError) as err:
        find_tool("kernelkit-no-such-tool")
    msg = str(err.value)
    assert "pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm" in msg
    assert "/usr/local/cuda/bin" in msg and "PATH" in msg
