"""Shared pieces of the norm CPU tests (test_norm_cpu.py, test_norm_launch_cpu.py): the dtypes by short
name and the row forms (A: aligned 16-byte vectors, W: the aligned window of vectors covering a row at any
alignment, WI: the same loads with narrower stores where out's phase differs from x's)."""
import torch

from kernelkit.ops.reduction._rows import ALIGNED, WINDOW, WINDOW_IN

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16
DTYPES = (F32, F16, BF16)
A, W, WI = ALIGNED, WINDOW, WINDOW_IN
