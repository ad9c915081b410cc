"""loop: ``nn.functional.loop`` (ONNX's Loop and Scan) compiled to one wasm loop.

The body is a graph of its own (``Body``), optimised and planned apart; its arena lives in
the loop node's scratch, so every iteration runs at the same addresses and only copies
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
            CompileError: a next state is another state's input (a swap: the copies back
                would read a state already overwritten).
        """
        from ..passes import PIPELINE, optimize, plan_memory

        optimize(graph, PIPELINE[:-1])
        inputs = list(graph.inputs.values())
        first = int(counter)
        for k, value in enumerate(list(graph.outputs.values())[:states]):
            if value in inputs and value is not inputs[first + k]:
                raise CompileError(f"loop state {k} becomes another input of the body "
                                   f"({value!r}), which the wasm loop does not support")
        outputs = len(graph.outputs) - states
        graph.outputs.update({f"keep {v.name}": v for v in inputs})
        plan_memory(graph)
        return cls(graph, counter, states, elements, outputs)

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


def _address(ctx: LowerContext, value: Value) -> Callable[[], None]:
    """A push of ``value``'s address in the model's own arena or weights."""
    return lambda: ctx.address(value)


class Loop(OpDef):
    name = "loop"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        body: Body = attrs["body"]
        tensor_count = "count" not in attrs  # NOTE: a tensor is an input, not an attr
        xs = shapes[int(tensor_count) + body.states:][:body.elements]
        if attrs.get("count") is None and not tensor_count:
            if not xs:
                raise CompileError("loop: give count, or xs to scan along axis 0")
            steps = xs[0][0]
        else:
            steps = None if tensor_count else attrs["count"]
        results = body.results
        if body.outputs and steps is None:
            raise CompileError("loop: per-iteration outputs need a trip count known before "
                               "the run (a fixed count or a scanned axis), not a run-time "
                               "tensor")
        return ([(tuple(v.shape), v.dtype) for v in results[:body.states]]
                + [((steps, *v.shape), v.dtype) for v in results[body.states:]])

    def scratch(self, node: Node) -> tuple[tuple[int, ...], ...]:
        return ((max(1, -(-node.attrs["body"].graph.meta["arena_bytes"] // 4)),),)

    def lower(self, node: Node, ctx: LowerContext) -> None:
        from ..codegen import LowerContext as Context
        from ..codegen import lower_nodes, storage

        body: Body = node.attrs["body"]
        graph, named = body.graph, _split(node)
        base = ctx.graph.meta["scratch"][(id(node), 0)]
        inputs = list(graph.inputs.values())
        first = int(body.counter)
        state_in = inputs[first:first + body.states]
        element_in = inputs[first + body.states:first + body.states + body.elements]
        results = body.results

        def at(value: Value) -> Callable[[], None]:
            """A push of a body value's address (in the scratch) or a constant's."""
            if value.is_constant:
                return lambda: ctx.constant(storage(value.data))
            return lambda: ctx.arena(base + graph.meta["arena"][id(value)])

        def copy(dst: Callable[[], None], src: Callable[[], None], value: Value) -> None:
            dst()
            src()
            ctx.numel(value.shape)
            ctx.push(np.dtype(value.dtype).itemsize)
            ctx.emit("i32.mul")
            ctx.emit("memory.copy")

        for outer, inner in zip(named["states"] + named["outer"],
                                state_in + inputs[first + body.states + body.elements:]):
            copy(at(inner), _address(ctx, outer), inner)
        i, n = ctx.local(), ctx.local()
        self._count(node, ctx, named)
        ctx.emit("local.set", n)
        ctx.push(0)
        ctx.emit("local.set", i)

        def row(value: Value, back: bool) -> Callable[[], None]:
            """A push of the address of row i (n - 1 - i when ``back``) of ``value``."""
            def push() -> None:
                ctx.address(value)
                if back:
                    ctx.emit("local.get", n)
                    ctx.push(1)
                    ctx.emit("i32.sub")
                    ctx.emit("local.get", i)
                    ctx.emit("i32.sub")
                else:
                    ctx.emit("local.get", i)
                ctx.numel(tuple(value.shape[1:]))
                ctx.push(np.dtype(value.dtype).itemsize)
                ctx.emit("i32.mul")
                ctx.emit("i32.mul")
                ctx.emit("i32.add")
            return push

        ctx.emit("block")
        ctx.emit("loop")
        ctx.emit("local.get", i)
        ctx.emit("local.get", n)
        ctx.emit("i32.ge_s")
        ctx.emit("br_if", 1)
        if body.counter:
            at(inputs[0])()
            ctx.emit("local.get", i)
            ctx.emit("i64.extend_i32_s")
            ctx.emit("i64.store", 3)
        backs = node.attrs.get("reverse_inputs") or [False] * body.elements
        for x, element, back in zip(named["xs"], element_in, backs):
            copy(at(element), row(x, back), element)
        sub = Context(graph)
        lower_nodes(sub)
        self._replay(ctx, sub, base)
        backs = node.attrs.get("reverse_outputs") or [False] * body.outputs
        for out, result, back in zip(node.outputs[body.states:], results[body.states:], backs):
            copy(row(out, back), at(result), result)
        for inner, result in zip(state_in, results):
            if result is not inner:
                copy(at(inner), at(result), inner)
        ctx.emit("local.get", i)
        ctx.push(1)
        ctx.emit("i32.add")
        ctx.emit("local.set", i)
        ctx.emit("br", 0)
        ctx.emit("end")
        ctx.emit("end")
        for out, inner in zip(node.outputs, state_in):
            copy(_address(ctx, out), at(inner), inner)

    @staticmethod
    def _count(node: Node, ctx: LowerContext, named: dict[str, list[Value]]) -> None:
        """Push the trip count: a run-time int tensor's first element, a fixed count, or
        the length of the first scanned input."""
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
        else:
            ctx.numel(tuple(named["xs"][0].shape[:1]))

    @staticmethod
    def _replay(ctx: LowerContext, sub: LowerContext, base: int) -> None:
        """Re-record the body's lowering ``sub`` into ``ctx``: its arena inside the scratch
        at ``base``, its weights appended to ``ctx``'s, its locals renumbered after
        ``ctx``'s and its kernel calls through ``ctx``."""
        weights = ctx.place(bytes(sub.weights)) if sub.weights else 0
        renumber = {k: ctx.dim_params[name] for name, k in sub.dim_params.items()}
        renumber.update({len(sub.dim_params) + k: ctx.local() for k in range(sub.locals)})
        for record in sub.records:
            kind = record[0]
            if kind == "weight":
                ctx.replay("i32.const", 0, record=("weight", weights + record[1]))
            elif kind == "arena":
                ctx.arena(base + record[1])
            elif kind == "kernel":
                ctx.call(record[1])
            elif kind in _LOCALS:
                ctx.emit(kind, renumber.get(record[1], record[1]))
            else:
                ctx.emit(*record)


OP = Loop()
