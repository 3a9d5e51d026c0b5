import pytest
import torch

HAS_GPU = torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords and not HAS_GPU:
            item.add_marker(skip_gpu)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Each pytest run compiles into its own cache unless KERNELKIT_CACHE_DIR is already set."""
    import os

    if "KERNELKIT_CACHE_DIR" not in os.environ:
        monkeypatch.setenv("KERNELKIT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kk-cache"))
