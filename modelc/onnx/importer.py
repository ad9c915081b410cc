"""``from_onnx``: an ONNX model -> the graph IR, by tracing ``nn.functional`` calls.

Each ONNX node is one function in an op table (``ops_math``, ``ops_nn``, ``ops_rnn``,
``ops_shape``)
called on the node's operands: graph inputs are symbolic tensors of a ``Tracer``,
initializers and constants are numpy arrays, so the tracer records the primitives and
everything computable at import time (weights transforms, shape arithmetic) folds.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from nn import functional as F

from ..errors import CompileError, UnsupportedOpError
from ..graph import Dim, Graph, Guard, Value
from ..trace import DynamicSpec, SymbolicTensor, Tracer
from . import (
    functions,
    ops_activation,
    ops_bitshift,
    ops_control,
    ops_deform_conv,
    ops_detection,
    ops_einsum,
    ops_index,
    ops_layout,
    ops_math,
    ops_nn,
    ops_pool,
    ops_quantized,
    ops_resize,
    ops_rnn,
    ops_roi_align,
    ops_shape,
    ops_spectral,
    set_value,
)
from .fold_qdq import fold_qdq
from .functions import expandable
from .newer_opsets import changed_ops
from .node import OnnxNode
from .older_opsets import upgrade
from .row_counted import COUNT_SUFFIX, RowCounted, keeps_rows, rows_refused

OPS = {**ops_activation.OPS, **ops_layout.OPS, **ops_math.OPS, **ops_nn.OPS, **ops_pool.OPS,
       **ops_resize.OPS, **ops_rnn.OPS, **ops_shape.OPS, **ops_control.OPS, **ops_einsum.OPS,
       **ops_index.OPS, **ops_quantized.OPS, **ops_detection.OPS,
       **ops_spectral.OPS, **ops_bitshift.OPS,
       **ops_roi_align.OPS, **ops_deform_conv.OPS}
"""Every supported ONNX op type (default domain) and its import function."""
DOMAIN_OPS: dict[str, dict[str, Any]] = {"com.microsoft": ops_quantized.MICROSOFT,
                                         set_value.DOMAIN: set_value.OPS}
"""Supported ops of other domains (onnxruntime's contrib ops, and the importer's own rewrites),
by domain."""
OPSETS = (9, 23)
"""The default-domain opset versions the importer follows (inclusive)."""
CONVERTED = (1, 8)
"""Older opsets the importer first converts to ``OPSETS[0]`` (inclusive), unless every op of
the model is the version it is there."""
DEFAULT_DIM_RANGE = (1, 512)
"""Bounds of a symbolic ONNX dim that neither ``dynamic`` nor ``input_shapes`` fixes."""
_DOMAINS = ("", "ai.onnx")


def _load(model: Any) -> Any:
    import onnx

    if isinstance(model, onnx.ModelProto):
        return model
    try:
        if isinstance(model, bytes):
            return onnx.load_from_string(model)
        if isinstance(model, (str, os.PathLike)):
            return onnx.load(os.fspath(model))
    except (OSError, MemoryError):
        raise
    except Exception as err:  # noqa: BLE001 - protobuf's DecodeError and friends
        raise ValueError(f"not a valid ONNX model: {type(err).__name__}: {err}") from None
    raise TypeError(f"expected an onnx.ModelProto, its bytes or a .onnx file path, got "
                    f"{type(model).__name__}")


def _opset(proto: Any) -> int:
    """The opset the op functions follow for ``proto``: its own, or ``OPSETS[1]`` for a newer
    one whose ops differ from theirs at ``OPSETS[1]`` only by element types, or ``OPSETS[0]``
    for an older one that ``upgrade`` left as it is (its ops are the versions opset 9 has).

    Raises:
        CompileError: the opset is outside ``OPSETS`` and ``CONVERTED``, or newer with ops
            that changed.
    """
    versions = [o.version for o in proto.opset_import if o.domain in _DOMAINS]
    if versions and CONVERTED[0] <= versions[0] < OPSETS[0]:
        return OPSETS[0]
    if versions and versions[0] > OPSETS[1]:
        changed = changed_ops(proto, OPSETS[1], versions[0])
        if not changed:
            return OPSETS[1]
        raise CompileError(f"ONNX opset {versions[0]}: the importer follows opsets up to "
                           f"{OPSETS[1]}, and these ops of the model changed (or are new) "
                           f"since then: {changed}; export the model at opset {OPSETS[1]}")
    if not versions or not OPSETS[0] <= versions[0] <= OPSETS[1]:
        raise CompileError(f"ONNX opset {versions[0] if versions else None} is not supported; "
                           f"expected {OPSETS[0]} to {OPSETS[1]}, or {CONVERTED[0]} to "
                           f"{CONVERTED[1]} (converted on import); re-export the model or "
                           "convert it with onnx.version_converter")
    return versions[0]


def _unsupported(graph: Any, opset: int, where: str = "") -> list[tuple[str, str, str]]:
    """``(node, op, where)`` for every node of ``graph`` and its subgraphs (If branches,
    Loop and Scan bodies) whose op the importer does not cover, nor its ONNX function at
    ``opset``; ``where`` names the enclosing subgraph attribute, empty at the top level."""
    found = []
    for i, node in enumerate(graph.node):
        op = f"{node.domain + '.' if node.domain else ''}{node.op_type}"
        name = node.name or f"#{i}"
        if _op_function(node) is None and not expandable(node, opset):
            found.append((name, op, where))
        for attr in node.attribute:
            for body in [attr.g] if attr.HasField("g") else list(attr.graphs):
                found += _unsupported(body, opset, f"{where}{name!r}.{attr.name} > ")
    return found


def _op_function(node: Any) -> Any:
    """The import function of ``node``'s op (by domain and type), or None."""
    if node.domain in _DOMAINS:
        return OPS.get(node.op_type)
    return DOMAIN_OPS.get(node.domain, {}).get(node.op_type)


