"""Models at default-domain opsets older than the importer follows, converted to the oldest
one it follows by ``onnx.version_converter``.

A model older than opset 7 whose every op is the very version it is at the target (PyTorch's
opset-6 exports of Conv, Relu, Softmax, ...) imports as it is. Otherwise the converter runs,
after one fix it lacks: before opset 7 a PRelu slope of C values is per channel (axis 1), while
from opset 7 it broadcasts from the last axis, and the converter leaves the slope as it is.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..errors import CompileError
from .newer_opsets import changed_ops

_DOMAINS = ("", "ai.onnx")
_BROADCAST_SINCE = 7
"""The opset from which PRelu's slope broadcasts numpy-style (before it: per channel)."""


def _initializers_as_inputs(proto: Any) -> Any:
    """A copy of ``proto`` whose initializers are all graph inputs too. NOTE: the version
    converter takes an initializer that is not an input (allowed since IR 4) for an
    undefined name."""
    from onnx import helper

    listed = {i.name for i in proto.graph.input}
    missing = [t for t in proto.graph.initializer if t.name not in listed]
    if not missing:
        return proto
    copy_ = type(proto)()
    copy_.CopyFrom(proto)
    copy_.graph.input.extend(helper.make_tensor_value_info(t.name, t.data_type, t.dims)
                             for t in missing)
    return copy_


def _per_channel_slopes(proto: Any) -> Any:
    """A copy of ``proto`` (older than opset 7) whose PRelu slopes of C > 1 values, held as
    initializers, are reshaped to (C, 1, ..., 1) against the rank of the input, which shape
    inference gives; a slope whose input rank is unknown is left as it is."""
    from onnx import numpy_helper, shape_inference

    copy_ = type(proto)()
    copy_.CopyFrom(proto)
    inferred = shape_inference.infer_shapes(copy_).graph
    ranks = {v.name: len(v.type.tensor_type.shape.dim) for v in
             [*inferred.input, *inferred.value_info, *inferred.output]
             if v.type.tensor_type.HasField("shape")}
    weights = {t.name: t for t in copy_.graph.initializer}
    for node in (n for n in copy_.graph.node if n.op_type == "PRelu"):
        slope, rank = weights.get(node.input[1]), ranks.get(node.input[0])
        if slope is None or rank is None or len(slope.dims) != 1 or slope.dims[0] == 1:
            continue
        values = numpy_helper.to_array(slope)
        name = f"{slope.name}_per_channel"
        copy_.graph.initializer.append(numpy_helper.from_array(
            np.ascontiguousarray(values.reshape(-1, *[1] * (rank - 2))), name))
        node.input[1] = name
    return copy_


def upgrade(proto: Any, target: int, converted: tuple[int, int]) -> Any:
    """A model at an opset in ``converted`` (inclusive) converted to ``target`` by
    ``onnx.version_converter``, with a warning saying so (one older than opset 7 only when
    some of its ops changed by then); any other model as it is.

    Raises:
        CompileError: the converter fails, or changes the rank of a graph input (Scan-8's
            batch axis, which Scan-9 does not have).
    """
    from onnx import version_converter

    versions = [o.version for o in proto.opset_import if o.domain in _DOMAINS]
    if not versions or not converted[0] <= versions[0] <= converted[1]:
        return proto
    if versions[0] < _BROADCAST_SINCE:
        if not changed_ops(proto, target, versions[0], exact=True):
            return proto
        proto = _per_channel_slopes(proto)
    warnings.warn(f"the ONNX model is at opset {versions[0]}; converting it to opset "
                  f"{target} with onnx.version_converter before import", stacklevel=3)
    proto = _initializers_as_inputs(proto)
    try:
        result = version_converter.convert_version(proto, target)
    except Exception as err:  # the converter raises bare RuntimeErrors of its C++ core
        raise CompileError(f"onnx.version_converter could not convert the model from opset "
                           f"{versions[0]} to {target}: {err}") from err
    ranks = {i.name: len(i.type.tensor_type.shape.dim) for i in proto.graph.input}
    changed = [f"{i.name!r} rank {ranks[i.name]} -> {len(i.type.tensor_type.shape.dim)}"
               for i in result.graph.input
               if ranks.get(i.name, len(i.type.tensor_type.shape.dim))
               != len(i.type.tensor_type.shape.dim)]
    if changed:
        raise CompileError(f"onnx.version_converter changed the model's inputs converting "
                           f"it from opset {versions[0]} to {target} ({', '.join(changed)}: "
                           f"Scan-8's batch axis?); re-export the model at opset {target} "
                           "or later")
    return result
