"""The command line's argument types and checks: each value is checked against what kernelkit and this
machine support, and a bad one ends in one line with a hint (CliError)."""
from __future__ import annotations

import argparse
import difflib
import inspect
import re

import torch

DEFAULT_ARCH = "sm_90"
DEFAULT_OUT = "kernelkit-results"


class CliError(Exception):
    """A failure the user can act on: printed as one line with its hint; ``code`` is the exit status."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (no usage block) and a pointer to --help."""

    def error(self, message: str):
        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:  # a misspelt command or action
            message += _suggest(m[1], [c.strip(" '") for c in m[2].split(",")])
        # kernelkit's own messages carry their hint after a ';'; argparse's (missing or unknown
        # arguments) get the pointer to --help
        hint = "" if ";" in message else f" (`{self.prog} --help` lists the arguments)"
        self.exit(2, f"{self.prog}: error: {message}{hint}\n")


# ---------------------------------------------------------------------------------------------------
# argument types: each checks its value against what kernelkit and this machine support


def _suggest(word: str, known) -> str:
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _op_name(text: str) -> str:
    from ..ladder import ops

    names = ops()
    if text in names:
        return text
    raise argparse.ArgumentTypeError(f"unknown op {text!r}{_suggest(text, names) or ';'} the ops: {', '.join(names)}")


_DTYPE_ALIASES = {"fp32": "float32", "f32": "float32", "float": "float32", "fp16": "float16", "f16": "float16",
                  "half": "float16", "bf16": "bfloat16", "fp64": "float64", "f64": "float64", "double": "float64",
                  "u8": "uint8", "i8": "int8", "i16": "int16", "i32": "int32", "int": "int32", "i64": "int64",
                  "long": "int64"}


def _dtype_names() -> list[str]:
    """The dtypes some rung of some op takes, in ladder order."""
    from ..ladder import get_op, ops

    seen: dict[str, None] = {}
    for name in ops():
        for v in get_op(name).variants:
            for d in v.dtypes:
                seen[str(d).replace("torch.", "")] = None
    return list(seen)


def _dtype(text: str) -> torch.dtype:
    key = _DTYPE_ALIASES.get(text.strip().lower(), text.strip().lower())
    d = getattr(torch, key, None)
    if isinstance(d, torch.dtype):
        return d
    names = _dtype_names()
    raise argparse.ArgumentTypeError(
        f"unknown dtype {text!r}{_suggest(key, names + list(_DTYPE_ALIASES)) or ';'} kernelkit's dtypes: "
        f"{', '.join(names)} (short forms: fp32, fp16, half, bf16, u8)")


def _dtype_text(d: torch.dtype) -> str:
    return str(d).replace("torch.", "")


def _nvrtc_archs() -> tuple[int, ...] | None:
    """NVRTC's supported SM versions, or None when NVRTC cannot be loaded here (then nothing is refused
    for its sake: the compile itself reports the missing NVRTC)."""
    try:
        from ..runtime.headers import nvrtc_archs

        return nvrtc_archs()
    except Exception:  # noqa: BLE001 - no NVRTC, an old cuda-bindings: the compile step reports it
        return None


def build_archs() -> list[str]:
    """Archs `kernelkit warmup` builds for: sm_80 and later that NVRTC compiles for."""
    from ..runtime.headers import MIN_SM

    nv = _nvrtc_archs()
    return [f"sm_{a}" for a in (nv or (80, 86, 87, 89, 90)) if a >= MIN_SM]


def analysis_archs() -> list[str]:
    """Archs `kernelkit inspect` analyses: those of ``build_archs`` whose occupancy limits kernelkit knows."""
    from ..analyze.occupancy import ARCH_LIMITS

    return [a for a in build_archs() if a in ARCH_LIMITS]


def _arch_type(choices, purpose: str):
    """An --arch argument type: accepts exactly one of ``choices()`` and says why anything else is refused."""

    def parse(text: str) -> str:
        from ..runtime.headers import MIN_SM

        allowed = choices()
        if text in allowed:
            return text
        listed = f"choose from {', '.join(allowed)}"
        m = re.fullmatch(r"(sm_|compute_)?(\d+)([af]?)", text.strip().lower())
        if not m:
            raise argparse.ArgumentTypeError(f"{text!r} is not an arch; write it like sm_90: {listed}")
        canon = f"sm_{m[2]}"
        if canon in allowed:
            why = "arch-specific kernels get their suffix by themselves" if m[3] else "write the sm_ prefix"
            raise argparse.ArgumentTypeError(f"{text!r}: did you mean {canon}? ({why}); {listed}")
        sm, nv = int(m[2]), _nvrtc_archs()
        if sm < MIN_SM:
            why = f"kernelkit supports sm_{MIN_SM} (Ampere) and later"
        elif nv is not None and sm not in nv:
            from ..runtime import nvrtc_version

            why = (f"NVRTC {'.'.join(map(str, nvrtc_version()))} cannot compile for it (a newer "
                   f"nvidia-cuda-nvrtc may)")
        else:
            why = purpose
        raise argparse.ArgumentTypeError(f"{canon} is not supported here: {why}; {listed}")

    return parse


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r}; give a whole number of at least 1")
    return n


def _size(text: str) -> tuple[int, ...]:
    from ..bench.ladder_run import parse_shape

    try:
        return parse_shape(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad size {text!r}; write 2^28, 4096x4096 or 1000") from None


# ---------------------------------------------------------------------------------------------------
# checks of arguments against the op


def _check_dtypes(op, dtypes) -> None:
    """Every dtype asked for is taken by some rung of ``op``."""
    have = list(dict.fromkeys(d for v in op.variants for d in v.dtypes))
    missing = [d for d in dtypes or () if d not in have]
    if missing:
        raise CliError(f"{op.name} has no rung for {', '.join(map(_dtype_text, missing))}; "
                       f"its dtypes: {', '.join(map(_dtype_text, have))}")


def _check_rungs(op, rungs) -> None:
    names = [v.name for v in op.variants]
    for r in rungs or ():
        if r not in names:
            raise CliError(f"{op.name} has no rung {r!r}{_suggest(r, names) or ';'} its ladder: {', '.join(names)}")


def _params(op, items) -> dict:
    """`--param k=v` pairs, each a keyword of the op's function."""
    sig = inspect.signature(op.call).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in sig.values())
    known = [k for k, p in sig.items() if (p.kind is p.KEYWORD_ONLY or p.default is not p.empty)
             and k not in ("out", "variant", "config")]
    out = {}
    for it in items or ():
        k, eq, v = it.partition("=")
        if not eq or not k:
            raise CliError(f"--param {it!r}: write KEY=VALUE, e.g. --param approximate=none")
        if not takes_any and k not in sig:
            raise CliError(f"{op.name} takes no keyword {k!r}{_suggest(k, known) or ';'} its keywords: "
                           f"{', '.join(known)}")
        default = sig[k].default if k in sig else None
        if isinstance(default, bool):  # allow_tf32=true: a flag, not the string "false" (which is truthy)
            if v.lower() not in ("true", "false", "1", "0"):
                raise CliError(f"--param {it!r}: {k} is true or false")
            v = v.lower() in ("true", "1")
        out[k] = v
    return out
