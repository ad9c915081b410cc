"""onnxruntime's com.microsoft ``FusedConv``, which its graph optimizer writes into the models
it saves (``SessionOptions.optimized_model_filepath``, ``onnxruntime.transformers``): a Conv,
plus an optional sum input ``Z``, then the activation its ``activation`` attribute names with
the floats of ``activation_params``. It imports as the default-domain Conv, an add and the
activation's own op function.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nn import functional as F

from . import ops_math, ops_nn
from .node import OnnxNode

_PARAMS = {"Relu": (), "Tanh": (), "Sigmoid": (), "LeakyRelu": ("alpha",),
           "HardSigmoid": ("alpha", "beta"), "Clip": ("min", "max")}
"""The activations onnxruntime fuses, and the names of their ``activation_params``."""
_CLIP_INPUTS = 11
"""The opset from which Clip takes its bounds as inputs."""


def activation(n: OnnxNode, y: Any) -> Any:
    """``y`` through the activation named by ``n``'s ``activation`` attribute (none when it
    is empty).

    Raises:
        CompileError: an activation onnxruntime does not fuse, or too few parameters.
    """
    name = n.attr("activation", "")
    if not name:
        return y
    if name not in _PARAMS:
        raise n.error(f"activation {name!r} is not one of {sorted(_PARAMS)}")
    params = list(n.attr("activation_params") or [])
    if len(params) < len(_PARAMS[name]):
        raise n.error(f"activation {name} needs activation_params {_PARAMS[name]}, got "
                      f"{params}")
    if name == "Clip":
        bounds = [np.array(p, np.float32) for p in params[:2]]
        node = OnnxNode(f"{n.name}/Clip", "Clip", [y, *bounds], {},
                        max(n.opset, _CLIP_INPUTS))
    else:
        node = OnnxNode(f"{n.name}/{name}", name, [y], dict(zip(_PARAMS[name], params)),
                        n.opset)
    return {**ops_math.OPS, **ops_nn.OPS}[name](node)


def fused_conv(n: OnnxNode) -> Any:
    """FusedConv(X, W, B?, Z?): ``activation(conv(X, W, B) + Z)``."""
    y = ops_nn.conv(n)
    z = n.optional(3)
    return activation(n, y if z is None else F.add(y, z))


MICROSOFT = {"FusedConv": fused_conv}
"""onnxruntime's fused com.microsoft ops."""
