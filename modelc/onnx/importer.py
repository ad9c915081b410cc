"""``from_onnx``: an ONNX model -> the graph IR, by tracing ``nn.functional`` calls.

Each ONNX node is one function in an op table (``ops_math``, ``ops_nn``, ``ops_rnn``,
``ops_shape``)
called on the node's operands: graph inputs are symbolic tensors of a ``Tracer``,
initializers and constants are numpy arrays, so the tracer records the primitives and
everything computable at import time (weights transforms, shape arithmetic) folds.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import CompileError, UnsupportedOpError
from ..graph import Dim, Graph, Value
from ..trace import DynamicSpec, SymbolicTensor, Tracer
from . import ops_activation, ops_layout, ops_math, ops_nn, ops_resize, ops_rnn, ops_shape
from .node import OnnxNode

OPS = {**ops_activation.OPS, **ops_layout.OPS, **ops_math.OPS, **ops_nn.OPS,
       **ops_resize.OPS, **ops_rnn.OPS, **ops_shape.OPS}
"""Every supported ONNX op type (default domain) and its import function."""
OPSETS = (9, 23)
"""The default-domain opset versions the importer follows (inclusive)."""
DEFAULT_DIM_RANGE = (1, 512)
"""Bounds of a symbolic ONNX dim that neither ``dynamic`` nor ``input_shapes`` fixes."""
_DOMAINS = ("", "ai.onnx")


def _load(model: Any) -> Any:
    import onnx

    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, bytes):
        return onnx.load_from_string(model)
    if isinstance(model, (str, os.PathLike)):
        return onnx.load(os.fspath(model))
    raise TypeError(f"expected an onnx.ModelProto, its bytes or a .onnx file path, got "
                    f"{type(model).__name__}")


def _opset(proto: Any) -> int:
    versions = [o.version for o in proto.opset_import if o.domain in _DOMAINS]
    if not versions or not OPSETS[0] <= versions[0] <= OPSETS[1]:
        raise CompileError(f"ONNX opset {versions[0] if versions else None} is not supported; "
                           f"expected {OPSETS[0]} to {OPSETS[1]} (re-export the model or "
                           "convert it with onnx.version_converter)")
    return versions[0]


def check_supported(proto: Any) -> None:
    """Raise once, listing every node whose op the importer does not cover.

    Raises:
        UnsupportedOpError: naming each such node and its op type.
    """
    bad = [f"{node.name or f'#{i}'!r} ({node.domain + '.' if node.domain else ''}"
           f"{node.op_type})" for i, node in enumerate(proto.graph.node)
           if node.domain not in _DOMAINS or node.op_type not in OPS]
    if bad:
        raise UnsupportedOpError(f"the ONNX model uses {len(bad)} unsupported node(s): "
                                 f"{', '.join(bad)}; supported ops: {sorted(OPS)}")


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper, numpy_helper

    attrs = {}
    for attr in node.attribute:
        value = helper.get_attribute_value(attr)
        if hasattr(value, "data_type"):
            value = numpy_helper.to_array(value)
        elif isinstance(value, bytes):
            value = value.decode()
        elif isinstance(value, list) and value and isinstance(value[0], bytes):
            value = [v.decode() for v in value]
        attrs[attr.name] = value
    return attrs


def _dim_name(text: str) -> str:
    name = re.sub(r"\W", "_", text)
    return name if name and not name[0].isdigit() else f"d_{name}"


def _input_shape(info: Any, fixed: Sequence[int] | None,
                 dynamic: Mapping[int, tuple[str, int, int]], dims: dict[str, tuple[int, int]]
                 ) -> tuple[Dim, ...]:
    """The IR shape of graph input ``info``: ``fixed`` if given, else its ONNX dims with
    ``dynamic`` overrides; symbolic dims are registered in ``dims``."""
    declared = info.type.tensor_type.shape.dim
    if fixed is not None:
        if len(fixed) != len(declared):
            raise ValueError(f"input_shapes[{info.name!r}] = {list(fixed)} has rank "
                             f"{len(fixed)}, the model's input has rank {len(declared)}")
        for axis, (want, dim) in enumerate(zip(fixed, declared)):
            if dim.HasField("dim_value") and dim.dim_value != want:
                raise ValueError(f"input_shapes[{info.name!r}] sets axis {axis} to {want}, "
                                 f"the model fixes it at {dim.dim_value}")
        return tuple(int(d) for d in fixed)
    shape: list[Dim] = []
    for axis, dim in enumerate(declared):
        if axis in dynamic:
            name, low, high = dynamic[axis]
            bounds = (low, high)
        elif dim.HasField("dim_value"):
            shape.append(int(dim.dim_value))
            continue
        else:
            name = _dim_name(dim.dim_param or f"{info.name}_{axis}")
            bounds = dims.get(name, DEFAULT_DIM_RANGE)
        if dims.setdefault(name, bounds) != bounds:
            raise ValueError(f"symbolic dim {name!r} is given two ranges: {dims[name]} and "
                             f"{bounds}")
        shape.append(name)
    return tuple(shape)


def _graph_value(name: str, result: Any) -> Value:
    if isinstance(result, SymbolicTensor):
        return result.value
    data = np.asarray(result)
    if data.dtype == object:
        raise CompileError(f"graph output {name!r} is the symbolic shape {data.tolist()}; "
                           "fix those dims with input_shapes")
    return Value(name, tuple(data.shape), str(data.dtype), data=data)


class _Importer:
    """Walks the ONNX nodes in order, keeping each tensor's operand by name."""

    def __init__(self, proto: Any, graph: Graph):
        from onnx import numpy_helper

        self.proto = proto
        self.graph = graph
        self.tracer = Tracer(graph)
        self.opset = _opset(proto)
        self.env: dict[str, Any] = {t.name: numpy_helper.to_array(t)
                                    for t in proto.graph.initializer}

    def add_inputs(self, input_shapes: Mapping[str, Sequence[int]], dynamic: DynamicSpec
                   ) -> None:
        from onnx.helper import tensor_dtype_to_np_dtype

        runtime = [i for i in self.proto.graph.input if i.name not in self.env]
        unknown = sorted((set(input_shapes) | set(dynamic)) - {i.name for i in runtime})
        if unknown:
            raise ValueError(f"input_shapes/dynamic name {unknown}, which are not among the "
                             f"model's inputs {sorted(i.name for i in runtime)}")
        for info in runtime:
            shape = _input_shape(info, input_shapes.get(info.name),
                                 dynamic.get(info.name, {}), self.graph.dims)
            dtype = tensor_dtype_to_np_dtype(info.type.tensor_type.elem_type)
            self.env[info.name] = self.tracer.input(info.name, shape, str(dtype))

    def run(self, index: int, node: Any) -> None:
        name = node.name or f"{node.op_type}_{index}"
        missing = [i for i in node.input if i and i not in self.env]
        if missing:
            raise CompileError(f"ONNX node {name!r} ({node.op_type}): inputs {missing} are "
                               "produced by no node (an unsupported optional output?)")
        onnx_node = OnnxNode(name, node.op_type, [self.env[i] if i else None
                                                  for i in node.input],
                             _attrs(node), self.opset, len(node.output))
        start = len(self.graph.nodes)
        try:
            results = OPS[node.op_type](onnx_node)
        except CompileError as err:
            if str(err).startswith(f"ONNX node {name!r}"):
                raise
            raise onnx_node.error(str(err)) from err
        except (ValueError, TypeError, IndexError) as err:
            shapes = ", ".join(str(v.tolist()) for v in onnx_node.inputs
                               if isinstance(v, np.ndarray) and v.dtype == object)
            hint = (f" (its inputs hold symbolic dims {shapes}; fix them with input_shapes / "
                    "--input-shape)" if shapes else "")
            raise onnx_node.error(f"{type(err).__name__}: {err}{hint}") from err
        for graph_node in self.graph.nodes[start:]:
            graph_node.meta["source"] = f"ONNX node {name!r} ({node.op_type})"
            if any(v.is_constant and v.dtype == "object" for v in graph_node.inputs):
                raise onnx_node.error("a shape naming symbolic dims reached a run-time op; "
                                      "fix those dims with input_shapes / --input-shape")
        results = results if isinstance(results, tuple) else (results,)
        for out, result in zip(node.output, results):
            if out:
                self.env[out] = (result if isinstance(result, SymbolicTensor)
                                 else np.asarray(result))


