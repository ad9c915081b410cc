"""ONNX ops the importer has no function for, but whose schema defines them as a function
of other ops (Attention, RotaryEmbedding, ReduceLogSumExp, GroupNormalization, ...): the
node is replaced by the function's body, its names prefixed to keep them apart.

A context-dependent function (Attention's body depends on its attributes and input types)
is built by ``onnx.defs`` for the node and the types of its operands.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

_DOMAINS = ("", "ai.onnx")


def _schema(node: Any, opset: int) -> Any:
    from onnx import defs

    if node.domain not in _DOMAINS:
        return None
    try:
        return defs.get_schema(node.op_type, opset, "")
    except defs.SchemaError:
        return None


def expandable(node: Any, opset: int) -> bool:
    """Whether ``node``'s op at ``opset`` is defined as a function of other ops."""
    schema = _schema(node, opset)
    return schema is not None and bool(schema.has_function
                                       or schema.has_context_dependent_function)


def _function(node: Any, schema: Any, opset: int, input_types: Sequence[Any]) -> Any:
    """The FunctionProto of ``node`` at the newest function version not after ``opset``."""
    from onnx import FunctionProto

    fixed = [v for v in schema.function_opset_versions if v <= opset]
    dependent = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
    if fixed and (not dependent or max(fixed) >= max(dependent)):
        text = schema.get_function_with_opset_version(max(fixed))
    else:
        text = schema.get_context_dependent_function_with_opset_version(
            max(dependent), node.SerializeToString(),
            [t.SerializeToString() for t in input_types])
    return FunctionProto.FromString(text)


def expand(node: Any, opset: int, input_types: Sequence[Any], prefix: str
           ) -> tuple[list[Any], int]:
    """The body of ``node``'s function as nodes over ``node``'s own inputs and outputs
    (other names prefixed with ``prefix``), and the default-domain opset they follow.

    Args:
        input_types: a ``TypeProto`` per input of ``node`` (context-dependent functions).
    """
    from onnx import NodeProto

    schema = _schema(node, opset)
    with_defaults = NodeProto()
    with_defaults.CopyFrom(node)
    given = {a.name for a in node.attribute}
    with_defaults.attribute.extend(a.default_value for name, a in schema.attributes.items()
                                   if name not in given and a.default_value.name)
    function = _function(with_defaults, schema, opset, input_types)
    attrs = {a.name: a for a in with_defaults.attribute}
    names = {formal: actual for formal, actual in zip(function.input, node.input)}
    names.update({formal: "" for formal in function.input[len(node.input):]})
    names.update(zip(function.output, node.output))
    body = []
    for inner in function.node:
        copy = NodeProto()
        copy.CopyFrom(inner)
        del copy.attribute[:]
        for attr in inner.attribute:
            if not attr.ref_attr_name:
                copy.attribute.append(attr)
            elif attr.ref_attr_name in attrs:
                copy.attribute.append(attrs[attr.ref_attr_name])
                copy.attribute[-1].name = attr.name
        _rename(copy, lambda name: names.get(name, prefix + name) if name else "", prefix)
        body.append(copy)
    versions = [o.version for o in function.opset_import if o.domain in _DOMAINS]
    return body, versions[0] if versions else opset


def _rename(node: Any, rename: Callable[[str], str], prefix: str) -> None:
    """Rename ``node``'s tensors in place, and every name of its subgraphs (If branches,
    Loop bodies), which may read the function's tensors."""
    node.name = prefix + (node.name or node.op_type)
    for names in (node.input, node.output):
        names[:] = [rename(n) for n in names]
    for attr in node.attribute:
        for graph in [attr.g] if attr.HasField("g") else list(attr.graphs):
            for values in (graph.input, graph.output, graph.initializer, graph.value_info):
                for value in values:
                    value.name = rename(value.name)
            for inner in graph.node:
                _rename(inner, rename, prefix)


def operand_type(value: Any) -> Any:
    """The ``TypeProto`` of an operand (a ``SymbolicTensor`` or an array; None for an
    omitted input): its element type and shape, symbolic dims by name."""
    import numpy as np
    from onnx import TypeProto, helper

    if value is None:
        return TypeProto()
    dtype = np.dtype(str(value.dtype))
    dtype = np.dtype(np.int64) if dtype.kind == "O" else dtype
    return helper.make_tensor_type_proto(helper.np_dtype_to_tensor_dtype(dtype),
                                         [d if isinstance(d, (int, str)) else None
                                          for d in value.shape])
