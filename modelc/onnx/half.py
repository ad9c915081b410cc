"""The refusal of a model that computes in float16 or bfloat16 (a mixed-precision or
``float16`` export): wasmnn computes in float32, where onnxruntime rounds every half-precision
result, so the two would differ by half precision's own error (about 1e-3). The error names
every half-precision tensor, cast and constant at once, before any node imports."""

from __future__ import annotations

from typing import Any

from ..errors import CompileError

_SHOWN = 12
"""How many places the error lists before it counts the rest."""


def _half_types() -> dict[int, str]:
    from onnx import TensorProto

    return {TensorProto.FLOAT16: "float16", TensorProto.BFLOAT16: "bfloat16"}


def _places(graph: Any, half: dict[int, str], where: str = "") -> list[str]:
    """Each half-precision input, output, Cast, Constant and initializer of ``graph`` and
    its subgraphs, described (initializers last: the casts say more)."""
    found = [f"{where}{kind} {value.name!r} ({half[value.type.tensor_type.elem_type]})"
             for kind, values in (("input", graph.input), ("output", graph.output))
             for value in values if value.type.tensor_type.elem_type in half]
    weights = [f"{where}initializer {tensor.name!r} ({half[tensor.data_type]})"
               for tensor in graph.initializer if tensor.data_type in half]
    for i, node in enumerate(graph.node):
        name = node.name or f"#{i}"
        for attr in node.attribute:
            if node.op_type == "Cast" and attr.name == "to" and attr.i in half:
                found.append(f"{where}Cast {name!r} to {half[attr.i]}")
            elif attr.HasField("t") and attr.t.data_type in half:
                found.append(f"{where}{node.op_type} {name!r} ({half[attr.t.data_type]} "
                             f"{attr.name})")
            for body in [attr.g] if attr.HasField("g") else list(attr.graphs):
                found += _places(body, half, f"{where}{name!r}.{attr.name} > ")
    return found + weights


def check_no_half(proto: Any) -> None:
    """Raise once, naming every place ``proto`` holds or makes float16 / bfloat16 tensors.

    Raises:
        CompileError: the model computes in half precision.
    """
    found = _places(proto.graph, _half_types())
    if not found:
        return
    more = f" and {len(found) - _SHOWN} more" if len(found) > _SHOWN else ""
    raise CompileError(f"the ONNX model computes in half precision, which wasmnn does not "
                       f"(it computes in float32; onnxruntime rounds each half-precision "
                       f"result): {len(found)} place(s): {', '.join(found[:_SHOWN])}{more}; "
                       f"export the model in float32")
