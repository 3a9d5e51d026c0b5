"""The norms' launch machinery without a GPU: the opt-in to dynamic shared memory at 48 KB, the handout
counters (a buffer per device and stream), each kernel kind's claims, the lanes (their key of the normalized
shape, what they launch against the checked path, what they leave to it, none for CPU tensors, a runner per
row form) and the staged bulk ring's shared-memory stores in its compiled SASS."""
import pytest

torch = pytest.importorskip("torch")

from kernelkit.ops.reduction import norm  # noqa: E402
from kernelkit.ops.reduction._rows import ALIGNED, WINDOW_IN, HandoutCounters, per_vec  # noqa: E402
from kernelkit.ops.reduction.norm_configs import BulkRing, NormPacked, NormTile, SmemRows  # noqa: E402
from norm_cpu_helpers import BF16, DTYPES, F16, F32, A, W, WI  # noqa: E402


def test_dynamic_shared_memory_is_opted_in_at_48k(monkeypatch):
    """48 KB of ring with no weight or bias staged plus the kernel's static shared memory is past the default
    limit: the opt-in is made for it too."""
    pytest.importorskip("cuda.bindings")
    from cuda.bindings import driver

    from kernelkit.runtime import allow_shared

    shmem = BulkRing(1024, 4, 1, 3, True, 4).shared_bytes(False, False)
    assert shmem == 48 * 1024  # the case that once failed to launch
    calls = []
    monkeypatch.setattr(driver, "cuKernelSetAttribute",
                        lambda attr, n, handle, dev: calls.append(n) or (driver.CUresult.CUDA_SUCCESS,))
    monkeypatch.setattr(driver, "CUdevice", lambda dev: dev)

    class FakeKernel:
        handle = object()

    k = FakeKernel()
    allow_shared(k, shmem, 0)
    allow_shared(k, shmem, 0)  # asked once per kernel and size
    allow_shared(k, 0, 0)  # nothing to opt into
    assert calls == [shmem]


def test_handout_counters_one_buffer_per_device_and_stream():
    """One zeroed buffer per (device, stream), allocated on that device and reused by later launches on the
    same stream; devices never share one even where their stream handles match (every device's default
    stream is handle 0)."""
    made = []

    class FakeBuf:
        def __init__(self, dev):
            self.device = f"cuda:{dev}"
            made.append(self)

        def data_ptr(self):
            return 1000 + len(made)

    handles = {0: 0, 1: 0}
    counters = HandoutCounters(alloc=FakeBuf, stream=lambda dev: handles[dev])
    a, b = counters(0), counters(1)
    assert a != b and [m.device for m in made] == ["cuda:0", "cuda:1"]
    assert counters(0) == a and len(made) == 2  # reused
    handles[0] = 77  # another stream on device 0
    assert counters(0) not in (a, b) and len(made) == 3
    assert set(counters.buffers) == {(0, 0), (1, 0), (0, 77)}


def test_kernel_claims_of_each_kind():
    """Register tiles: 128-bit loads, stores of 128 bits (window: partial vectors below), 32-bit pair stores
    out of phase; staged ones claim their asynchronous copies, handed-out ones their atomic; packed rows
    claim the copies in and 128-bit stores out; norm_smem claims bulk copies."""
    k = NormTile(512, 4, 2, staged=True, handout=True).kernel(F16, W)
    assert (k.load_bits, k.store_bits, k.sass, k.min_sm) == (128, 128, ("LDGSTS", "ATOMG"), 90)
    assert NormTile(32, 4).kernel(BF16, WI).store_bits == 32 and NormTile(32, 4).kernel(F32, A).sass == ()
    assert NormPacked(8, 4).kernel(F16, A).sass == ("LDGSTS",) and NormPacked(8, 4).kernel(F16, A).store_bits == 128
    assert SmemRows(1024, 2, 4, 7, 1).kernel(BF16).sass == ("UBLKCP",)


def test_per_vec():
    assert [per_vec(d) for d in DTYPES] == [4, 8, 8]


# ---- the lanes -----------------------------------------------------------------------------------
def test_the_lane_key_of_normalized_shape():
    """An int for one dim, a tuple for several, from ints, tuples, lists and torch.Size of plain ints;
    None (the checked path) for anything the checked path could read otherwise or refuses."""
    import numpy as np

    key = norm.lane_key
    assert key(4096) == key((4096,)) == key([4096]) == key(torch.Size([4096])) == 4096
    assert key((8, 512)) == key([8, 512]) == key(torch.Size([8, 512])) == (8, 512)
    for bad in ((), [], (4096.0,), 4096.0, True, (True,), np.int64(4096), (np.int64(4096),), "4096", None):
        assert key(bad) is None, bad


