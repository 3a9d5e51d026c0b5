"""The norms' host-side tables, without a GPU: every bulk-copy configuration is launchable on sm_90
(shared memory, whole vectors per copy, 16-byte copies) and the table picks what it claims."""
import pytest

torch = pytest.importorskip("torch")

import kernelkit  # noqa: E402,F401  (registers the ops)
from kernelkit.ops.reduction import norm  # noqa: E402

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
    from kernelkit.ops.reduction import _rows as _rowwise

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


def test_4096_element_layer_norm_rows_staged_up_to_staged_max_rows(monkeypatch):
    """fp16 layer_norm rows of 2K-4K elements run the staged persistent kernel up to STAGED_MAX_ROWS rows
    and the tight kernel a CTA a row (weight and bias read per row) beyond; bf16 stays staged at any
    row count, fp16 rms_norm stages only within norm.STAGED_RMS_ROWS (and keeps its early weight reads
    outside), and the plan cache keeps the row ranges apart."""
    monkeypatch.setattr(norm.NAMES, "load", lambda name, dtype, dev: name)  # the name, not a GPU kernel
    from kernelkit.ops.reduction import _rows as _rowwise

    for mod in (norm, _rowwise):  # an sm_90 device, as far as the plan asks
        monkeypatch.setattr(mod, "has_clusters", lambda dev: True)
    monkeypatch.setattr(norm, "_plans", {})
    fast = next(v for v in norm.OPS["layer_norm"].variants if v.name == "fast")
    cfg = (128, 4, 1)
    limit = norm.STAGED_MAX_ROWS[torch.float16]
    for len_ in (4096, 2056):
        name, got = norm._plan(fast, torch.float16, 0, len_, True, False, limit)
        assert name == norm._staged_name(torch.float16, cfg) and got == (*cfg, "staged")
        name, got = norm._plan(fast, torch.float16, 0, len_, True, False, limit + 1)
        assert name == norm._row_read_name(torch.float16, cfg) and got == cfg
        assert name.endswith(", false, false>")  # neither early weight reads nor staging
        name, _ = norm._plan(fast, torch.bfloat16, 0, len_, True, False, 10 * limit)
        assert name == norm._staged_name(torch.bfloat16, cfg)
        lo, hi = norm.STAGED_RMS_ROWS[torch.float16]
        for rows in (lo - 1, hi + 1, limit):  # rms_norm outside its range: early weight reads
            name, got = norm._plan(fast, torch.float16, 0, len_, True, True, rows)
            assert name == norm.row_name("norm_rows", torch.float16, cfg, True, False) and got == cfg
        for rows in (lo, 4096, hi):  # inside: staged
            name, got = norm._plan(fast, torch.float16, 0, len_, True, True, rows)
            assert name == norm._staged_name(torch.float16, cfg) and got == (*cfg, "staged")
        name, got = norm._plan(fast, torch.bfloat16, 0, len_, True, True, 4096)  # bf16 rms_norm: never
        assert "true, false, false, true>" not in name and got == cfg
    # every kernel the plan may pick is in the fast rung's list (so it is compiled and its SASS checked)
    names = {k.name for k in norm._kernels("fast", torch.float16)}
    assert {norm._staged_name(torch.float16, cfg), norm._row_read_name(torch.float16, cfg)} <= names


def test_cluster_rows_pick_fp16_rows_of_32k_to_64k():
    """norm.CLUSTER_ROWS: fp16 aligned rows longer than CLUSTER_ROWS_FROM up to 64K take the tight
    register-tile clusters; other dtypes and lengths fall through to the shared-memory / bulk forms; the
    configuration is compiled with the fast rung (a spare of its table)."""
    cfg = norm.CLUSTER_ROWS[torch.float16][65536]
    assert norm._cluster_rows_for(torch.float16, 65536) == cfg
    assert norm._cluster_rows_for(torch.float16, 40000) == cfg
    assert norm._cluster_rows_for(torch.float16, norm.CLUSTER_ROWS_FROM) is None
    assert norm._cluster_rows_for(torch.float16, 65537) is None
    assert norm._cluster_rows_for(torch.bfloat16, 65536) is None
    assert norm._cluster_rows_for(torch.float32, 65536) is None  # layer_norm
    fp32 = norm.CLUSTER_ROWS_RMS[torch.float32][65536]
    assert norm._cluster_rows_for(torch.float32, 65536, rms=True) == fp32
    assert norm._cluster_rows_for(torch.float16, 65536, rms=True) == cfg
    assert norm._cluster_rows_for(torch.float32, norm.CLUSTER_ROWS_FROM, rms=True) is None
    ln32 = norm.CLUSTER_ROWS_LN[torch.float32][32768]  # fp32 layer_norm rows of 31K-32K
    assert norm._cluster_rows_for(torch.float32, 32768) == ln32 == norm._cluster_rows_for(torch.float32, 31748)
    assert norm._cluster_rows_for(torch.float32, 24576) is None  # the one-CTA tile (a half-empty cluster is slower)
    assert norm._cluster_rows_for(torch.float32, norm.CLUSTER_ROWS_LN_FROM) is None
    assert norm._cluster_rows_for(torch.float32, 32768, rms=True) is None
    assert norm._cluster_rows_for(torch.float16, 32768) is None
    assert ln32[0] * ln32[1] * 4 * ln32[2] == 32768
    assert norm._cluster_rows_name(torch.float32, ln32) in {k.name for k in norm._kernels("fast", torch.float32)}
    assert fp32[0] * fp32[1] * 4 * fp32[2] == 65536
    assert norm._cluster_rows_name(torch.float32, fp32) in {k.name for k in norm._kernels("fast", torch.float32)}
    g, v, c = cfg
    assert g * v * 8 * c == 65536
    names = {k.name for k in norm._kernels("fast", torch.float16)}
    assert {norm._cluster_rows_name(torch.float16, cfg, dyn) for dyn in (True, False)} <= names
    assert norm._cluster_rows_name(torch.float16, cfg).startswith("kk::norm_rows_dyn<")  # rows handed out


def test_handout_counters_one_buffer_per_device_and_stream(monkeypatch):
    """The handed-out rows' counters: one zeroed buffer per (device, stream), reused by later launches on
    the same stream; devices do not share one even where their stream handles match (each device's
    default stream is handle 0)."""
    from kernelkit.ops.reduction import _rows as _rowwise

    made = []

    class FakeBuf:
        def __init__(self, device):
            self.device = device
            made.append(self)

        def data_ptr(self):
            return 1000 + len(made)

    monkeypatch.setattr(_rowwise, "_handout", {})
    monkeypatch.setattr(_rowwise.torch, "zeros", lambda n, dtype, device: FakeBuf(device))
    handles = {0: 0, 1: 0}
    monkeypatch.setattr(_rowwise, "stream_handle", lambda dev: handles[dev])
    a, b = _rowwise.handout_counters(0), _rowwise.handout_counters(1)
    assert a != b and [m.device for m in made] == ["cuda:0", "cuda:1"]
    assert _rowwise.handout_counters(0) == a and len(made) == 2  # reused
    handles[0] = 77  # another stream on device 0
    assert _rowwise.handout_counters(0) not in (a, b) and len(made) == 3
