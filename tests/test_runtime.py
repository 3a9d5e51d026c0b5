"""CPU tests of the runtime: headers, compile, the disk and memory caches, error messages."""
import multiprocessing as mp
import os
from pathlib import Path

import pytest

pytest.importorskip("cuda.core")

from kernelkit.runtime import cache, compiler, headers  # noqa: E402
from kernelkit.runtime.errors import CompileError, HeadersNotFoundError  # noqa: E402

GOOD = r"""
#include "common.cuh"
template <typename T> __global__ void copy_kernel(T* o, const T* i, kk::i64 n) {
  for (kk::i64 k = kk::global_thread(); k < n; k += kk::grid_threads()) o[k] = i[k];
}
"""
NAMES = ("copy_kernel<float>", "copy_kernel<__half>")


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path / "cache"))
    compiler.clear_memory_cache()
    src = tmp_path / "good.cu"
    src.write_text(GOOD)
    yield src
    compiler.clear_memory_cache()


def test_miss_then_disk_hit_then_memory_hit(fresh):
    b1 = compiler.compile_source(str(fresh), NAMES, "sm_90")
    assert not b1.from_disk and b1.cubin[:4] == b"\x7fELF"
    assert set(b1.symbols) == set(NAMES) and all(m.startswith("_Z") for m in b1.symbols.values())
    assert compiler.compile_source(str(fresh), NAMES, "sm_90") is b1  # memory
    compiler.clear_memory_cache()
    b2 = compiler.compile_source(str(fresh), NAMES, "sm_90")
    assert b2.from_disk and b2.cubin == b1.cubin
    assert cache.info()["entries"] == 1


def test_key_covers_arch_names_options_and_text(fresh, monkeypatch):
    base = compiler.compile_source(str(fresh), NAMES, "sm_90")
    other_arch = compiler.compile_source(str(fresh), NAMES, "sm_80")
    fewer = compiler.compile_source(str(fresh), NAMES[:1], "sm_90")
    lineinfo = compiler.compile_source(str(fresh), NAMES, "sm_90", lineinfo=True)
    assert len({base.key, other_arch.key, fewer.key, lineinfo.key}) == 4
    fresh.write_text(GOOD + "\n// edited\n")
    compiler.clear_memory_cache()
    assert compiler.compile_source(str(fresh), NAMES, "sm_90").key != base.key


def test_lineinfo_env_knob(monkeypatch):
    monkeypatch.setenv("KERNELKIT_LINEINFO", "1")
    assert compiler.lineinfo_enabled()
    monkeypatch.setenv("KERNELKIT_LINEINFO", "0")
    assert not compiler.lineinfo_enabled()


def test_corrupt_entry_is_rebuilt(fresh):
    b1 = compiler.compile_source(str(fresh), NAMES, "sm_90")
    path = cache.entry_path(b1.key)
    data = path.read_bytes()
    path.write_bytes(data[:-100] + b"\0" * 100)  # damaged cubin: digest no longer matches
    assert cache.load(b1.key) is None
    compiler.clear_memory_cache()
    b2 = compiler.compile_source(str(fresh), NAMES, "sm_90")
    assert not b2.from_disk and b2.cubin == b1.cubin
    path.write_bytes(b"garbage")  # not even a header
    assert cache.load(b1.key) is None


def _compile_in_child(args):
    src, cache_dir = args
    os.environ["KERNELKIT_CACHE_DIR"] = cache_dir
    from kernelkit.runtime import compiler as c

    return c.compile_source(src, NAMES, "sm_90").cubin


def test_concurrent_processes_share_one_entry(fresh, tmp_path):
    cache_dir = str(tmp_path / "shared-cache")
    with mp.get_context("spawn").Pool(4) as pool:
        cubins = pool.map(_compile_in_child, [(str(fresh), cache_dir)] * 8)
    assert len(set(cubins)) == 1
    entries = list(Path(cache_dir).glob("kernels/*/*.kkc"))
    leftovers = list(Path(cache_dir).glob("kernels/*/.tmp-*"))
    assert len(entries) == 1 and not leftovers


def test_compile_error_shows_file_and_line(tmp_path, fresh):
    bad = tmp_path / "broken.cu"
    bad.write_text("__global__ void k(float* o) {\n  o[0] = undefined_name;\n}\n")
    with pytest.raises(CompileError) as ei:
        compiler.compile_source(str(bad), ("k",), "sm_90")
    msg = str(ei.value)
    assert "broken.cu(2)" in msg and "undefined_name" in msg and "sm_90" in msg


def test_cache_clear_and_info(fresh):
    compiler.compile_source(str(fresh), NAMES, "sm_90")
    info = cache.info()
    assert info["entries"] == 1 and info["bytes"] > 0 and info["path"].endswith("cache")
    assert cache.clear() == 1
    assert cache.info()["entries"] == 0


