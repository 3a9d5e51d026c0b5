"""C++ spellings of torch dtypes, as the kernels' template arguments take them."""
from __future__ import annotations

import torch

CXX_TYPE = {torch.float32: "float", torch.float16: "__half", torch.bfloat16: "__nv_bfloat16",
            torch.float64: "double", torch.uint8: "unsigned char", torch.int8: "signed char",
            torch.int32: "int"}
CXX_PAIR = {torch.float16: "__half2", torch.bfloat16: "__nv_bfloat162"}


def cxx_bool(flag: bool) -> str:
    return "true" if flag else "false"