def _recording_form(record):
    """A fake form(vec): runners that record (vec, rows, args) instead of launching."""
    def form(vec):
        return lambda r, args: record.append((vec, r, args))
    return form


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rms", (False, True))
def test_the_lane_launches_what_the_checked_path_launches(dtype, rms):
    """build_lane's lane on CPU tensors with a recording form: the checked path's alignment test over x,
    out, weight and bias, its arguments (pointers, 0 for an absent weight or bias, rows, length,
    np.float32 eps, np.int32 rms) and output layout, for weight and bias present or not and views
    starting off a 16-byte boundary."""
    import numpy as np

    from kernelkit.ops.reduction._rows import row_form

    dev = torch.device("cpu")
    for ns in (4096, 1000, 7, (4, 24)):
        shape = (ns,) if isinstance(ns, int) else ns
        len_ = int(np.prod(shape))
        for has_w, has_b in ((True, True), (True, False), (False, False), (False, True)):
            if rms and has_b:
                continue
            record = []
            lane = norm.build_lane(dtype, dev, ns, has_w, has_b, rms, _recording_form(record))
            for rows, offset, woff in ((1, 0, 0), (3, 0, 0), (5, 1, 0), (2, 0, 1), (6, 8, 8)):
                x = torch.randn(rows * len_ + offset).to(dtype)[offset:].view(rows, *shape)
                w = torch.randn(len_ + woff).to(dtype)[woff:].view(shape) if has_w else None
                b = torch.randn(len_ + woff).to(dtype)[woff:].view(shape) if has_b else None
                for eps in ((None,) if rms else ()) + (1e-5, 0.25, 0.0, -0.0, 1e-5):
                    out = lane(x, w, b, eps)
                    assert out.shape == x.shape and out.dtype == dtype
                    assert out.stride() == torch.empty(x.shape).stride()
                    wp, bp = (0 if t is None else t.data_ptr() for t in (w, b))
                    want_eps = np.float32(torch.finfo(torch.float32).eps if eps is None else eps)
                    args = (x.data_ptr(), out.data_ptr(), wp, bp, rows, len_, want_eps, np.int32(rms))
                    vec = row_form(len_, dtype, x.data_ptr(), out.data_ptr(), wp, bp)
                    got_vec, got_rows, got_args = record[-1]
                    assert (got_vec, got_rows) == (vec, rows)
                    assert got_args == args and [type(a) for a in got_args] == [type(a) for a in args]
                    assert np.signbit(got_args[6]) == np.signbit(args[6])


@pytest.mark.parametrize("rms", (False, True))
def test_the_lane_lets_through_what_it_does_not_take(rms):
    """None (the checked path, which raises or copies) for: x not ending in the normalized shape, x empty
    or not contiguous, a weight or bias of another dtype, shape, or layout, or not a plain tensor, eps
    not a float (layer_norm's None included); a Parameter weight is taken."""
    record = []
    lane = norm.build_lane(F32, torch.device("cpu"), 64, True, not rms, rms, _recording_form(record))
    x, w = torch.randn(3, 64), torch.randn(64)
    b = None if rms else torch.randn(64)
    assert lane(x, w, b, 1e-5) is not None
    assert lane(x, torch.nn.Parameter(w), b, 1e-5) is not None
    bad_calls = [
        (torch.randn(3, 65), w, b, 1e-5), (torch.randn(64, 3).t(), w, b, 1e-5), (torch.randn(0, 64), w, b, 1e-5),
        (torch.randn(()), w, b, 1e-5), (x, w.double(), b, 1e-5), (x, w.half(), b, 1e-5), (x, torch.randn(65), b, 1e-5),
        (x, torch.randn(1, 64), b, 1e-5), (x, torch.randn(128)[::2], b, 1e-5), (x, w.numpy(), b, 1e-5),
        (x, w, b, 1), (x, w, b, "1e-5"), (x, w, b, torch.tensor(1e-5)),
    ]
    if not rms:
        bad_calls += [(x, w, b.double(), 1e-5), (x, w, torch.randn(128)[::2], 1e-5), (x, w, b, None)]
    n = len(record)
    for args in bad_calls:
        assert lane(*args) is None, [getattr(a, "shape", a) for a in args]
    assert len(record) == n  # nothing launched


def test_cpu_tensors_make_no_lane():
    from kernelkit.ops._shared.plans import clear_plans

    clear_plans()
    x, w = torch.randn(2, 64), torch.randn(64)
    with pytest.raises(ValueError, match="CUDA tensor"):
        norm.layer_norm(x, (64,), w, w)
    with pytest.raises(ValueError, match="CUDA tensor"):
        norm.rms_norm(x, (64,), w)
    assert not norm._lanes[False] and not norm._lanes[True]


def test_the_lane_asks_a_form_once_per_row_form():
    """The lane keeps a runner per row form and asks the form once for each, whatever the row count."""
    asked = []

    def form(vec):
        asked.append(vec)
        return lambda r, args: None

    lane = norm.build_lane(F16, torch.device("cpu"), 4096, False, False, False, form)
    for rows in (1, 8192, 8193, 20000):
        assert lane(torch.empty(rows, 4096, dtype=F16), None, None, 1e-5) is not None
    x = torch.empty(3 * 4096 + 1, dtype=F16)[1:].view(3, 4096)
    assert lane(x, None, None, 1e-5) is not None
    assert asked == [ALIGNED, WINDOW_IN]


@pytest.mark.parametrize("dtype", [F32, BF16])
def test_bulk_ring_stages_weight_and_bias_with_shared_stores(dtype):
    """The staged bulk ring copies each thread's weight and bias vectors into shared memory with shared
    stores (STS.128), and its global stores (STG.E.128) are the output's alone, as in the unstaged ring:
    writing the staging through the row tile's aligned store emitted st.global on shared addresses, which
    faults on the GPU ("operation not supported on global/shared address space")."""
    pytest.importorskip("cuda.core")
    from kernelkit.analyze.sass import census, disassemble
    from kernelkit.runtime import compile_source

    def stores(staged):
        k = BulkRing(1024, 2, 1, 3, staged, 2).kernel(dtype)
        build = compile_source(k.source, (k.name,), "sm_90")
        ops = census(disassemble(build.cubin)[build.mangled(k.name)]).opcodes
        return ops.get("STG.E.128", 0), ops.get("STS.128", 0)

    (stg_staged, sts_staged), (stg_plain, sts_plain) = stores(True), stores(False)
    assert stg_staged == stg_plain > 0
    assert sts_staged >= sts_plain + 2 * 2  # weight and bias: 2 vectors a thread each
