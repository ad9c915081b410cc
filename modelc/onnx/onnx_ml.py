"""ONNX-ML (``ai.onnx.ml``) ops that skl2onnx writes around a network: ``Scaler``, its
standardisation ``(x - offset) * scale`` per feature, in float32 whatever the input's type.
Tree ensembles, SVMs and the other classic-ML ops are refused by name with the rest of a
model's unsupported ops."""

from __future__ import annotations

from typing import Any

import numpy as np

from nn import functional as F

from .node import OnnxNode

DOMAIN = "ai.onnx.ml"


def scaler(n: OnnxNode) -> Any:
    """Scaler: ``(float(x) - offset) * scale`` along the last axis; one value applies to
    every feature.

    Raises:
        CompileError: ``offset`` or ``scale`` is missing (onnxruntime and onnx's reference
            need both), or does not have one value or one per feature.
    """
    x = F.cast(n.input(0), np.dtype(np.float32))
    features = x.shape[-1]
    terms = []
    for name in ("offset", "scale"):
        if n.attr(name) is None:
            raise n.error(f"needs the attribute {name!r}")
        values = np.asarray(n.attr(name), np.float32)
        if values.size not in (1, features):
            raise n.error(f"{name} has {values.size} values, expected 1 or {features} (the "
                          f"input's last axis)")
        terms.append(values)
    offset, scale = terms
    return F.mul(F.sub(x, offset), scale)


OPS = {"Scaler": scaler}
"""The supported ``ai.onnx.ml`` ops."""
