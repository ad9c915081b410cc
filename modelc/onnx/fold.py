"""Known values: what the importer computes at import time instead of recording.

An ONNX tensor whose value follows from initializers, constants and static shapes is kept
as an ``ndarray``; the op functions evaluate it eagerly (``nn.functional`` runs numpy when
no operand is traced). A ``Shape`` of a tensor with symbolic dims is an ``object`` array
mixing ints and dim names, so ``Shape -> Gather -> Concat -> Reshape`` chains fold into a
reshape whose target names the dims (the interpreter and codegen resolve them at run time).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nn import functional as F

from ..graph import Dim
from ..trace import SymbolicTensor


def is_known(*values: Any) -> bool:
    """Whether every value is known at import time (None counts as known)."""
    return not any(isinstance(v, SymbolicTensor) for v in values)


def shape_value(shape: Sequence[Dim]) -> np.ndarray:
    """A shape as an ONNX shape tensor: int64, or ``object`` when it names symbolic dims."""
    if all(isinstance(d, int) for d in shape):
        return np.array(shape, dtype=np.int64)
    return np.array(list(shape), dtype=object)


def dims(value: np.ndarray) -> list[Any]:
    """A known 1-D shape tensor as Python ints and dim names (``Dim``s; typed ``Any``
    because ``nn.functional`` annotates shapes as ints, dim names being the tracer's
    extension)."""
    return [d if isinstance(d, str) else int(d) for d in np.asarray(value).reshape(-1).tolist()]


def product(shape: Sequence[Dim]) -> Dim | None:
    """The element count of ``shape`` as an int or a single dim name; None when it is a
    product that involves a dim name (the IR has no dim arithmetic)."""
    names = [d for d in shape if isinstance(d, str)]
    ints = int(np.prod([d for d in shape if isinstance(d, int)], dtype=np.int64))
    if not names:
        return ints
    return names[0] if len(names) == 1 and ints == 1 else None


def operands(a: Any, b: Any) -> tuple[Any, Any]:
    """Binary operands ready for ``nn.functional``: a known single element next to a traced
    tensor becomes a Python scalar (an attr, never a constant tensor), and a known operand
    takes the traced one's dtype (ONNX operands share a type; numpy constants may not). A
    traced int32 next to a traced float32 is cast to float32: ONNX operands share a type, so
    the float32 one is the int32 accumulator of a ``MatMulInteger`` / ``ConvInteger``, which
    the graph holds in float32 (``dynamic_quantize``'s int32 bias added to it)."""
    def adapt(known: Any, traced: Any) -> Any:
        if not is_known(known) and not is_known(traced) and known.dtype == np.int32 \
                and traced.dtype == np.float32:
            return F.cast(known, np.float32)
        if not isinstance(known, np.ndarray) or not isinstance(traced, SymbolicTensor):
            return known
        known = known.astype(traced.dtype, copy=False)
        if known.ndim == 0 or (known.size == 1 and known.ndim <= traced.ndim):
            return known.reshape(-1)[0].item()
        return known

    return adapt(a, b), adapt(b, a)
