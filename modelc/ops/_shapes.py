"""Shape arithmetic over dims that are ints or symbolic names."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from ..errors import CompileError
from ..graph import Dim, Shape, Value


def broadcast(*shapes: Shape) -> Shape:
    """numpy broadcasting; a symbolic dim broadcasts only with 1 or itself.

    Raises:
        CompileError: the shapes do not broadcast.
    """
    rank = max((len(s) for s in shapes), default=0)
    out: list[Dim] = []
    for axis in range(rank):
        dims = {s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise CompileError(f"shapes {[list(s) for s in shapes]} do not broadcast")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def axis(dim: int, rank: int, what: str = "dim") -> int:
    """``dim`` normalised to ``[0, rank)``.

    Raises:
        CompileError: out of range.
    """
    if not -rank <= dim < max(rank, 1):
        raise CompileError(f"{what} {dim} is out of range for rank {rank}")
    return dim % rank if rank else 0


def numel(shape: Sequence[Dim]) -> tuple[int, Counter]:
    """The element count as (product of ints, multiset of symbolic names)."""
    return (math.prod(d for d in shape if isinstance(d, int)),
            Counter(d for d in shape if isinstance(d, str)))


def require_static(shape: Shape, axes: Sequence[int], op: str) -> None:
    for i in axes:
        if not isinstance(shape[i], int):
            raise CompileError(f"{op}: axis {i} of shape {list(shape)} must be a fixed size, "
                               f"got symbolic {shape[i]!r}")


def require_constant_weight(weight: Value, op: str) -> None:
    """Raise unless ``weight`` is known at compile time (a parameter or a constant), which
    the kernels need to pack it."""
    if not weight.is_constant:
        raise CompileError(f"{op} with a weight computed at run time is not supported; the "
                           "weight must be a parameter or constant")


def pair(value: int | Sequence[int]) -> tuple[int, int]:
    if isinstance(value, int):
        return value, value
    items = tuple(value)
    return (items[0], items[0]) if len(items) == 1 else (items[0], items[1])


def window_out(size: int, kernel: int, stride: int, pad_total: int, dilation: int = 1,
               ceil_mode: bool = False) -> int:
    """Output length of a sliding window (conv or pooling), torch's rule incl. ceil_mode."""
    span = size + pad_total - dilation * (kernel - 1) - 1
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad_total // 2:
        out -= 1
    if out < 1:
        raise CompileError(f"window of {kernel} (dilation {dilation}) does not fit an input of "
                           f"{size} with padding {pad_total}")
    return out
