"""ONNX control flow: If, Loop and Scan, imported by importing their subgraphs.

An ``If`` whose condition is known at import time (a constant, or computed from constants
and fixed shapes) is folded: only the branch taken is imported. A run-time ``If`` imports
both branches, each node guarded by the condition (codegen wraps guarded nodes in a wasm
``if``), and merges each output pair with ``where`` on the condition; when one branch
cannot import for the given shapes, only the other is kept and a ``check`` traps at run
time if the condition picks the failed one. ``Loop`` with a known
trip count and ``Scan`` over a fixed axis are unrolled up to ``MAX_UNROLL`` iterations: the
body is imported once per iteration. Past that, or with a trip count known only at run
time, or over a symbolic axis, the body is imported once as a graph of its own and the op
becomes one ``nn.functional.loop``: a wasm loop (``modelc/ops/loop.py``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from nn import functional as F

from ..errors import CompileError
from ..ops.loop import Body
from .fold import is_known, operands
from .node import OnnxNode

OpFn = Callable[[OnnxNode], Any]
MAX_UNROLL = 256
"""The most iterations a ``Loop`` or ``Scan`` is unrolled to."""


def if_(n: OnnxNode) -> tuple[Any, ...]:
    """If: fold a known condition; otherwise both branches, merged by ``where``."""
    cond = n.input(0)
    if is_known(cond):
        if cond.size != 1:
            raise n.error(f"the condition must hold one element, got shape {list(cond.shape)}")
        return tuple(n.subgraph("then_branch" if cond.reshape(-1)[0] else "else_branch"))
    if cond.dtype != np.bool_ or any(d != 1 for d in cond.shape):  # NOTE: (1, 1) as ORT
        raise n.error(f"the condition must be one bool, got {cond.dtype} of shape "
                      f"{list(cond.shape)}")
    flag: Any = F.reshape(cond, ())  # a SymbolicTensor (cond is traced)
    branches: dict[bool, list[Any] | CompileError] = {}
    for name, truth in (("then_branch", True), ("else_branch", False)):
        try:
            branches[truth] = n.subgraph(name, guard=((flag.value, truth),))
        except CompileError as err:
            branches[truth] = err
    then, other = branches[True], branches[False]
    if isinstance(then, CompileError) and isinstance(other, CompileError):
        raise then
    if isinstance(then, CompileError) or isinstance(other, CompileError):
        return _only_branch(n, flag, then, other)
    merged = []
    for k, (a, b) in enumerate(zip(then, other)):
        if tuple(a.shape) != tuple(b.shape):
            raise n.error(f"output {k} is {list(a.shape)} in then_branch and {list(b.shape)} "
                          "in else_branch; a run-time If needs one shape (fix the inputs "
                          "that decide it with input_shapes, or the condition itself)")
        if is_known(a, b) and a.shape == b.shape and np.array_equal(a, b):
            merged.append(a)
            continue
        a, b = (F.cast(v, np.result_type(a.dtype, b.dtype)) if is_known(v) else v
                for v in (a, b))
        merged.append(F.where(flag, *operands(a, b)))
    return tuple(merged)


def _only_branch(n: OnnxNode, flag: Any, then: Any, other: Any) -> tuple[Any, ...]:
    """The outputs of the one branch that imports for these shapes (the other failed with
    the error given), each checked at run time: a condition picking the failed branch
    traps, as onnxruntime fails there."""
    truth = not isinstance(then, CompileError)
    good, error = (then, other) if truth else (other, then)
    message = (f"ONNX node {n.name!r} (If): the condition picked "
               f"{'else' if truth else 'then'}_branch, which cannot run for the compiled "
               f"input shapes ({str(error).splitlines()[0]})")
    warnings.warn(message.replace("the condition picked", "only one branch imports;"),
                  stacklevel=2)
    return tuple(F.check(v, flag, expected=truth, message=message) if not is_known(v) else v
                 for v in good)


def _stack(parts: list[Any], axis: int) -> Any:
    """Per-iteration scan outputs joined along a new axis ``axis``."""
    expanded = [F.reshape(p, (*p.shape[:axis], 1, *p.shape[axis:])) if not is_known(p)
                else np.expand_dims(p, axis) for p in parts]
    if is_known(*expanded):
        return np.concatenate(expanded, axis=axis)
    return expanded[0] if len(expanded) == 1 else F.concat(expanded, axis)


class _RunTimeCondition(Exception):
    """An unrolled loop met a condition known only at run time."""


def loop(n: OnnxNode) -> tuple[Any, ...]:
    """Loop, unrolled when it stops within ``MAX_UNROLL`` iterations by its trip count
    ``M`` (known at import time) or by a condition that folds in every iteration; a wasm
    loop (``_loop_in_wasm``) when ``M`` or the condition is known only at run time, or
    ``M`` is larger."""
    count = n.optional(0)
    cond: Any = n.optional(1) if n.has(1) else np.array(True)
    if not is_known(count, cond) or (count is not None
                                     and int(count.reshape(-1)[0]) > MAX_UNROLL):
        return _loop_in_wasm(n, count, cond)
    try:
        return _unrolled_loop(n, count, cond)
    except _RunTimeCondition:  # NOTE: the unrolled iterations left feed nothing (dead code)
        return _loop_in_wasm(n, count, cond)


def _unrolled_loop(n: OnnxNode, count: np.ndarray | None, cond: np.ndarray
                   ) -> tuple[Any, ...]:
    limit = int(count.reshape(-1)[0]) if count is not None else None
    carried = list(n.inputs[2:])
    scans: list[list[Any]] = [[] for _ in range(n.outputs - len(carried))]
    i = 0
    while (limit is None or i < limit) and bool(np.asarray(cond).reshape(-1)[0]):
        if i == MAX_UNROLL:
            raise n.error(f"still running after {MAX_UNROLL} iterations, the most unrolled")
        cond, *outputs = n.subgraph("body", [np.array(i, np.int64), cond, *carried])
        if not is_known(cond):
            raise _RunTimeCondition
        carried = outputs[:len(carried)]
        for parts, value in zip(scans, outputs[len(carried):]):
            parts.append(value)
        i += 1
    if scans and not scans[0]:
        raise n.error("a loop that runs no iteration has empty scan outputs, which are not "
                      "supported")
    return (*carried, *(_stack(parts, 0) for parts in scans))


def _results(values: Any) -> list[Any]:
    """``nn.functional.loop``'s result as a list (one output comes alone)."""
    return list(values) if isinstance(values, tuple) else [values]


