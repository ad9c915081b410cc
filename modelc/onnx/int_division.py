"""Integer division of tensors computed at run time (ONNX Div and Mod on integers), exact,
written in float32 and integer ``nn.functional`` calls (wasm has no SIMD integer division).

The quotient of 8- and 16-bit integers is exact in float32: its rounding error, below
``|a / b| * 2**-24 <= 2**-9 / |b|``, cannot cross an integer, which lies at least ``1 / |b|``
away unless it is the quotient itself. Wider integers refine it: each step adds
``trunc(r / b)`` (in float32) to the quotient and recomputes the remainder ``r = a - q * b``
in wrapping integer arithmetic, which is exact since the true remainder is small. A float32
quotient has a relative error under ``3 * 2**-24``, so each step shrinks ``|r / b|`` by 2**21
or more: from below 2**31 (int32) or 2**63 (int64) to within one of the truncated quotient
after 2 or 3 steps; a last step moves it by one where the remainder is on the wrong side.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nn import functional as F

from .fold import is_known, operands

_STEPS = {1: 1, 2: 1, 4: 2, 8: 3}
"""Float32 refinement steps by integer width in bytes (see the module docstring)."""


def _float32(value: Any) -> Any:
    return np.asarray(value, np.float32) if is_known(value) else F.cast(value, np.float32)


def _sign(value: Any, dtype: np.dtype) -> Any:
    """-1 where ``value`` is negative, else 1, of ``dtype``."""
    if is_known(value):
        return np.where(np.asarray(value) < 0, -1, 1).astype(dtype)
    return F.where(F.lt(value, 0), np.array(-1, dtype), np.array(1, dtype))


def truncated(a: Any, b: Any) -> tuple[Any, Any]:
    """``(q, r)`` with ``q = trunc(a / b)`` and ``r = a - q * b`` for signed integer tensors
    ``a`` and ``b`` of one dtype (at least one computed at run time, ``b`` nonzero)."""
    dtype = np.dtype(str(a.dtype))
    divisor = _float32(b)
    quotient: Any = None
    remainder = a
    for _ in range(_STEPS[dtype.itemsize]):
        step = F.cast(F.trunc(F.div(*operands(_float32(remainder), divisor))), dtype)
        quotient = step if quotient is None else F.add(quotient, step)
        remainder = F.sub(*operands(a, F.mul(*operands(quotient, b))))
    if dtype.itemsize <= 2:
        return quotient, remainder
    # NOTE: r * sign(a) must lie in [0, |b|); compared without |b|, which wraps at b = min
    toward_a = F.mul(*operands(remainder, _sign(a, dtype)))
    beyond = F.where(F.gt(*operands(b, 0)), F.ge(*operands(toward_a, b)),
                     F.le(*operands(F.mul(toward_a, -1), b)))
    unit = F.mul(*operands(_sign(a, dtype), _sign(b, dtype)))
    zero = np.array(0, dtype)
    fix = F.where(F.lt(toward_a, 0), F.mul(unit, -1), F.where(beyond, unit, zero))
    quotient = F.add(quotient, fix)
    return quotient, F.sub(*operands(a, F.mul(*operands(quotient, b))))


def floor_remainder(remainder: Any, b: Any) -> Any:
    """The floor remainder (the sign of ``b``) from the truncated one: ``r + b`` where ``r``
    is nonzero and its sign differs from ``b``'s."""
    differ = F.ne(F.lt(remainder, 0), F.lt(*operands(b, 0)))
    shifted = F.add(*operands(remainder, b))
    return F.where(F.ne(remainder, 0), F.where(differ, shifted, remainder), remainder)