def check_supported(proto: Any) -> None:
    """Raise once, listing every node whose op the importer does not cover, control-flow
    subgraphs included, and which of those ops appear only inside such a subgraph.

    Raises:
        UnsupportedOpError: naming each such node and its op type.
    """
    versions = [o.version for o in proto.opset_import if o.domain in _DOMAINS]
    bad = _unsupported(proto.graph, min(versions[0] if versions else OPSETS[1], OPSETS[1]))
    if not bad:
        return
    nodes = ", ".join(f"{where}{name!r} ({op})" for name, op, where in bad)
    top = {op for _, op, where in bad if not where}
    nested = sorted({op for _, op, where in bad if where} - top)
    inside = (f"; only inside control-flow subgraphs (If/Loop/Scan): {nested}" if nested
              else "")
    raise UnsupportedOpError(f"the ONNX model uses {len(bad)} unsupported node(s): {nodes}"
                             f"{inside}; supported ops: {sorted(OPS)} and "
                             f"{ {d: sorted(ops) for d, ops in DOMAIN_OPS.items()} }")


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
        if counts and (_op_function(node) is None or len(counts) > 1):
            raise rows_refused(name, node, operands)
        if _op_function(node) is None:
            self.run_function(name, node)
            return
        onnx_node = OnnxNode(name, node.op_type,
                             [v.rows if isinstance(v, RowCounted) else v for v in operands],
                             _attrs(node), self.opset, len(node.output), self.subgraph,
                             self.detached)
        start = len(self.graph.nodes)
        try:
            results = _op_function(node)(onnx_node)
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
                  if _op_function(n) is None and not expandable(n, opset)})
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
        CompileError: a node cannot be imported (an unsupported attribute or a shape
            computation over symbolic dims), naming the node and its op type.
        ValueError: ``input_shapes`` or ``dynamic`` do not fit the model's inputs, or
            ``model`` is not a valid ONNX model.
        ImportError: the ``onnx`` package is not installed.
    """
    proto = set_value.fold_set_value(fold_qdq(upgrade(_load(model), OPSETS[0], CONVERTED)))
    check_supported(proto)
    graph = Graph()
    importer = _Importer(proto, graph, _opset(proto))
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
