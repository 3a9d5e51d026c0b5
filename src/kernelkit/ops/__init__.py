"""The operator families, one module each; importing this registers every ladder.

Each family module lists its public functions in ``__all__``; they are re-exported here and from
``kernelkit`` itself, so adding a family is adding its module (no list to edit elsewhere).
"""
import importlib
import pkgutil

__all__: list[str] = []

for _m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _m.name.startswith("_"):
        _mod = importlib.import_module(f"{__name__}.{_m.name}")
        for _name in getattr(_mod, "__all__", []):
            globals()[_name] = getattr(_mod, _name)
            __all__.append(_name)
