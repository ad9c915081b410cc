"""Post-training int8 quantization: ``modelc.quantize(model, calibration)`` -> a graph whose
linear, matmul and conv layers (and residual adds and concats) run in integers.

Static (``activations="per_tensor"``): the float graph runs on the calibration examples in
the numpy interpreter, observers record every tensor's range (min/max, or percentiles with
``percentile=``), and each op with an integer kernel is rewritten into its int8 form
(``static``). Dynamic (``activations="dynamic"``, for transformers): weights are quantized
now, activations per run (``dynamic``). Ops without an integer kernel (softmax, layer_norm,
gelu, pooling, reshapes, ...) stay float32 between a ``dequantize_linear`` and a
``quantize_linear``; both show among the model's ops in ``wasmnn inspect``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import nn

from ..graph import Graph
from ..passes import (
    PIPELINE,
    eliminate_dead_code,
    fuse_epilogues,
    infer_shapes,
    optimize,
    plan_memory,
    winograd_convs,
)
from ..trace import DynamicSpec, trace
from .dynamic import quantize_dynamic
from .observe import calibrate, examples_from_npz
from .params import WEIGHT_MODES, activation_params
from .static import quantize_static

__all__ = ["ACTIVATIONS", "WEIGHTS", "examples_from_npz", "quantize"]

WEIGHTS = tuple(WEIGHT_MODES)
ACTIVATIONS = ("per_tensor", "dynamic")
BEFORE_FUSION = tuple(p for p in PIPELINE
                      if p not in (fuse_epilogues, winograd_convs, plan_memory))
"""The passes run before quantizing: the rules fuse activations themselves, and a conv
turned into Winograd's float transforms would not be quantized."""


def _example(example: Any) -> Any:
    """A calibration example as trace's example inputs."""
    if isinstance(example, (Mapping, tuple)):
        return example
    return tuple(example) if isinstance(example, list) else (example,)


def quantize(model: nn.Module | Graph, calibration: Iterable[Any], *,
             weights: str = "per_channel", activations: str = "per_tensor",
             percentile: float | None = None, dynamic: DynamicSpec | None = None) -> Graph:
    """Quantize ``model`` to int8; compile the result with ``modelc.export``.

    Args:
        model: an ``nn.Module`` (traced on the first calibration example) or a ``Graph``
            (e.g. from ``modelc.from_onnx``).
        calibration: example inputs, each an array (a model of one input), a tuple of
            arrays or a ``{name: array}`` dict; for ``activations="dynamic"`` one example
            is enough for a module (it is only traced) and none for a graph.
        weights: ``"per_channel"`` (a symmetric int8 scale per output channel) or
            ``"per_tensor"``; ``"per_channel_7bit"`` / ``"per_tensor_7bit"`` keep weights in
            [-63, 63], which the relaxed kernels multiply 1.2x faster on x86 (at half the
            weights' precision).
        activations: ``"per_tensor"`` (static: asymmetric int8 with a calibrated scale and
            zero point per tensor) or ``"dynamic"`` (uint8, scale computed per run).
        percentile: clip each calibrated range to this percentile (e.g. ``99.99``) and
            its mirror instead of min/max.
        dynamic: symbolic dimensions, as ``modelc.export`` takes them.

    Raises:
        ValueError: an unknown ``weights`` or ``activations`` mode, an empty calibration,
            an example lacking inputs, or a ``percentile`` outside (50, 100].
        TypeError: ``model`` is neither an ``nn.Module`` nor a ``Graph``.
        TraceError, CompileError: the model does not trace or compile.
    """
    if weights not in WEIGHTS:
        raise ValueError(f"unknown weights mode {weights!r}; available: {list(WEIGHTS)}")
    if activations not in ACTIVATIONS:
        raise ValueError(f"unknown activations mode {activations!r}; available: "
                         f"{list(ACTIVATIONS)}")
    examples = list(calibration)
    if not examples and (activations != "dynamic" or not isinstance(model, Graph)):
        raise ValueError("calibration is empty: give at least one example input")
    if isinstance(model, nn.Module):
        graph = trace(model, _example(examples[0]), dynamic)
    elif isinstance(model, Graph):
        graph = model
    else:
        raise TypeError(f"expected an nn.Module or a Graph to quantize, got {model!r}")
    graph = optimize(graph, BEFORE_FUSION)
    if activations == "dynamic":
        graph = quantize_dynamic(graph, weights)
    else:
        ranges = calibrate(graph, examples, percentile)
        params = {key: activation_params(low, high) for key, (low, high) in ranges.items()}
        graph = quantize_static(graph, params, weights)
    return optimize(graph, (infer_shapes, eliminate_dead_code))