def from_onnx(model: Any, input_shapes: Mapping[str, Sequence[int]] | None = None,
              dynamic: DynamicSpec | None = None) -> Graph:
    """Import an ONNX model (default-domain opsets 9 to 23) as a graph.

    Args:
        model: an ``onnx.ModelProto``, its serialized bytes, or the path of a ``.onnx`` file.
        input_shapes: ``{input: shape}`` fixes every dim of those inputs (symbolic ONNX
            dims included), so shape computations on them fold to constants.
        dynamic: ``{input: {axis: (dim_name, min, max)}}`` makes an axis symbolic with
            those bounds. Other symbolic ONNX dims keep their name with bounds
            ``DEFAULT_DIM_RANGE``.

    Raises:
        UnsupportedOpError: listing every node whose op is not covered, before importing.
        CompileError: a node cannot be imported (an unsupported attribute or a shape
            computation over symbolic dims), naming the node and its op type.
        ValueError: ``input_shapes`` or ``dynamic`` do not fit the model's inputs.
        ImportError: the ``onnx`` package is not installed.
    """
    proto = _load(model)
    check_supported(proto)
    graph = Graph()
    importer = _Importer(proto, graph)
    importer.add_inputs(input_shapes or {}, dynamic or {})
    for index, node in enumerate(proto.graph.node):
        importer.run(index, node)
    graph.outputs = {o.name: _graph_value(o.name, importer.env[o.name])
                     for o in proto.graph.output}
    graph.verify()
    return graph
