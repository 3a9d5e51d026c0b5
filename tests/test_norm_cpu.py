"""The norms' host-side tables, without a GPU: every bulk-copy configuration is launchable on sm_90
(shared memory, whole vectors per copy, 16-byte copies) and the table picks what it claims."""
import pytest

torch = pytest.importorskip("torch")

import kernelkit  # noqa: E402,F401  (registers the ops)
from kernelkit.ops import norm  # noqa: E402

SM90_MAX_DYNAMIC_SHARED = 227 * 1024
STATIC_SHARED = 1024  # norm_bulk's own: reductions, slots, mbarriers (640 bytes measured by inspect)


@pytest.mark.parametrize("n", [4, 8])
def test_every_bulk_configuration_fits_and_copies_whole_vectors(n):
    for cfg in set(norm.BULK[n].values()) | set(norm.BULK_SPARES[n]):
        threads, vecs, cluster, stages, staged, chunks = cfg
        assert vecs % chunks == 0, cfg  # each copy holds whole vectors of every thread
        chunk_bytes = threads * vecs * 16 // chunks
        assert chunk_bytes % 16 == 0, cfg  # cp.async.bulk moves multiples of 16 bytes
        shared = norm._bulk_shared(cfg, True, True)
        assert shared == stages * chunk_bytes + (2 * threads * vecs * 16 if staged else 0)
        assert shared + STATIC_SHARED <= SM90_MAX_DYNAMIC_SHARED, (cfg, shared)
        assert cluster in (1, 2, 4, 8) and threads <= 1024


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_bulk_table_picks_the_smallest_holding_configuration(dtype):
    n = 4 if dtype == torch.float32 else 8  # elements per 16-byte vector
    table = norm.BULK[n]
    for cap, cfg in table.items():
        threads, vecs, cluster = cfg[:3]
        assert threads * vecs * n * cluster >= cap, cfg  # the configuration holds its rows
    assert norm._bulk_config(dtype, 40000) == table[65536]
    assert norm._bulk_config(dtype, 65536) == table[65536]
    assert norm._bulk_config(dtype, 65537) == table[131072]
    assert norm._bulk_config(dtype, 131073) is None  # longer rows: welford
    assert norm._bulk_name(dtype, table[65536]).startswith("kk::norm_bulk<")


def test_layer_norm_alone_takes_bulk_copies_for_32k_16bit_rows():
    """16K-32K aligned 16-bit rows: layer_norm by bulk copies (weight and bias staged), rms_norm and
    fp32 by the register tile; longer rows by the shared bulk table for both."""
    cfg = norm.BULK_LAYER_NORM[8][32768]
    assert norm._bulk_for(torch.float16, 32768, rms=False) == cfg
    assert norm._bulk_for(torch.bfloat16, 20000, rms=False) == cfg
    assert norm._bulk_for(torch.float16, 16384, rms=False) is None
    assert norm._bulk_for(torch.float16, 32768, rms=True) is None
    assert norm._bulk_for(torch.float32, 32768, rms=False) is None
    assert norm._bulk_for(torch.float16, 65536, rms=True) == norm.BULK[8][65536]
    assert cfg in norm.BULK_SPARES[8]  # compiled, claim-checked and GPU-tested with the rung


def test_dynamic_shared_memory_is_opted_in_at_48k(monkeypatch):
    """48 KB of ring with no weight or bias staged (16K-32K 16-bit layer_norm rows without them) plus
    the kernel's static shared memory is past the default limit: the opt-in must be made for it too
    (it was skipped at <= 48 KB and the launch failed with CUDA_ERROR_INVALID_VALUE)."""
    pytest.importorskip("cuda.bindings")
    from cuda.bindings import driver
    from kernelkit.ops import _rowwise

    cfg = norm.BULK_LAYER_NORM[8][32768]
    shmem = norm._bulk_shared(cfg, False, False)
    assert shmem == 48 * 1024  # the case that failed
    calls = []
    monkeypatch.setattr(driver, "cuKernelSetAttribute",
                        lambda attr, n, handle, dev: calls.append(n) or (driver.CUresult.CUDA_SUCCESS,))
    monkeypatch.setattr(driver, "CUdevice", lambda dev: dev)

    class FakeKernel:
        handle = object()

    k = FakeKernel()
    _rowwise.allow_shared(k, shmem, 0)
    _rowwise.allow_shared(k, shmem, 0)  # cached: asked once per kernel and size
    _rowwise.allow_shared(k, 0, 0)  # nothing to opt into
    assert calls == [shmem]
