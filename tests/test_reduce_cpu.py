"""sum, mean, amax, amin on the CPU: the configuration surface and the instantiations each rung lists."""
import itertools

import numpy as np
import pytest
import torch

import kernelkit
from kernelkit.ops._shared.cxx import CXX_TYPE
from kernelkit.ops.reduction.reduce import FULL, ROWS, ROWS_BLOCKS, ROWS_UNROLL, ReduceConfig

DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def test_reduce_config_validates_its_fields():
    assert ReduceConfig(32, 1, 1) and ReduceConfig(1024, 16, 64)
    for bad in ((96, 2, 2), (2048, 2, 2), (16, 2, 2)):
        with pytest.raises(ValueError, match="power of two"):
            ReduceConfig(*bad)
    with pytest.raises(ValueError, match="unroll"):
        ReduceConfig(256, 17, 2)
    with pytest.raises(ValueError, match="blocks_per_sm"):
        ReduceConfig(256, 2, 0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", ("sum", "mean", "amax", "amin"))
def test_the_fast_rung_lists_the_launches_its_rules_choose(op, dtype):
    """The rule's reduce_fast shapes (a whole tensor, rows at each of the rows rule's blocks), the
    warp-per-row kernel and the column kernels, each once per result type: the input's, and fp32 for sum
    and mean of 16-bit inputs (their dtype= argument)."""
    names = [k.name for k in kernelkit.get_op(op).variant("fast").kernels(dtype)]
    assert len(names) == len(set(names))
    wide = op in ("sum", "mean") and dtype != torch.float32
    touts = (CXX_TYPE[dtype], "float") if wide else (CXX_TYPE[dtype],)
    for t in touts:
        for block, unroll in [(FULL.block, FULL.unroll)] + [(b, ROWS_UNROLL) for b in ROWS_BLOCKS]:
            assert sum(f"reduce_fast<{CXX_TYPE[dtype]}, {t}," in n and n.endswith(f", {block}, {unroll}>")
                       for n in names) == 1
        assert sum(f"reduce_warp_rows<{CXX_TYPE[dtype]}, {t}," in n for n in names) == 1
        # the column kernel, rows on 16-byte boundaries or each row's aligned window, once per result type
        for window in ("false", "true"):
            assert sum(f"reduce_cols<{CXX_TYPE[dtype]}, {t}," in n and n.endswith(f", {window}>") for n in names) == 1
        # the fold of rows read in groups, once per result type
        assert sum(f"reduce_cols_fold<{CXX_TYPE[dtype]}, {t}," in n for n in names) == 1
    # the column kernel into fp32 partials (rows read in groups) of both forms, also where no result is fp32
    for window in ("false", "true"):
        assert sum(f"reduce_cols<{CXX_TYPE[dtype]}, float," in n and n.endswith(f", {window}>") for n in names) == 1
    assert sum("reduce_cols<" in n for n in names) == 2 * len(set(touts) | {"float"})
    assert sum("reduce_cols_fold<" in n for n in names) == len(touts)
    finish = [n for n in kernelkit.get_op(op).variant("vector").kernels(dtype) if "reduce_finish" in n.name]
    assert len(finish) == len(touts)
    for v in kernelkit.ladder(op):
        assert v.kernels(dtype), v.name


@pytest.mark.parametrize("op", ("sum", "mean"))
def test_dtype_argument_is_checked_before_anything_runs(op):
    """dtype=, as torch's: a float dtype; anything else raises TypeError naming the op and what is allowed
    (checked before x, so a CPU tensor shows it too)."""
    fn = getattr(kernelkit, op)
    x = torch.randn(8)
    for bad in (torch.float64, torch.int32, torch.bool, torch.complex64):
        with pytest.raises(TypeError, match=rf"{op}: dtype must be float32, float16 or bfloat16 .*got {str(bad)[6:]}"):
            fn(x, dtype=bad)
    for bad in ("float32", 32, float):
        with pytest.raises(TypeError, match=rf"{op}: dtype must be a torch.dtype or None, got"):
            fn(x, dtype=bad)
    for good in DTYPES:  # accepted: the next check is x's (a CPU tensor)
        with pytest.raises(ValueError, match="CUDA tensor"):
            fn(x, dtype=good)
    with pytest.raises(TypeError, match="dtype"):
        kernelkit.amax(torch.randn(8), dtype=torch.float32)  # torch.amax takes no dtype either


def test_reduction_signatures_follow_torch():
    import inspect

    for op in ("sum", "mean"):
        params = inspect.signature(getattr(kernelkit, op)).parameters
        assert list(params)[:3] == ["x", "dim", "keepdim"] and params["dtype"].kind is inspect.Parameter.KEYWORD_ONLY
    for op in ("amax", "amin"):
        assert "dtype" not in inspect.signature(getattr(kernelkit, op)).parameters


# ---- the lane ------------------------------------------------------------------------------------
def test_dim_as_a_key_takes_only_what_the_checked_path_takes_as_such():
    """dim as a key of the call cache and the lanes: None, plain ints and tuples or lists of plain ints;
    not bools, floats or numpy ints (equal and hashing equal to ints, but refused by the checked path)."""
    import numpy as np

    from kernelkit.ops.reduction.reduce import dim_as_key

    assert dim_as_key(None) is None and dim_as_key(1) == 1 and dim_as_key(-1) == -1
    assert dim_as_key((0, 2)) == (0, 2) and dim_as_key([0, 2]) == (0, 2) and dim_as_key(()) == ()
    for bad in (True, 1.0, np.int64(1), (1, True), [0, 1.0], "0", {0}):
        assert dim_as_key(bad) is False, bad


def test_the_result_template_gives_the_checked_paths_layout():
    """empty_like of the lane's template: the shape, dtype and strides of x.new_empty(shape), for shapes
    with size-1 and size-0 dims too."""
    from kernelkit.ops._shared.plans import clear_plans
    from kernelkit.ops.reduction.reduce import result_template

    x = torch.randn(3)
    for dtype in DTYPES:
        for shape in ((), (1,), (5,), (4, 1, 8), (1, 1), (1, 3), (3, 1), (0,), (3, 0, 2), (2, 3, 4), (1, 1, 2)):
            got = torch.empty_like(result_template(dtype, x.device, shape))
            want = x.to(dtype).new_empty(shape)
            assert (got.shape, got.dtype, got.stride()) == (want.shape, want.dtype, want.stride()), shape
    clear_plans()


def test_cpu_tensors_make_no_lane():
    from kernelkit.ops._shared.plans import clear_plans
    from kernelkit.ops.reduction import reduce

    clear_plans()
    for op in ("sum", "mean", "amax", "amin"):
        with pytest.raises(ValueError, match="CUDA tensor"):
            getattr(reduce, op)(torch.randn(4096))
    assert not reduce._lanes


def test_long_column_finishes_go_to_the_fold():
    """The last block of a split column block sums at most TICKET_SPLITS_MAX partial rows; more (a chain
    of L2 round trips 8 rows at a time) go to reduce_cols_fold, unless the fold's grid cannot hold the
    outer slabs."""
    from kernelkit.ops.reduction._reduce_plans import TICKET_SPLITS_MAX, col_split, ticket_finish
    assert ticket_finish(1, 1) and ticket_finish(TICKET_SPLITS_MAX, 1)
    assert not ticket_finish(TICKET_SPLITS_MAX + 1, 1) and not ticket_finish(220, 65535)
    assert ticket_finish(220, 65536)  # the fold's grid y holds 65535 outer slabs
    wave = 132 * 5  # reduce_cols at five blocks an SM on an H100
    assert not ticket_finish(col_split(50257, 3, wave), 1)  # 50257 x 768 bf16, dim 0: 220 splits
    assert ticket_finish(col_split(8192, 32, wave), 1)  # 8192 x 8192 bf16: 20 splits
    assert not ticket_finish(col_split(4097, 17, wave), 1)  # 4097 x 4095 bf16: 38 splits, 5 rounds walked
    assert ticket_finish(col_split(4097, 34, wave), 1)  # 4097 x 4095 fp32: 19 splits


def test_column_split_fills_one_wave():
    """A column reduction splits its rows over the most blocks that keep the grid within one wave of
    resident blocks, each split at least COL_MIN_ROWS rows; a grid of a wave or more is not split."""
    from kernelkit.ops.reduction.reduce import COL_MIN_ROWS, col_split
    wave = 132 * 8
    assert col_split(8192, 64, wave) == 16  # 8192 x 8192 fp32 over dim 0: 64 column blocks of 128 columns
    assert col_split(8192, 32, wave) == 33  # the 16-bit one: 32 column blocks of 256
    for R, tiles in ((8192, 64), (8192, 32), (1000003, 4), (4097, 128), (197, 384), (100, 3), (10**6, 1)):
        k = col_split(R, tiles, wave)
        assert k * tiles <= wave and (k == 1 or R // k >= COL_MIN_ROWS)
        assert k == 1 or (k + 1) * tiles > wave or R // (k + 1) < COL_MIN_ROWS  # no more blocks would fit
    assert col_split(8192, wave, wave) == col_split(8192, 5 * wave + 1, wave) == 1
    assert col_split(100, 3, wave) == 1  # too few rows to split


def test_rows_take_one_round_of_loads_a_thread():
    """The rows rule: the fewest threads (128 to 512) that cover a row in one round of four 16-byte loads,
    2048 threads an SM; the longest rows take ROWS."""
    from kernelkit.ops.reduction.reduce import rows_config
    bf16, fp32 = torch.bfloat16, torch.float32
    assert rows_config(8192, bf16).block == 256 and rows_config(8192, fp32) == ROWS  # 1024 / 2048 vectors
    assert rows_config(12345, bf16).block == 512 and rows_config(4096, fp32).block == 256
    assert rows_config(2049, fp32).block == 256 and rows_config(2049, bf16).block == 128
    assert rows_config(10**6, bf16) == rows_config(10**6, fp32) == ROWS
    for len_ in (2049, 3000, 4097, 8191, 8192, 8193, 16384, 10**5):
        for dtype in DTYPES:
            cfg = rows_config(len_, dtype)
            assert cfg.block in ROWS_BLOCKS and cfg.unroll == ROWS_UNROLL and cfg.block * cfg.blocks_per_sm == 2048
            vecs = -(-len_ * dtype.itemsize // 16)
            assert cfg.block == ROWS_BLOCKS[-1] or cfg.block * cfg.unroll >= vecs  # one round covers the row
            assert cfg.block == ROWS_BLOCKS[0] or cfg.block // 2 * cfg.unroll < vecs  # and no fewer threads do


def test_split_rows_stay_within_one_wave():
    from kernelkit.ops.reduction.reduce import blocks_per_row
    wave = 132 * 4
    assert blocks_per_row(127, 1000003, 4, 512, 4, wave) == 4  # 508 blocks, where 5 a row made 635
    assert blocks_per_row(1, 1 << 27, 4, 1024, 2, 264) == 264
    assert blocks_per_row(5, 100, 4, 512, 4, wave) == 1  # no block without a full round
    for rows in (1, 2, 3, 100, 127, 263, 264, 265, 527, 528, 529, 10000):
        k = blocks_per_row(rows, 10**8, 8, 512, 4, wave)
        assert k >= 1 and (k == 1 or k * rows <= wave) and (k + 1) * rows > wave


def emulate_reduce_cols(x: np.ndarray, base_elems: int, V: int, window: bool, rsplit: int):
    """reduce_cols (sum) over dim 1 of a contiguous (outer, R, inner) x whose first element lies
    ``base_elems`` elements past a 16-byte boundary, thread by thread: the loads each thread makes
    (asserted to be aligned chunks that hold an element of the tensor) and the columns its slots feed."""
    outer, R, inner = x.shape
    flat = x.reshape(-1)
    n = flat.size
    W = (31 if window else 32) * V
    col_blocks = -(-inner // W)
    rps = -(-R // rsplit)
    out = np.zeros((outer, inner))
    for o, cb, split in itertools.product(range(outer), range(col_blocks), range(rsplit)):
        c0 = cb * W
        s = np.zeros((8, 33 * V))
        for ty in range(8):
            r0 = split * rps + ty
            rows = (min(R, (split + 1) * rps) - r0 + 7) // 8 if r0 < R else 0
            first = (o * R + r0) * inner + c0  # element index of the thread's first row at column c0
            p = (base_elems + first) % V if window else 0
            for tx in range(32):
                acc = np.zeros(V)
                if c0 - p + tx * V < inner:
                    for k in range(rows):
                        start = first - p + tx * V + k * 8 * inner  # the chunk's first element
                        assert (base_elems + start) % V == 0
                        assert start + V > 0 and start < n, "a chunk outside the tensor"
                        idx = np.arange(start, start + V)
                        acc += np.where((idx >= 0) & (idx < n), flat[np.clip(idx, 0, n - 1)], np.nan)
                for e in range(V):
                    s[ty, V + tx * V + e - p] = acc[e]
        for i in range(min(W, inner - c0)):
            out[o, c0 + i] += s[:, V + i].sum()
    return out


@pytest.mark.parametrize("V", [4, 8])
def test_column_window_emulation_sums_every_column_once(V):
    """reduce_cols' window form at every phase of the first element, odd and prime widths, split rows:
    each column gets each row once (NaNs from outside the tensor would show), no load leaves the
    tensor's chunks; the aligned form on widths of whole vectors."""
    rng = np.random.default_rng(V)
    for (outer, R, inner), rsplit in (((2, 37, 300), 1), ((1, 100, 31 * V + 1), 3), ((3, 17, 5), 2),
                                      ((1, 64, 2 * 31 * V), 1), ((2, 9, 7 * V + 3), 1)):
        x = rng.standard_normal((outer, R, inner))
        for base in range(V):
            got = emulate_reduce_cols(x, base, V, True, rsplit)
            np.testing.assert_allclose(got, x.sum(1), rtol=1e-12, atol=1e-12)
        if inner % V == 0:
            np.testing.assert_allclose(emulate_reduce_cols(x, 0, V, False, rsplit), x.sum(1), rtol=1e-12, atol=1e-12)


def test_narrow_columns_are_read_in_groups_of_rows_by_rule():
    """col_group, rule by rule: g = 16 / gcd(inner * size, 16) rows where a row's bytes are no multiple of
    16, the window form's lanes would idle by more than 1/8, the groups make two splits of COL_MIN_ROWS,
    and they tile each outer slab."""
    from kernelkit.ops.reduction.reduce import COL_MIN_ROWS, col_group

    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    # 127 columns: 16 of a block's 31 vectors in 16-bit (8 rows of 127 are 127 vectors), 32 of 62 in fp32
    assert col_group(1, 1000003, 127, f16) == col_group(1, 1000003, 127, bf16) == 8
    assert col_group(1, 1000003, 127, f32) == 4
    assert col_group(1, 100003, 129, f32) == 4 and col_group(1, 100003, 129, f16) == 8
    assert col_group(1, 10**6, 1021, f16) == 8  # 1021 of 5 x 248 columns: 18% idle
    assert col_group(1, 10**6, 1021, f32) == 1  # 1021 of 9 x 124: 8% idle
    assert col_group(1, 10**6, 4095, f32) == col_group(1, 10**6, 4095, bf16) == 1  # 3% idle
    assert col_group(1, 10**6, 3, f32) == 4 and col_group(1, 10**6, 6, f16) == 4 and col_group(1, 10**6, 2, f32) == 2
    # rows on 16-byte boundaries already: none grouped
    for inner, dtype in ((768, f16), (8192, f32), (8, f16), (4, f32), (300, f32)):
        assert col_group(1, 10**6, inner, dtype) == 1, (inner, dtype)
    # too few rows for two splits of COL_MIN_ROWS groups
    assert col_group(1, 8 * 2 * COL_MIN_ROWS, 127, f16) == 8
    assert col_group(1, 8 * 2 * COL_MIN_ROWS - 1, 127, f16) == 1
    # several outer slabs: only where the groups tile each one
    assert col_group(3, 8 * 1000, 127, f16) == 8 and col_group(3, 8 * 1000 + 1, 127, f16) == 1
    assert col_group(65535, 8 * 128, 127, f16) == 8 and col_group(65536, 8 * 128, 127, f16) == 1  # grid y


def emulate_grouped_cols(x: np.ndarray, g: int, rsplit: int, scale: float) -> np.ndarray:
    """The grouped plan's pieces (sum) over dim 1 of a contiguous (outer, R, inner) x, in numpy: reduce_cols
    over the (outer, R // g, g * inner) view into partials (outer, rsplit, g * inner) split as the kernel
    splits rows (rps rows a split), read back as (outer, rsplit * g, inner) by the fold, which adds the
    R % g rows past the last group and scales."""
    outer, R, inner = x.shape
    Rg, rem = divmod(R, g)
    flat = x.reshape(-1)
    rps = -(-Rg // rsplit)
    rsplit = -(-Rg // rps)
    partials = np.full(outer * rsplit * g * inner, np.nan)
    for o in range(outer):
        wide = flat[o * R * inner:(o * R + Rg * g) * inner].reshape(Rg, g * inner)
        for s_ in range(rsplit):
            at = (o * rsplit + s_) * g * inner
            partials[at:at + g * inner] = wide[s_ * rps:(s_ + 1) * rps].sum(0)
    P = rsplit * g
    out = np.zeros((outer, inner))
    for o in range(outer):
        part = partials[o * P * inner:(o + 1) * P * inner].reshape(P, inner)
        tail = flat[o * R * inner + Rg * g * inner:][:rem * inner].reshape(rem, inner)
        out[o] = (part.sum(0) + tail.sum(0)) * scale
    return out


def test_grouped_column_plan_emulation_takes_every_row_once():
    """The partial layout the two launches share: each column gets each row once, remainder rows too."""
    from kernelkit.ops.reduction.reduce import col_group

    rng = np.random.default_rng(5)
    for (outer, R, inner), dtype, rsplit in (((1, 1029, 127), torch.float16, 7), ((1, 1027, 127), torch.float32, 3),
                                             ((3, 2048, 37), torch.bfloat16, 5), ((1, 515, 33), torch.float32, 1)):
        g = 16 // np.gcd(inner * dtype.itemsize, 16)
        assert outer == 1 or R % g == 0
        x = rng.standard_normal((outer, R, inner))
        np.testing.assert_allclose(emulate_grouped_cols(x, g, rsplit, 0.5), 0.5 * x.sum(1), rtol=1e-12, atol=1e-12)
    assert col_group(1, 1029, 127, torch.float16) == 8  # the first case is one the rule groups


@pytest.fixture
def stub_reduce_plans(monkeypatch):
    """The column plans built and run on CPU tensors for a device of 660 resident reduce_cols blocks (an
    H100 at five an SM), without clusters (compute capability 8.0; test_column_plans_meet_in_clusters
    sets 9.0): kernels are their names, launches recorded as (name, grid, arguments, cluster)."""
    from kernelkit.ops.reduction import _reduce_plans as rp
    import kernelkit.ops.reduction.reduce  # noqa: F401  (registers the ops the plans read their rungs from)

    launched = []
    monkeypatch.setattr(rp, "get_kernel", lambda src, name, **kw: name)
    monkeypatch.setattr(rp, "resident_blocks", lambda kernel, block, cluster, dev, shmem=0: 660)
    monkeypatch.setattr(rp, "launch", lambda k, grid, block, *args, cluster=1, **kw: launched.append(
        (k, grid, args) if cluster == 1 else (k, grid, args, cluster)))
    monkeypatch.setattr(rp, "_workspace", lambda dev, floats, counters: (1 << 40, 1 << 41))
    monkeypatch.setattr(rp, "compute_capability", lambda dev: 80)
    return rp, launched


def test_column_plans_route_long_finishes_to_the_fold(stub_reduce_plans):
    """50257 x 768 bf16 over dim 0 (3 column blocks, 220 splits) writes fp32 partials without tickets and
    folds them in a second launch; 8192 x 8192 (32 column blocks, 20 splits) finishes in one launch,
    the last block of each column block taking the tickets."""
    rp, launched = stub_reduce_plans
    bf16 = torch.bfloat16
    x = torch.empty(50257, 768, dtype=bf16)
    rp._make_plan("sum", x, (0,), None, None, 0, bf16)(x, torch.empty(768, dtype=bf16))
    (first, grid, args), (fold, _, fold_args) = launched
    assert "reduce_cols<__nv_bfloat16, float," in first and fold.startswith("kk::reduce_cols_fold<")
    assert grid == 3 * 220 and args[3] == 0 and fold_args[3] == 220  # no tickets; the fold reads 220 rows
    launched.clear()
    x = torch.empty(8192, 8192, dtype=bf16)
    rp._make_plan("sum", x, (0,), None, None, 0, bf16)(x, torch.empty(8192, dtype=bf16))
    (only, grid, args), = launched
    assert "reduce_cols<__nv_bfloat16, __nv_bfloat16," in only and grid == 32 * 20 and args[3] == 1 << 41


def test_meet_in_clusters_rule(monkeypatch):
    """Splits meet in a cluster only on sm_90, only as one portable cluster (2 to 8 CTAs), and only where
    a split's main pass is short (at most COL_CLUSTER_ROWS rows), each condition on its own."""
    from kernelkit.ops.reduction import _reduce_plans as rp
    from kernelkit.ops.reduction._reduce_kernels import COL_CLUSTER_MAX, COL_CLUSTER_ROWS

    assert (COL_CLUSTER_MAX, COL_CLUSTER_ROWS) == (8, 512)
    monkeypatch.setattr(rp, "compute_capability", lambda dev: 90)
    assert rp.meet_in_clusters(2, 99, 0) and rp.meet_in_clusters(8, 512, 0)
    assert not rp.meet_in_clusters(1, 99, 0)  # nothing to meet
    assert not rp.meet_in_clusters(9, 99, 0)  # more than a portable cluster
    assert not rp.meet_in_clusters(3, 513, 0)  # a long main pass: the ticket's finish weighs little
    monkeypatch.setattr(rp, "compute_capability", lambda dev: 80)
    assert not rp.meet_in_clusters(2, 99, 0)  # no clusters before sm_90


def test_column_plans_meet_in_clusters(stub_reduce_plans, monkeypatch):
    """On sm_90 the splits of short columns meet in one cluster (reduce_cols_cluster, no workspace);
    long splits, more splits than a cluster holds, and grids that clusters cannot hold at once keep
    reduce_cols' ticket; unsplit columns keep reduce_cols."""
    rp, launched = stub_reduce_plans
    monkeypatch.setattr(rp, "compute_capability", lambda dev: 90)
    resident = {"cluster": 660}
    monkeypatch.setattr(rp, "resident_blocks", lambda kernel, block, cluster, dev, shmem=0:
                        resident["cluster"] if "cluster" in kernel else 660)
    bf16 = torch.bfloat16
    x = torch.empty(64, 197, 768, dtype=bf16)  # 64 x 3 tiles, 3 splits of 66 rows: a cluster of 3
    rp._make_plan("amax", x, (1,), None, None, 0, bf16)(x, torch.empty(64, 768, dtype=bf16))
    (name, grid, args, cluster), = launched
    assert name.startswith("kk::reduce_cols_cluster<__nv_bfloat16, __nv_bfloat16, kk::MaxOp,")
    assert (grid, cluster) == (64 * 3 * 3, 3) and args[2:6] == (197, 768, 3, 66)
    launched.clear()
    resident["cluster"] = 560  # 576 CTAs in clusters of 3 do not fit at once: the ticket
    rp._make_plan("sum", x, (1,), None, None, 0, bf16)(x, torch.empty(64, 768, dtype=bf16))
    (name, grid, args), = launched
    assert name.startswith("kk::reduce_cols<") and grid == 64 * 3 * 3
    launched.clear()
    x = torch.empty(31, 4099, 1021, dtype=bf16)  # 4 splits of 1025 rows: the ticket
    rp._make_plan("sum", x, (1,), None, None, 0, bf16)(x, torch.empty(31, 1021, dtype=bf16))
    (name, grid, args), = launched
    assert name.startswith("kk::reduce_cols<") and args[7] == 4
    launched.clear()
    x = torch.empty(8192, 8192, dtype=bf16)  # 20 splits: the ticket
    rp._make_plan("sum", x, (0,), None, None, 0, bf16)(x, torch.empty(8192, dtype=bf16))
    (name, grid, args), = launched
    assert name.startswith("kk::reduce_cols<") and grid == 32 * 20
    launched.clear()
    x = torch.empty(700, 131072, dtype=bf16)  # 512 column blocks fill the wave: no split
    rp._make_plan("sum", x, (0,), None, None, 0, bf16)(x, torch.empty(131072, dtype=bf16))
    (name, grid, args), = launched
    assert name.startswith("kk::reduce_cols<") and grid == 512
