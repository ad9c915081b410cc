"""Models at default-domain opsets older than the importer follows, converted to the oldest
one it follows by ``onnx.version_converter``."""

from __future__ import annotations

import warnings
from typing import Any

from ..errors import CompileError

_DOMAINS = ("", "ai.onnx")


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


def upgrade(proto: Any, target: int, converted: tuple[int, int]) -> Any:
    """A model at an opset in ``converted`` (inclusive) converted to ``target`` by
    ``onnx.version_converter``, with a warning saying so; any other model as it is.

    Raises:
        CompileError: the converter fails, or changes the rank of a graph input (Scan-8's
            batch axis, which Scan-9 does not have).
    """
    from onnx import version_converter

    versions = [o.version for o in proto.opset_import if o.domain in _DOMAINS]
    if not versions or not converted[0] <= versions[0] <= converted[1]:
        return proto
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