def _spec(value: Any) -> tuple[tuple[Any, ...], str]:
    return tuple(value.shape), str(value.dtype)


def _loop_in_wasm(n: OnnxNode, count: Any, cond: Any) -> tuple[Any, ...]:
    """Loop as one ``nn.functional.loop`` (a wasm loop over a body compiled once). When
    the body keeps a true condition true (a constant), only ``M`` stops it; otherwise the
    condition is loop-carried state 0 and the loop stops before an iteration where it is
    false (and then has no stacked outputs: their length is unknown before the run)."""
    carried = [n.input(i) for i in range(2, len(n.inputs))]
    specs = [_spec(v) for v in carried]
    steps = count if count is None or not is_known(count) else int(count.reshape(-1)[0])
    if is_known(cond):
        if not bool(np.asarray(cond).reshape(-1)[0]):
            if n.outputs > len(carried):
                raise n.error("a loop that runs no iteration has empty scan outputs, which "
                              "are not supported")
            return tuple(carried)
        graph, outer = n.detached("body", [((), "int64"), np.array(True), *specs])
        cond_out, *results = graph.outputs.values()
        if count is not None and cond_out.is_constant and bool(
                np.asarray(cond_out.data).reshape(-1)[0]):
            _check_states(n, carried, results)
            graph.outputs = dict(list(graph.outputs.items())[1:])
            body = Body.build(graph, counter=True, states=len(carried), elements=0)
            return tuple(_results(F.loop(steps, carried, [], outer, body)))
    if n.outputs > len(carried):
        raise n.error("a loop whose condition is computed at run time has scan outputs of a "
                      "length unknown before the run, which are not supported")
    graph, outer = n.detached("body", [((), "int64"), _spec(cond), *specs])
    _check_states(n, [cond, *carried], list(graph.outputs.values()))
    body = Body.build(graph, counter=True, states=1 + len(carried), elements=0)
    return tuple(_results(F.loop(steps, [cond, *carried], [], outer, body, until=0))[1:])


def _check_states(n: OnnxNode, initial: list[Any], results: list[Any]) -> None:
    """Each loop-carried value keeps its dtype and shape (unit axes aside) in the body."""
    def squeezed(v: Any) -> tuple[str, list[Any]]:
        return str(v.dtype), [d for d in v.shape if d != 1]

    for k, (a, b) in enumerate(zip(initial, results)):
        if squeezed(a) != squeezed(b):
            raise n.error(f"loop-carried value {k} starts as {a.dtype}{list(a.shape)} and the "
                          f"body makes it {b.dtype}{list(b.shape)}; a wasm loop needs one")