def test_headers_bundled_or_include_dirs(monkeypatch, tmp_path):
    headers.include_dirs.cache_clear()
    monkeypatch.setattr(headers, "nvrtc_version", lambda: (13, 5))
    assert headers.header_options() == {"use_bundled_headers": True}
    monkeypatch.setattr(headers, "nvrtc_version", lambda: (13, 0))
    inc = tmp_path / "cuda" / "include"
    (inc / "cccl").mkdir(parents=True)
    (inc / "cuda_fp16.h").write_text("")
    monkeypatch.setattr(headers, "_candidate_include_dirs", lambda: [("test", inc)])
    assert headers.header_options() == {"include_path": [str(inc), str(inc / "cccl")]}
    headers.include_dirs.cache_clear()


def test_missing_headers_error_lists_search(monkeypatch, tmp_path):
    headers.include_dirs.cache_clear()
    monkeypatch.setattr(headers, "nvrtc_version", lambda: (13, 0))
    monkeypatch.setattr(headers, "_candidate_include_dirs",
                        lambda: [("$CUDA_HOME/include", tmp_path / "nope"), ("/usr/local/cuda/include", tmp_path / "no2")])
    with pytest.raises(HeadersNotFoundError) as ei:
        headers.header_options()
    assert "$CUDA_HOME/include" in str(ei.value) and str(tmp_path / "no2") in str(ei.value)
    headers.include_dirs.cache_clear()


def test_fast_launch_packs_arguments_as_the_parameter_struct():
    """The C launch shim (built at install wherever a C compiler is found) lays each argument at its
    natural alignment: 64-bit Python ints and floats, numpy scalars at their width, bools as a byte."""
    import shutil
    import struct

    import numpy as np

    try:
        from kernelkit.runtime._fastlaunch import pack
    except ImportError:
        if shutil.which("cc") or shutil.which("gcc"):
            raise AssertionError("a C compiler is here but the launch shim was not built: pip install -e .")
        pytest.skip("no C compiler: launches go through cuda.core")
    data, offsets = pack((1, np.int32(-7), np.float32(2.25), -(1 << 40), np.uint8(200), 1.125,
                          np.uint32(4000000000), True, 2**64 - 1))
    assert offsets == (0, 8, 12, 16, 24, 32, 40, 44, 48) and len(data) == 56
    assert struct.unpack_from("<qif", data, 0) == (1, -7, 2.25)
    assert struct.unpack_from("<q", data, 16) == (-(1 << 40),) and data[24] == 200
    assert struct.unpack_from("<dI", data, 32) == (1.125, 4000000000) and data[44] == 1
    assert struct.unpack_from("<Q", data, 48) == (2**64 - 1,)
    with pytest.raises(TypeError, match="numpy scalar"):
        pack(("text",))
    with pytest.raises(ValueError, match="at most"):
        pack(tuple(range(65)))


def test_c_lanes_take_only_the_inputs_they_were_made_for():
    """A C lane is found by its key (dtype, device, parameter; add: both dtypes and devices) and runs only
    for a plain, contiguous torch.Tensor (add: of one shape); anything else gets None, before any
    allocation or launch, so the op takes its checked path."""
    import torch

    from kernelkit.runtime import lanes

    if not lanes.AVAILABLE:
        pytest.skip("no C launch shim or no CUDA build of torch: every call takes the checked path")

    class Loaded:  # what make_lane reads of a loaded kernel
        def __init__(self, handle):
            self.handle = handle

    lane = lanes.make_lane((Loaded(0x1000), Loaded(0x2000)), ("k0", "k1"), 0, 4, ((256, 0), (128, 0)), 1 << 25)
    assert type(lane).__name__ == "PyCapsule"
    with pytest.raises(ValueError, match="element size"):
        lanes.make_lane((Loaded(1), Loaded(2)), ("k0", "k1"), 0, 3, ((256, 0), (128, 0)))
    x = torch.ones(6, 5)  # a CPU tensor: get_device() is -1, so the keys below match it
    unary = {(torch.float32, -1, "p"): lane}
    assert lanes.run_unary({}, x, "p") is None  # no lane for this kind
    assert lanes.run_unary(unary, x, "q") is None  # a lane for another parameter
    assert lanes.run_unary(unary, x.half(), "p") is None  # ... for another dtype
    assert lanes.run_unary(unary, x.t(), "p") is None  # not contiguous
    assert lanes.run_unary(unary, torch.nn.Parameter(x), "p") is None  # not a plain tensor
    assert lanes.run_unary(unary, "x", "p") is None
    binary = {(torch.float32, torch.float32, -1, -1): lane}
    assert lanes.run_binary(binary, x, x.reshape(5, 6)) is None  # shapes differ
    assert lanes.run_binary(binary, x, x.half()) is None
    assert lanes.run_binary(binary, x, x.t().contiguous().t()) is None
    assert lanes.run_binary({}, x, x) is None
    axpy = binary
    y = torch.ones(6, 5)
    assert lanes.run_axpy(axpy, 2.0, x, y.reshape(5, 6)) is None  # shapes differ
    assert lanes.run_axpy(axpy, True, x, y) is None  # a bool alpha: the checked path decides
    assert lanes.run_axpy(axpy, torch.tensor(2.0), x, y) is None
    assert lanes.run_axpy(axpy, 10**400, x, y) is None  # past a double
    assert lanes.run_axpy(axpy, 2.0, x[:, :4], y[:, :4]) is None  # not contiguous
    assert lanes.run_axpy(axpy, 2.0, y.view(-1)[1:], y.view(-1)[:-1]) is None  # partly overlapping
    assert lanes.run_axpy({}, 2.0, x, y) is None


