"""onnxruntime's com.microsoft ``FusedConv`` and ``FusedGemm``, which its graph optimizer
writes into the models it saves (``SessionOptions.optimized_model_filepath``,
``onnxruntime.transformers``): a Conv (plus an optional sum input ``Z``) or a Gemm, then the
activation its ``activation`` attribute names. FusedConv gives the activation's parameters
as the floats of ``activation_params``, FusedGemm as ``activation_alpha`` / ``_beta`` /
``_gamma``. Each imports as the default-domain op, then the activation's own op function.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nn import functional as F

from . import ops_math, ops_nn
from .node import OnnxNode

_PARAMS = {"Relu": (), "Tanh": (), "Sigmoid": (), "LeakyRelu": ("alpha",),
           "HardSigmoid": ("alpha", "beta"), "Clip": ("min", "max"), "Elu": ("alpha",),
           "Selu": ("alpha", "gamma"), "ThresholdedRelu": ("alpha",), "Softplus": (),
           "Softsign": ()}
"""The activations onnxruntime fuses, and the attribute names of their parameters."""
_CONV_ACTIVATIONS = ("Relu", "Tanh", "Sigmoid", "LeakyRelu", "HardSigmoid", "Clip")
"""Those FusedConv takes (onnxruntime's MLAS activations)."""
_CLIP_INPUTS = 11
"""The opset from which Clip takes its bounds as inputs."""


def _activate(n: OnnxNode, y: Any, allowed: tuple[str, ...], params: list[float]) -> Any:
    """``y`` through the activation named by ``n``'s ``activation`` attribute (none when it
    is empty), one of ``allowed``, with its parameters in ``params``' order.

    Raises:
        CompileError: another activation, or fewer parameters than it takes.
    """
    name = n.attr("activation", "")
    if not name:
        return y
    if name not in allowed:
        raise n.error(f"activation {name!r} is not one of {sorted(allowed)}")
    if len(params) < len(_PARAMS[name]):
        raise n.error(f"activation {name} needs {len(_PARAMS[name])} parameter(s) "
                      f"{_PARAMS[name]}, got {params}")
    if name == "Clip":
        bounds = [np.array(p, np.float32) for p in params[:2]]
        node = OnnxNode(f"{n.name}/Clip", "Clip", [y, *bounds], {},
                        max(n.opset, _CLIP_INPUTS))
    else:
        node = OnnxNode(f"{n.name}/{name}", name, [y], dict(zip(_PARAMS[name], params)),
                        n.opset)
    from .op_table import OPS  # NOTE: op_table imports this module

    return OPS[name](node)


def fused_conv(n: OnnxNode) -> Any:
    """FusedConv(X, W, B?, Z?): ``activation(conv(X, W, B) + Z)``."""
    y = ops_nn.conv(n)
    z = n.optional(3)
    return _activate(n, y if z is None else F.add(y, z), _CONV_ACTIVATIONS,
                     list(n.attr("activation_params") or []))


def fused_gemm(n: OnnxNode) -> Any:
    """FusedGemm(A, B, C?): ``activation(Gemm(A, B, C))``; the activation's parameters are
    the ``activation_alpha``, ``_beta`` and ``_gamma`` attributes it has, in that order."""
    params = [n.attr(f"activation_{p}") for p in ("alpha", "beta", "gamma")]
    return _activate(n, ops_math.OPS["Gemm"](n), tuple(_PARAMS),
                     [p for p in params if p is not None])


MICROSOFT = {"FusedConv": fused_conv, "FusedGemm": fused_gemm}
"""onnxruntime's fused com.microsoft ops."""