def _scan_in_wasm(n: OnnxNode, states: list[Any], inputs: list[Any], in_axes: list[int],
                  backwards: list[int]) -> tuple[Any, ...]:
    """Scan as one ``nn.functional.loop`` over a length known only at run time (a symbolic
    axis) or over ``MAX_UNROLL``: scan axes are moved to the front and back."""
    xs = [_to_front(x, a) for x, a in zip(inputs, in_axes)]
    if len({x.shape[0] for x in xs}) != 1:
        raise n.error(f"scan inputs need one length along their scan axes, got "
                      f"{sorted(str(x.shape[0]) for x in xs)}")
    graph, outer = n.detached("body", [*(_spec(v) for v in states),
                                       *((tuple(x.shape[1:]), str(x.dtype)) for x in xs)])
    _check_states(n, states, list(graph.outputs.values()))
    body = Body.build(graph, counter=False, states=len(states), elements=len(xs))
    out_count = n.outputs - len(states)
    results = _results(F.loop(None, states, xs, outer, body,
                              reverse_inputs=tuple(bool(b) for b in backwards),
                              reverse_outputs=tuple(bool(b) for b in
                                                    n.attr("scan_output_directions")
                                                    or [0] * out_count)))
    stacked = [_from_front(y, n.axis(a, len(y.shape))) for y, a in zip(
        results[len(states):], n.attr("scan_output_axes") or [0] * out_count)]
    return (*results[:len(states)], *stacked)


def _to_front(x: Any, axis: int) -> Any:
    order = [axis] + [a for a in range(len(x.shape)) if a != axis]
    if axis == 0:
        return x
    return np.transpose(x, order) if is_known(x) else F.permute(x, order)


def _from_front(y: Any, axis: int) -> Any:
    order = list(range(1, axis + 1)) + [0] + list(range(axis + 1, len(y.shape)))
    if axis == 0:
        return y
    return np.transpose(y, order) if is_known(y) else F.permute(y, order)


def scan(n: OnnxNode) -> tuple[Any, ...]:
    """Scan (opset 9+), unrolled over the scan axis of its inputs when it is fixed and at
    most ``MAX_UNROLL`` long, else a wasm loop (``_scan_in_wasm``)."""
    count = n.attr("num_scan_inputs")
    states = [n.input(i) for i in range(len(n.inputs) - count)]
    inputs = [n.input(i) for i in range(len(states), len(n.inputs))]
    in_axes = [n.axis(a, len(x.shape)) for a, x in
               zip(n.attr("scan_input_axes") or [0] * count, inputs)]
    backwards = n.attr("scan_input_directions") or [0] * count
    lengths = {x.shape[a] for x, a in zip(inputs, in_axes)}
    if len(lengths) == 1 and not all(isinstance(d, int) and d <= MAX_UNROLL for d in lengths):
        return _scan_in_wasm(n, states, inputs, in_axes, backwards)
    if len(lengths) != 1:
        raise n.error(f"scan inputs need one length along their scan axes, got "
                      f"{sorted(map(str, lengths))}")
    steps = int(lengths.pop())  # NOTE: fixed and at most MAX_UNROLL, as checked above
    outputs: list[list[Any]] = [[] for _ in range(n.outputs - len(states))]
    for i in range(steps):
        elements = [_element(x, a, steps - 1 - i if back else i)
                    for x, a, back in zip(inputs, in_axes, backwards)]
        results = n.subgraph("body", [*states, *elements])
        states = results[:len(states)]
        for parts, value in zip(outputs, results[len(states):]):
            parts.append(value)
    if outputs and not outputs[0]:
        raise n.error("a scan over length 0 has empty outputs, which are not supported")
    out_axes = n.attr("scan_output_axes") or [0] * len(outputs)
    reverse = n.attr("scan_output_directions") or [0] * len(outputs)
    stacked = [_stack(parts[::-1] if back else parts, n.axis(a, len(parts[0].shape) + 1))
               for parts, a, back in zip(outputs, out_axes, reverse)]
    return (*states, *stacked)


def _element(x: Any, axis: int, index: int) -> Any:
    """``x[..., index, ...]`` along ``axis``, the axis dropped."""
    if is_known(x):
        return np.take(x, index, axis=axis)
    part = F.slice(x, axis, index, index + 1)
    return F.reshape(part, (*x.shape[:axis], *x.shape[axis + 1:]))


OPS: dict[str, OpFn] = {"If": if_, "Loop": loop, "Scan": scan}
