"""The operator families, a package each with one module per op; importing this registers every ladder.

Each op module lists its public functions in ``__all__``; they are re-exported here and from
``kernelkit`` itself, so adding an op is adding its module (no list to edit elsewhere).
"""
import importlib
import pkgutil

__all__: list[str] = []

for _family in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _family.name.startswith("_") or not _family.ispkg:
        continue
    _pkg = importlib.import_module(f"{__name__}.{_family.name}")
    for _m in sorted(pkgutil.iter_modules(_pkg.__path__), key=lambda m: m.name):
        if _m.name.startswith("_"):
            continue
        _mod = importlib.import_module(f"{_pkg.__name__}.{_m.name}")
        for _name in getattr(_mod, "__all__", []):
            globals()[_name] = getattr(_mod, _name)
            __all__.append(_name)
