"""float64 references of the element-wise family."""
from __future__ import annotations

import math

import torch


def gelu(x: torch.Tensor, approximate: str = "tanh") -> torch.Tensor:
    """GELU in float64 (tanh form or exact erf form), returned in float64."""
    x = x.double()
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))
        return 0.5 * x * (1.0 + torch.tanh(inner))
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a + b in float64."""
    return a.double() + b.double()


def relu(x: torch.Tensor) -> torch.Tensor:
    """max(x, 0) in float64, NaN kept."""
    return torch.relu(x.double())


def saxpy(alpha: float, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """alpha x + y in float64 (the value kernelkit.saxpy leaves in y)."""
    return float(alpha) * x.double() + y.double()


def invert_colors(image: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """255 - v on R, G, B of (..., 4) RGBA uint8 pixels, alpha kept; exact integers in float64."""
    out = image.double()
    out[..., :3] = 255.0 - out[..., :3]
    return out


def binarize(image: torch.Tensor, threshold: float) -> torch.Tensor:
    """255 where image > threshold, else 0, in float64."""
    return (image.double() > float(threshold)).double() * 255.0


def normalize_image(image: torch.Tensor, mean, std, dtype=torch.float16, layout: str = "CHW") -> torch.Tensor:
    """(image / 255 - mean[c]) / std[c] in float64; (N, C, H, W) / (C, H, W) for layout "CHW"."""
    c = image.shape[-1]
    as_list = lambda v: (v.flatten().tolist() if isinstance(v, torch.Tensor)  # noqa: E731
                         else [float(v)] * c if isinstance(v, (int, float)) else [float(t) for t in v])
    m, s = as_list(mean), as_list(std)
    m, s = (m * c if len(m) == 1 else m), (s * c if len(s) == 1 else s)
    m = torch.tensor(m, dtype=torch.float64, device=image.device)
    s = torch.tensor(s, dtype=torch.float64, device=image.device)
    y = (image.double() / 255.0 - m) / s
    if str(layout).upper() == "CHW":
        y = y.movedim(-1, -3).contiguous()
    return y
