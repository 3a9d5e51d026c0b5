"""float64 references: what every variant is checked against (tests, judge, benchmarks).

One module per op family (``reference/<family>.py``); every public function of those modules is
re-exported here, so ``kernelkit.reference.gelu`` is the reference of ``kernelkit.gelu``.
"""
import importlib
import pkgutil

from .core import TOLERANCE, mismatches, relative_error

__all__ = ["TOLERANCE", "mismatches", "relative_error"]

for _m in pkgutil.iter_modules(__path__):
    if _m.name != "core":
        _mod = importlib.import_module(f"{__name__}.{_m.name}")
        for _name in getattr(_mod, "__all__", [n for n in vars(_mod) if not n.startswith("_")]):
            _obj = getattr(_mod, _name)
            if callable(_obj) and getattr(_obj, "__module__", "") == _mod.__name__:
                if _name in __all__:  # two families' references of one name: one would hide the other
                    raise ImportError(f"kernelkit.reference: {_mod.__name__}.{_name} clashes with "
                                      f"{globals()[_name].__module__}.{_name}")
                globals()[_name] = _obj
                __all__.append(_name)
