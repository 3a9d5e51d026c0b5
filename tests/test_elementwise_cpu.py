"""The element-wise family without a GPU: its layout (one op a module, beside its kernel file), the
registered torch.library ops, the config surface, and the instantiations each rung lists."""
import inspect
import pathlib

import pytest
import torch

import kernelkit
from kernelkit.ops.elementwise import ElementwiseLaunch

OPS = ("gelu", "relu", "add", "saxpy", "invert_colors", "binarize", "normalize_image")
CSRC = pathlib.Path(kernelkit.__file__).parent / "csrc"
# the registered custom ops and their schemas, which torch.compile'd graphs name
SCHEMAS = {
    "gelu_out": "kernelkit::gelu_out(Tensor x, Tensor(a1!) out, str approximate, str? variant) -> ()",
    "relu_out": "kernelkit::relu_out(Tensor x, Tensor(a1!) out, str? variant) -> ()",
    "add_out": "kernelkit::add_out(Tensor a, Tensor b, Tensor(a2!) out, str? variant) -> ()",
    "saxpy_": "kernelkit::saxpy_(float alpha, Tensor x, Tensor(a2!) y, str? variant) -> ()",
    "invert_colors_out": "kernelkit::invert_colors_out(Tensor image, Tensor(a1!) out, str? variant) -> ()",
    "invert_colors_": "kernelkit::invert_colors_(Tensor(a0!) image, str? variant) -> ()",
    "binarize_out": "kernelkit::binarize_out(Tensor image, SymInt threshold, Tensor(a2!) out, str? variant) -> ()",
    "normalize_image_out": "kernelkit::normalize_image_out(Tensor image, Tensor(a1!) out, float[] coef, str layout, "
                           "str? variant) -> ()",
}


@pytest.mark.parametrize("name", OPS)
def test_every_kernel_lives_in_its_ops_own_source(name):
    """Each op's rungs instantiate kernels of csrc/elementwise/<op>.cu only (and of <op>_cute.cu, its CuTe
    rung's), and that file exists."""
    op = kernelkit.get_op(name)
    sources = {k.source for v in op.variants for dt in v.dtypes for p in op.param_combinations()
               for k in v.kernels(dt, **p)}
    assert sources - {f"elementwise/{name}_cute.cu"} == {f"elementwise/{name}.cu"}
    assert (CSRC / "elementwise" / f"{name}.cu").is_file()


@pytest.mark.parametrize("name", OPS)
def test_rungs_list_distinct_instantiations(name):
    """No rung lists one kernel twice for a dtype (every listed instantiation is launched by some input)."""
    op = kernelkit.get_op(name)
    for v in op.variants:
        for dt in v.dtypes:
            for p in op.param_combinations():
                names = [k.name for k in v.kernels(dt, **p)]
                assert len(names) == len(set(names)), (v.name, dt, p, names)


@pytest.mark.parametrize("name,schema", SCHEMAS.items())
def test_custom_ops_keep_their_names_and_schemas(name, schema):
    assert str(getattr(torch.ops.kernelkit, name).default._schema) == schema


@pytest.mark.parametrize("name", OPS)
def test_config_is_a_documented_keyword(name):
    fn = getattr(kernelkit, name)
    param = inspect.signature(fn).parameters["config"]
    assert param.kind is inspect.Parameter.KEYWORD_ONLY and param.default is None
    doc = " ".join(fn.__doc__.split())
    assert "config``: for tuning and tests; the configuration to launch instead of the rule's choice" in doc
    assert "raises ValueError if it cannot run this input" in doc


def test_elementwise_launch_validates_itself():
    assert ElementwiseLaunch(128, 13) == ElementwiseLaunch(block=128, blocks_per_sm=13)
    assert hash(ElementwiseLaunch(256)) == hash(ElementwiseLaunch(256, 0))  # a plan key
    for block in (0, 16, 100, 2048, 256.0, True):
        with pytest.raises(ValueError, match="block must be"):
            ElementwiseLaunch(block)
    for per_sm in (-1, 1.5, None):
        with pytest.raises(ValueError, match="blocks_per_sm"):
            ElementwiseLaunch(256, per_sm)
    with pytest.raises(Exception):  # frozen
        ElementwiseLaunch(256).block = 128


def test_fast_rungs_take_any_alignment():
    """The default rung of every op needs no alignment: offset views run on it."""
    for name in OPS:
        assert kernelkit.get_op(name).default_variant.align == 0


def _lane_caches():
    from kernelkit.ops.elementwise import add, binarize, gelu, invert_colors, relu, saxpy

    return {"add": add.LANES, "saxpy": saxpy.LANES, "invert_colors": invert_colors.SPEC.lanes,
            "binarize": binarize.SPEC.lanes, "gelu": gelu.SPEC.lanes, "relu": relu.SPEC.lanes}


CPU_CALLS = {
    "add": lambda: kernelkit.add(torch.ones(8), torch.ones(8)),
    "saxpy": lambda: kernelkit.saxpy(2.0, torch.ones(8), torch.ones(8)),
    "invert_colors": lambda: kernelkit.invert_colors(torch.zeros(2, 2, 4, dtype=torch.uint8)),
    "binarize": lambda: kernelkit.binarize(torch.zeros(8, dtype=torch.uint8), 3),
    "gelu": lambda: kernelkit.gelu(torch.ones(8)),
    "relu": lambda: kernelkit.relu(torch.ones(8)),
}


@pytest.mark.parametrize("name", CPU_CALLS)
def test_cpu_tensors_raise_and_make_no_lane(name):
    """A plain call on CPU tensors takes the checked path (which raises) every time and leaves no lane."""
    from kernelkit.ops._shared.plans import clear_plans

    clear_plans()
    for _ in range(2):
        with pytest.raises(ValueError, match="must be a CUDA tensor"):
            CPU_CALLS[name]()
    assert not _lane_caches()[name]


def test_lanes_are_dropped_with_the_plans():
    """Every op's lanes live in plan caches: clear_plans() empties them with the plans."""
    from kernelkit.ops._shared.plans import clear_plans

    caches = _lane_caches()
    for cache in caches.values():
        cache["probe"] = None
    clear_plans()
    assert not any(caches.values())
