"""softmax_handout on the GPU (sm_90): persistent clusters taking rows handed out at run time, with and
without the next row prefetched into L2, at random and prime lengths in clusters of 2 to 16, every dtype,
rows at every alignment (x and out at the same phase and at another), more rows than resident clusters and
fewer, against float64 with NaN-poisoned outputs whose guard elements must stay NaN; special values; the
handout counter back at zero after every launch (and a CUDA graph's replays); the same bits every run."""
import random

import pytest
import torch

import kernelkit
from kernelkit import reference
from kernelkit.ops.reduction import softmax as sm
from kernelkit.ops.reduction._rows import WIDE_CLUSTER, cdiv, handout_counters, per_vec, row_form, window_len
from gpu_helpers import assert_close, check_guarded as check, guarded_out, random_input

pytestmark = pytest.mark.gpu

DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@pytest.fixture(autouse=True)
def sm90():
    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("thread-block clusters need sm_90")


def tile(dtype, len_, form, cluster, prefetch):
    """A handed-out tile of `cluster` CTAs at 4 vectors a thread holding rows of len_ in form (None past
    1024 threads)."""
    vectors = cdiv(window_len(len_, dtype, form), per_vec(dtype))
    threads = max(64, 32 * cdiv(cdiv(vectors, cluster * 4), 32))
    if threads > 1024:
        return None
    return sm.SoftmaxTile(threads, cdiv(cdiv(vectors, cluster), threads), cluster, handout=True, prefetch=prefetch)


def counter_is_zero():
    torch.cuda.synchronize()
    return all(int(b.item()) == 0 for b in handout_counters.buffers.values())


def lengths():
    rng = random.Random(25)
    return (4099, 24593, 50021, 100003, 151937, 262139) + tuple(sorted(rng.randrange(2049, 270000) for _ in range(2)))


def form_of(dtype, len_, xo, oo):
    """row_form of x and out views xo and oo elements into 16-byte aligned buffers."""
    e = dtype.itemsize
    return row_form(len_, dtype, xo * e, oo * e)


def planned():
    """(dtype, len, rows, x offset, out offset, configuration, form) of the random-length test."""
    out = []
    for dtype in DTYPES:
        for i, len_ in enumerate(lengths()):
            for cluster in (2, 4, 8, WIDE_CLUSTER):
                xo, oo = ((0, 0), (3, 3), (1, 6))[(i + cluster) % 3]  # aligned, same phase, another phase
                form = form_of(dtype, len_, xo, oo)
                cfg = tile(dtype, len_, form, cluster, (i + cluster // 2) % 2 == 0)
                if cfg is not None and cfg.vecs * per_vec(dtype) <= 32:
                    rows = max(3, min(300, 2**22 // len_))  # past the resident clusters where rows are short
                    out.append((dtype, len_, rows, xo, oo, cfg, form))
    return out


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d)[6:])
def test_random_and_prime_lengths_every_cluster(dtype):
    for dt, len_, rows, xo, oo, cfg, form in planned():
        if dt != dtype:
            continue
        x = random_input(rows * len_, dtype, xo).view(rows, len_)
        buf, out = guarded_out(x.shape, dtype, oo)
        assert row_form(len_, dtype, x.data_ptr(), out.data_ptr()) == form
        kernelkit.softmax(x, -1, out=out, config=cfg)
        check(buf, out, reference.softmax(x, -1), dtype, f"{cfg} len={len_} x+{xo} out+{oo}")
        assert counter_is_zero(), cfg


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d)[6:])
def test_fewer_rows_than_clusters_and_one_row(dtype):
    for rows in (1, 2, 5):
        len_ = 50257
        x = random_input(rows * len_, dtype, 1).view(rows, len_)
        cfg = tile(dtype, len_, row_form(len_, dtype, 2, 2), 4, True)
        buf, out = guarded_out(x.shape, dtype, 1)
        kernelkit.softmax(x, -1, out=out, config=cfg)
        check(buf, out, reference.softmax(x, -1), dtype, f"{cfg} rows={rows}")
        assert counter_is_zero()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d)[6:])
def test_special_values(dtype):
    inf, nan = float("inf"), float("nan")
    for len_, cluster in ((50257, 4), (151936, 16)):
        x = torch.randn(40, len_, device="cuda") * 3
        x[1, len_ // 3] = inf  # NaN row
        x[2, :] = -inf  # NaN row
        x[3, : (len_ * 3) // 4] = -inf  # slices with nothing above -inf: zeros there
        x[4, len_ // 2] = nan
        x[5, ::2] = -inf
        x[6, -1] = 80.0
        x[7] *= 1e4
        x = x.to(dtype)
        cfg = tile(dtype, len_, row_form(len_, dtype, 0, 0), cluster, True)
        got, want = kernelkit.softmax(x, config=cfg), torch.softmax(x, -1)
        assert torch.equal(torch.isnan(got), torch.isnan(want)), (cfg, len_)
        assert_close(got, reference.softmax(x, -1), dtype, f"{cfg} special len={len_}")


def test_same_bits_every_run_and_as_a_cluster_a_row():
    """Which cluster takes a row changes from run to run, its bits do not; at the same tile the one-a-row
    kernel merges the cluster in rank order, the handed-out one in butterfly order: equal to within a
    rounding of the 16-bit result."""
    x = torch.randn(700, 50257, device="cuda", dtype=torch.bfloat16) * 3
    cfg = tile(torch.bfloat16, 50257, row_form(50257, torch.bfloat16, 2, 2), 4, False)
    a = kernelkit.softmax(x, config=cfg)
    for _ in range(3):
        assert torch.equal(a, kernelkit.softmax(x, config=cfg))
    one = kernelkit.softmax(x, config=sm.SoftmaxTile(cfg.threads, cfg.vecs, cfg.cluster))
    assert (a.float() - one.float()).abs().max() <= 2 ** -8 * one.float().abs().max()


def test_cuda_graph_replays_reset_the_counter():
    x = torch.randn(500, 65536, device="cuda", dtype=torch.float16)
    cfg = sm.SoftmaxTile(512, 4, 4, handout=True, prefetch=True)
    out = torch.empty_like(x)
    kernelkit.softmax(x, out=out, config=cfg)  # compiled and its counter made before capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        kernelkit.softmax(x, out=out, config=cfg)
    for _ in range(3):
        out.fill_(float("nan"))
        g.replay()
        assert_close(out, reference.softmax(x, -1), torch.float16, "graph replay")
    torch.cuda.synchronize()
    assert counter_is_zero()