def test_fixed_lanes_take_only_their_shape_on_a_16_byte_boundary():
    """A fixed lane (a recorded launch) is found by (dtype, device, shape, parameter) and replays only for a
    plain contiguous tensor whose data starts on a 16-byte boundary; anything else gets None."""
    import torch

    from kernelkit.runtime import lanes

    if not lanes.AVAILABLE:
        pytest.skip("no C launch shim or no CUDA build of torch: every call takes the checked path")
    from kernelkit.runtime import _fastlaunch

    args = (0, 1 << 33, 7, 2.5)
    lane = _fastlaunch.make_fixed(0x1000, (3, 1, 1), (128, 1, 1), 0, 0, args, 1, 0, None, "k")
    assert type(lane).__name__ == "PyCapsule"
    with pytest.raises(ValueError, match="two argument indices"):
        _fastlaunch.make_fixed(0x1000, (3, 1, 1), (128, 1, 1), 0, 0, args, 1, 1, None, "k")
    with pytest.raises(ValueError, match="64-bit"):
        _fastlaunch.make_fixed(0x1000, (3, 1, 1), (128, 1, 1), 0, 0, args, 3, 0, None, "k")
    x = torch.ones(64)
    assert x.data_ptr() % 16 == 0
    found = {lanes.fixed_key(x, -1): lane}
    assert lanes.run_fixed({}, x, -1) is None
    assert lanes.run_fixed(found, x, 0) is None  # another parameter
    assert lanes.run_fixed(found, x, [-1]) is None  # an unhashable one
    assert lanes.run_fixed(found, torch.ones(65), -1) is None  # another shape
    assert lanes.run_fixed(found, x.double(), -1) is None
    off = torch.ones(65)[1:]  # x's shape, 4 bytes past a 16-byte boundary
    assert lanes.fixed_key(off, -1) in found and lanes.run_fixed(found, off, -1) is None
    wide = torch.ones(64, 2)[:, 0]  # x's shape, not contiguous
    assert lanes.fixed_key(wide, -1) in found and lanes.run_fixed(found, wide, -1) is None
    assert lanes.run_fixed(found, torch.nn.Parameter(x), -1) is None


def test_gpus_older_than_sm80_are_refused_with_one_clear_error():
    """check_supported is the check get_kernel makes before the first kernel of a device is compiled."""
    from kernelkit.runtime import KernelkitError, UnsupportedDeviceError, check_supported

    for major, minor in ((8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (12, 0)):
        check_supported(major, minor, "cuda:0 (a supported GPU)")
    for major, minor in ((7, 5), (7, 0), (6, 1)):
        with pytest.raises(UnsupportedDeviceError) as ei:
            check_supported(major, minor, "cuda:1 (Tesla T4)")
        msg = str(ei.value)
        assert isinstance(ei.value, KernelkitError) and "\n" not in msg
        assert "cuda:1 (Tesla T4)" in msg and f"{major}.{minor}" in msg and f"sm_{major}{minor}" in msg
        assert "8.0 or later" in msg


def test_header_search_asks_pathfinder_then_usr_local_cuda(monkeypatch):
    import cuda.pathfinder

    monkeypatch.setattr(cuda.pathfinder, "find_nvidia_header_directory", lambda lib: f"/opt/found/{lib}")
    dirs = headers._candidate_include_dirs()
    assert [str(d) for _, d in dirs] == ["/opt/found/cudart", "/usr/local/cuda/include"]
    monkeypatch.setattr(cuda.pathfinder, "find_nvidia_header_directory", lambda lib: None)
    assert [d for _, d in headers._candidate_include_dirs()][0] is None
