"""``from_onnx``: an ONNX model -> the graph IR, by tracing ``nn.functional`` calls.

Each ONNX node is one function in an op table (``ops_math``, ``ops_nn``, ``ops_rnn``,
``ops_shape``)
called on the node's operands: graph inputs are symbolic tensors of a ``Tracer``,
initializers and constants are numpy arrays, so the tracer records the primitives and
everything computable at import time (weights transforms, shape arithmetic) folds.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from nn import functional as F

from ..errors import CompileError, UnsupportedOpError
from ..graph import Dim, Graph, Guard, Value
from ..trace import DynamicSpec, SymbolicTensor, Tracer
from . import functions, merged_transpose, set_value
from .fold_qdq import fold_qdq
from .functions import expandable
from .half import check_no_half
from .node import OnnxNode
from .older_opsets import upgrade
from .op_table import CONVERTED, OPSETS, check_supported, load, op_function, opset_of
from .row_counted import COUNT_SUFFIX, RowCounted, keeps_rows, rows_refused

DEFAULT_DIM_RANGE = (1, 512)
"""Bounds of a symbolic ONNX dim that neither ``dynamic`` nor ``input_shapes`` fixes."""

def _read_names(graph: Any) -> set[str]:
    """The tensor names the nodes of ``graph`` (and of its subgraphs) read but do not
    produce: what it takes from its inputs, initializers and outer scopes."""
    read: set[str] = set()
    made = {o for node in graph.node for o in node.output}
    for node in graph.node:
        read.update(i for i in node.input if i)
        for attr in node.attribute:
            for sub in [attr.g] if attr.HasField("g") else list(attr.graphs):
                read |= _read_names(sub)
    return read - made


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


def _fixed(dim: Any) -> bool:
    """Whether an ONNX dim is a fixed size. NOTE: older paddle2onnx exports store a dynamic
    dim as ``dim_value: -1``; onnxruntime takes it as symbolic, and so do we."""
    return dim.HasField("dim_value") and dim.dim_value >= 0


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
            if _fixed(dim) and dim.dim_value != want:
                raise ValueError(f"input_shapes[{info.name!r}] sets axis {axis} to {want}, "
                                 f"the model fixes it at {dim.dim_value}")
        return tuple(int(d) for d in fixed)
    shape: list[Dim] = []
    for axis, dim in enumerate(declared):
        if axis in dynamic:
            name, low, high = dynamic[axis]
            bounds = (low, high)
        elif _fixed(dim):
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
    """Walks the ONNX nodes in order, keeping each tensor's operand by name. A control-flow
    op imports its subgraphs through ``subgraph`` into the same graph, in a child scope that
    sees the outer names; nodes of a branch taken at run time carry its ``guard``."""

    def __init__(self, proto: Any, graph: Graph, opset: int):
        from onnx import numpy_helper

        self.proto = proto
        self.graph = graph
        self.tracer = Tracer(graph)
        self.opset = opset
        self.env: dict[str, Any] = {t.name: numpy_helper.to_array(t)
                                    for t in proto.graph.initializer}
        self.guard: Guard = ()

    def subgraph(self, body: Any, inputs: Sequence[Any], guard: Guard = ()) -> list[Any]:
        """Import subgraph ``body`` with its formal inputs bound to ``inputs`` (outer names
        visible) and return its outputs' operands; new nodes get ``guard`` appended to this
        scope's.

        Raises:
            CompileError: ``inputs`` do not match the subgraph's inputs, or a node fails.
        """
        from onnx import numpy_helper

        if len(inputs) != len(body.input):
            raise CompileError(f"subgraph {body.name!r} takes {len(body.input)} inputs, "
                               f"given {len(inputs)}")
        child = copy.copy(self)
        child.env = {**self.env, **{t.name: numpy_helper.to_array(t) for t in body.initializer},
                     **{info.name: value for info, value in zip(body.input, inputs)}}
        child.guard = self.guard + guard
        for index, node in enumerate(body.node):
            child.run(index, node)
        return [child.env[o.name] for o in body.output]

    def detached(self, body: Any, inputs: Sequence[Any]) -> tuple[Graph, list[Any]]:
        """Import subgraph ``body`` as a graph of its own (a loop body run many times):
        each formal input bound to a known array stays known, any other becomes a graph
        input of the ``(shape, dtype)`` given; each run-time tensor of the outer scope it
        reads becomes one more graph input. The graph's outputs are the body's.

        Returns:
            The graph and the outer tensors behind its extra inputs, in input order.

        Raises:
            CompileError: ``inputs`` do not match the subgraph's inputs, or a node fails.
        """
        from onnx import numpy_helper

        if len(inputs) != len(body.input):
            raise CompileError(f"subgraph {body.name!r} takes {len(body.input)} inputs, "
                               f"given {len(inputs)}")
        graph = Graph(dims=self.graph.dims)  # NOTE: shared, so the dims are run's params
        child = copy.copy(self)
        child.graph, child.tracer, child.guard = graph, Tracer(graph), ()
        child.env = {**self.env, **{t.name: numpy_helper.to_array(t) for t in body.initializer}}
        for k, (info, spec) in enumerate(zip(body.input, inputs)):
            child.env[info.name] = (spec if isinstance(spec, np.ndarray)
                                    else child.tracer.input(f"in{k}", *spec))
        formal = {i.name for i in body.input} | {t.name for t in body.initializer}
        outer: list[Any] = []
        for name in sorted(_read_names(body) - formal):
            value = self.env.get(name)
            if isinstance(value, SymbolicTensor):
                child.env[name] = child.tracer.input(f"outer{len(outer)}", tuple(value.shape),
                                                     str(value.dtype))
                outer.append(value)
        for index, node in enumerate(body.node):
            child.run(index, node)
        graph.outputs = {f"out{k}": _graph_value(f"out{k}", child.env[o.name])
                         for k, o in enumerate(body.output)}
        return graph, outer

    def run_function(self, name: str, node: Any) -> None:
        """Import ``node`` as the body of its op's ONNX function (at that body's opset)."""
        body, opset = _expanded(self, name, node)
        outer, self.opset = self.opset, opset
        try:
            for index, inner in enumerate(body):
                self.run(index, inner)
        except CompileError as err:
            raise CompileError(f"ONNX node {name!r} ({node.op_type}), imported as its ONNX "
                               f"function: {err}") from err
        finally:
            self.opset = outer

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
        operands = [self.env[i] if i else None for i in node.input]
        counted = [isinstance(v, RowCounted) for v in operands]
        counts = {id(v.count) for v in operands if isinstance(v, RowCounted)}
        if counts and (op_function(node) is None or len(counts) > 1):
            raise rows_refused(name, node, operands)
        if op_function(node) is None:
            self.run_function(name, node)
            return
        onnx_node = OnnxNode(name, node.op_type,
                             [v.rows if isinstance(v, RowCounted) else v for v in operands],
                             _attrs(node), self.opset, len(node.output), self.subgraph,
                             self.detached)
        start = len(self.graph.nodes)
        try:
            results = op_function(node)(onnx_node)
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
            if not str(graph_node.meta.get("source")).startswith("ONNX node"):  # innermost
                graph_node.meta["source"] = f"ONNX node {name!r} ({node.op_type})"
            if self.guard and "guard" not in graph_node.meta:
                graph_node.meta["guard"] = self.guard
            if any(v.is_constant and v.dtype == "object" for v in graph_node.inputs):
                raise onnx_node.error("a shape naming symbolic dims reached a run-time op; "
                                      "fix those dims with input_shapes / --input-shape")
        results = results if isinstance(results, tuple) else (results,)
        if any(counted):
            if not (all(isinstance(r, SymbolicTensor) for r in results)
                    and keeps_rows(onnx_node, counted, results)):
                raise rows_refused(name, node, operands)
            first = next(v for v in operands if isinstance(v, RowCounted))
            results = tuple(RowCounted(r, first.count, first.producer) for r in results)
        for out, result in zip(node.output, results):
            if out:
                self.env[out] = (result if isinstance(result, (SymbolicTensor, RowCounted))
                                 else np.asarray(result))


def _expanded(importer: _Importer, name: str, node: Any) -> tuple[list[Any], int]:
    """The body of ``node``'s ONNX function and its opset; an op in it the importer does
    not cover, nor its function, is refused naming both."""
    types = [functions.operand_type(importer.env[i] if i else None) for i in node.input]
    body, opset = functions.expand(node, importer.opset, types, f"{name}/")
    opset = min(opset, OPSETS[1])
    bad = sorted({n.op_type for n in body
                  if op_function(n) is None and not expandable(n, opset)})
    if bad:
        raise UnsupportedOpError(f"ONNX node {name!r} ({node.op_type}) is defined by an ONNX "
                                 f"function using unsupported ops {bad}")
    return body, opset


def from_onnx(model: Any, input_shapes: Mapping[str, Sequence[int]] | None = None,
              dynamic: DynamicSpec | None = None) -> Graph:
    """Import an ONNX model (default-domain opsets 9 to 23; 7 and 8 are converted to 9 with
    ``onnx.version_converter`` first, with a warning; a newer one imports when its ops are
    those of opset 23 up to added element types) as a graph.

    Args:
        model: an ``onnx.ModelProto``, its serialized bytes, or the path of a ``.onnx`` file.
        input_shapes: ``{input: shape}`` fixes every dim of those inputs (symbolic ONNX
            dims included), so shape computations on them fold to constants.
        dynamic: ``{input: {axis: (dim_name, min, max)}}`` makes an axis symbolic with
            those bounds. Other symbolic ONNX dims keep their name with bounds
            ``DEFAULT_DIM_RANGE``.

    Raises:
        UnsupportedOpError: listing every node whose op is not covered, before importing.
        CompileError: the model computes in float16 or bfloat16 (naming every such tensor,
            before importing), or a node cannot be imported (an unsupported attribute or a
            shape computation over symbolic dims), naming the node and its op type.
        ValueError: ``input_shapes`` or ``dynamic`` do not fit the model's inputs, or
            ``model`` is not a valid ONNX model.
        ImportError: the ``onnx`` package is not installed.
    """
    proto = set_value.fold_set_value(fold_qdq(upgrade(load(model), OPSETS[0], CONVERTED)))
    proto = merged_transpose.fold_merged_transposes(proto)
    check_supported(proto)
    check_no_half(proto)
    graph = Graph()
    importer = _Importer(proto, graph, opset_of(proto))
    importer.add_inputs(input_shapes or {}, dynamic or {})
    given = {axis[0] for axes in (dynamic or {}).values() for axis in axes.values()}
    graph.meta["default_dims"] = tuple(name for name in graph.dims if name not in given)
    for index, node in enumerate(proto.graph.node):
        importer.run(index, node)
    producer = {out: node.op_type for node in proto.graph.node for out in node.output}
    for o in proto.graph.output:  # NOTE: their int32 accumulators are float32 in the graph
        if producer.get(o.name) in ("MatMulInteger", "ConvInteger"):
            importer.env[o.name] = F.cast(importer.env[o.name], np.int32)
    graph.outputs = {}
    for o in proto.graph.output:
        value = importer.env[o.name]
        if isinstance(value, RowCounted):
            graph.outputs[o.name + COUNT_SUFFIX] = _graph_value(o.name, value.count)
            graph.meta.setdefault("row_counts", {})[o.name] = o.name + COUNT_SUFFIX
            value = value.rows
        graph.outputs[o.name] = _graph_value(o.name, value)
    graph.verify()
    return graph
