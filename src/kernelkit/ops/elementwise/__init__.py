"""Element-wise ops: one output element from the elements at the same position of the inputs.

One module per op (gelu, relu, add, saxpy, invert_colors, binarize, normalize_image); private helpers
shared by several: _unary (the unary ladder of gelu and relu), _bytes (the byte maps of invert_colors
and binarize), _launch (``ElementwiseLaunch``, the fast rungs' launch shape that every op's
``config=`` takes) and _lane (the lanes: the plain eager call's hot path, made once per kind of input).
"""
from ._launch import ElementwiseLaunch

__all__ = ["ElementwiseLaunch"]
