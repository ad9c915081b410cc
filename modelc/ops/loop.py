"""loop: ``nn.functional.loop`` (ONNX's Loop and Scan) compiled to one wasm loop.

The body is a graph of its own (``Body``), optimised and planned apart; its arena lives in
the loop node's scratch (laid out as at the body's largest dims), so every iteration runs
at the same addresses and only copies
move data: the states and the outer values into the body's inputs before the loop, row i
of each scanned input before an iteration, each per-iteration output to row i of its
stacked result and the new states back into the state inputs after it, and the final
states out after the loop. The body keeps its inputs alive to its end, so no result
overwrites an input that a later copy still reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import CompileError
from ..graph import Graph, Value
from . import OpDef

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..codegen import LowerContext
    from ..graph import Node, Shape

_LOCALS = ("local.get", "local.set", "local.tee")


@dataclass(eq=False)
class Body:
    """One iteration as a graph whose inputs are ``[i (int64, if counter)] + states +
    elements + outer`` and whose first outputs are the next states, then the per-iteration
    ``outputs``; callable as ``nn.functional.loop``'s body (through the interpreter)."""

    graph: Graph
    counter: bool
    states: int
    elements: int
    outputs: int
    source: Callable[..., Any] | None = None
    """The Python function the graph was traced from, if any: the eager semantics."""

    @classmethod
    def trace(cls, fn: Callable[..., Any], states: Sequence[tuple[Shape, str]],
              elements: Sequence[tuple[Shape, str]] = (),
              outer: Sequence[tuple[Shape, str]] = (), counter: bool = False,
              dims: dict[str, tuple[int, int]] | None = None) -> Body:
        """Trace ``fn(i, states, elements, outer) -> (states, outputs)`` (lists of arrays;
        ``i`` an int64 scalar) written with ``nn.functional`` into a body, its inputs of the
        ``(shape, dtype)`` given; ``dims`` are the enclosing graph's symbolic dims.

        Raises:
            CompileError: ``fn`` does not trace, or as ``build``.
        """
        from ..trace import SymbolicTensor, Tracer

        graph = Graph(dims=dims if dims is not None else {})
        tracer = Tracer(graph)

        def inputs(prefix: str, specs: Sequence[tuple[Shape, str]]) -> list[Any]:
            return [tracer.input(f"{prefix}{k}", tuple(shape), dtype)
                    for k, (shape, dtype) in enumerate(specs)]

        i = tracer.input("i", (), "int64") if counter else np.array(0, np.int64)
        new_states, outputs = fn(i, inputs("state", states), inputs("element", elements),
                                 inputs("outer", outer))
        graph.outputs = {}
        for k, value in enumerate([*new_states, *outputs]):
            if not isinstance(value, SymbolicTensor):
                raise CompileError(f"loop body result {k} is not computed from its inputs")
            graph.outputs[f"out{k}"] = value.value
        body = cls.build(graph, counter, len(states), len(elements))
        body.source = fn
        return body

    @classmethod
    def build(cls, graph: Graph, counter: bool, states: int, elements: int) -> Body:
        """Optimise and plan ``graph`` (its outputs: the next states, then the outputs).

        Raises:
            CompileError: a next state is (a view of) another input of the body (a swap:
                the copies back would read a state already overwritten).
        """
        from ..passes import PIPELINE, optimize, plan_memory

        optimize(graph, PIPELINE[:-1])
        inputs = list(graph.inputs.values())
        results = list(graph.outputs.values())
        graph.outputs.update({f"keep {v.name}": v for v in inputs})
        plan_memory(graph)
        first, arena = int(counter), graph.meta["arena"]
        for k, value in enumerate(results[:states]):
            taken = [v for v in inputs if not value.is_constant and v is not inputs[first + k]
                     and arena[id(v)] == arena[id(value)]]
            if taken:  # NOTE: a view of, or the same value as, another input
                raise CompileError(f"loop state {k} becomes the body input {taken[0]!r} (a "
                                   "swap of states?), which the wasm loop does not support: "
                                   "the copies back would read it overwritten")
        return cls(graph, counter, states, elements, len(results) - states)

    @property
    def results(self) -> list[Value]:
        return list(self.graph.outputs.values())[:self.states + self.outputs]

    def __call__(self, i: np.ndarray, states: list[np.ndarray], elements: list[np.ndarray],
                 outer: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        from ..interpreter import interpret

        if self.source is not None:
            return self.source(i, states, elements, outer)
        feeds = dict(zip(self.graph.inputs, [i][:int(self.counter)] + states + elements
                         + outer))
        values = list(interpret(self.graph, feeds).values())[:self.states + self.outputs]
        return values[:self.states], values[self.states:]

    def __repr__(self) -> str:
        return f"<loop body of {len(self.graph.nodes)} nodes>"


def _split(node: Node) -> dict[str, list[Value]]:
    """``node.inputs`` by parameter: count, states, xs, outer."""
    named: dict[str, list[Value]] = {"count": [], "states": [], "xs": [], "outer": []}
    for name, value in zip(node.input_names, node.inputs):
        named[name.rstrip("*")].append(value)
    return named


class _Moves:
    """The address pushes and ``memory.copy``s of one loop's lowering into ``ctx``: body
    values live in the scratch of the loop ``node``, at their offsets in the body's plan
    at its largest dims (a valid layout for every smaller dims, as sizes only shrink);
    ``i`` and ``n`` are the locals of the iteration and the trip count."""

    def __init__(self, ctx: LowerContext, node: Node, graph: Graph):
        self.ctx, self.node, self.graph = ctx, node, graph
        self.i, self.n = ctx.local(), ctx.local()

    def body(self, value: Value) -> Callable[[], None]:
        """A push of a body value's address (in the scratch), or a constant's."""
        from ..codegen import storage

        if value.is_constant:
            return lambda: self.ctx.constant(storage(value.data))
        return lambda: self.ctx.within_scratch(self.node, self.graph.meta["arena"][id(value)])

    def model(self, value: Value) -> Callable[[], None]:
        """A push of a value's address in the model's own arena or weights."""
        return lambda: self.ctx.address(value)

    def row(self, value: Value, back: bool) -> Callable[[], None]:
        """A push of the address of row i (n - 1 - i when ``back``) of a model value."""
        ctx = self.ctx

        def push() -> None:
            ctx.address(value)
            if back:
                for op, arg in (("local.get", self.n), ("i32.const", 1), ("i32.sub", None),
                                ("local.get", self.i), ("i32.sub", None)):
                    ctx.emit(op, *([] if arg is None else [arg]))
            else:
                ctx.emit("local.get", self.i)
            ctx.numel(tuple(value.shape[1:]))
            ctx.push(np.dtype(value.dtype).itemsize)
            for op in ("i32.mul", "i32.mul", "i32.add"):
                ctx.emit(op)
        return push

    def copy(self, dst: Callable[[], None], src: Callable[[], None], value: Value) -> None:
        """``memory.copy`` of ``value``'s bytes (its size at run time) from src to dst."""
        dst()
        src()
        self.ctx.numel(value.shape)
        self.ctx.push(np.dtype(value.dtype).itemsize)
        self.ctx.emit("i32.mul")
        self.ctx.emit("memory.copy")


class Loop(OpDef):
    name = "loop"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        body = attrs["body"]
        if not isinstance(body, Body):
            raise CompileError(f"loop: to compile, body must be a Body (Body.trace makes one "
                               f"from a Python step), got {type(body).__name__}")
        tensor_count = "count" not in attrs  # NOTE: a tensor is an input, not an attr
        xs = shapes[int(tensor_count) + body.states:][:body.elements]
        until = attrs.get("until")
        if attrs.get("count") is None and not tensor_count and not xs and until is None:
            raise CompileError("loop: give count, xs to scan along axis 0, or until")
        steps = (None if tensor_count or until is not None else attrs["count"]
                 if attrs.get("count") is not None else xs[0][0])
        results = body.results
        if body.outputs and steps is None:
            raise CompileError("loop: per-iteration outputs need a trip count known before "
                               "the run (a fixed count or a scanned axis), not a run-time "
                               "tensor or condition")
        if until is not None and (not 0 <= until < body.states
                                  or results[until].dtype != "bool"):
            raise CompileError(f"loop: until={until} must name a bool state")
        return ([(tuple(v.shape), v.dtype) for v in results[:body.states]]
                + [((steps, *v.shape), v.dtype) for v in results[body.states:]])

    def scratch(self, node: Node) -> tuple[tuple[int, ...], ...]:
        return ((max(1, -(-node.attrs["body"].graph.meta["arena_bytes"] // 4)),),)

    def lower(self, node: Node, ctx: LowerContext) -> None:
        from ..codegen import LowerContext as Context
        from ..codegen import lower_nodes

        body: Body = node.attrs["body"]
        graph, named = body.graph, _split(node)
        inputs = list(graph.inputs.values())
        first = int(body.counter)
        state_in = inputs[first:first + body.states]
        element_in = inputs[first + body.states:first + body.states + body.elements]
        results = body.results
        moves = _Moves(ctx, node, graph)
        for outer, inner in zip(named["states"] + named["outer"],
                                state_in + inputs[first + body.states + body.elements:]):
            moves.copy(moves.body(inner), moves.model(outer), inner)
        self._count(node, ctx, named)
        ctx.emit("local.set", moves.n)
        ctx.push(0)
        ctx.emit("local.set", moves.i)
        for op, arg in (("block", None), ("loop", None), ("local.get", moves.i),
                        ("local.get", moves.n), ("i32.ge_s", None), ("br_if", 1)):
            ctx.emit(op, *([] if arg is None else [arg]))
        if node.attrs.get("until") is not None:
            moves.body(state_in[node.attrs["until"]])()
            ctx.emit("i32.load8_u", 0)
            ctx.emit("i32.eqz")
            ctx.emit("br_if", 1)
        if body.counter:
            moves.body(inputs[0])()
            ctx.emit("local.get", moves.i)
            ctx.emit("i64.extend_i32_s")
            ctx.emit("i64.store", 3)
        backs = node.attrs.get("reverse_inputs") or [False] * body.elements
        for x, element, back in zip(named["xs"], element_in, backs):
            moves.copy(moves.body(element), moves.row(x, back), element)
        sub = Context(graph)
        lower_nodes(sub)
        self._replay(ctx, sub, node)
        backs = node.attrs.get("reverse_outputs") or [False] * body.outputs
        for out, result, back in zip(node.outputs[body.states:], results[body.states:], backs):
            moves.copy(moves.row(out, back), moves.body(result), result)
        for inner, result in zip(state_in, results):
            if result is not inner:
                moves.copy(moves.body(inner), moves.body(result), inner)
        for op, arg in (("local.get", moves.i), ("i32.const", 1), ("i32.add", None),
                        ("local.set", moves.i), ("br", 0), ("end", None), ("end", None)):
            ctx.emit(op, *([] if arg is None else [arg]))
        for out, inner in zip(node.outputs, state_in):
            moves.copy(moves.model(out), moves.body(inner), inner)

    @staticmethod
    def _count(node: Node, ctx: LowerContext, named: dict[str, list[Value]]) -> None:
        """Push the trip count: a run-time int tensor's first element, a fixed count, the
        length of the first scanned input, or the largest i32 (a loop ``until`` stops)."""
        if named["count"]:
            count = named["count"][0]
            if count.dtype not in ("int32", "int64") or math.prod(
                    d if isinstance(d, int) else 2 for d in count.shape) != 1:
                raise CompileError(f"loop: the trip count must be one int32 or int64, got "
                                   f"{count.dtype} of shape {list(count.shape)}")
            ctx.address(count)
            ctx.emit("i64.load" if count.dtype == "int64" else "i32.load", 3 if
                     count.dtype == "int64" else 2)
            if count.dtype == "int64":
                ctx.emit("i32.wrap_i64")
        elif node.attrs.get("count") is not None:
            ctx.push(int(node.attrs["count"]))
        elif named["xs"]:
            ctx.numel(tuple(named["xs"][0].shape[:1]))
        else:  # NOTE: only the condition (``until``) stops it
            ctx.push(2 ** 31 - 1)

    @staticmethod
    def _replay(ctx: LowerContext, sub: LowerContext, node: Node) -> None:
        """Re-record the body's lowering ``sub`` into ``ctx``: its plan's buffers inside
        ``node``'s scratch (at their offsets at the largest dims), its weights appended to
        ``ctx``'s, its dims and locals renumbered as ``ctx``'s and its kernel calls
        through ``ctx``."""
        largest = {name: high for name, (_, high) in sub.graph.dims.items()}
        offsets, _ = sub.graph.meta["plan"].evaluate(largest)
        weights = ctx.place(bytes(sub.weights)) if sub.weights else 0
        renumber = {k: ctx.dim_params[name] for name, k in sub.dim_params.items()}
        renumber.update({len(sub.dim_params) + k: ctx.local() for k in range(sub.locals)})
        for record in sub.records:
            kind = record[0]
            if kind == "weight":
                ctx.replay("i32.const", 0, record=("weight", weights + record[1]))
            elif kind == "arena":
                ctx.within_scratch(node, offsets[record[1]] + record[2])
            elif kind == "kernel":
                ctx.call(record[1])
            elif kind in _LOCALS:
                ctx.emit(kind, renumber.get(record[1], record[1]))
            else:
                ctx.emit(*record)


OP = Loop()
