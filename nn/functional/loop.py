"""``loop``: a body run a number of times known only at run time, with loop-carried state
and per-iteration slices in and out (ONNX's Loop and Scan, compiled to a wasm loop)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._dispatch import primitive

__all__ = ["loop"]

Body = Callable[[np.ndarray, list[np.ndarray], list[np.ndarray], list[np.ndarray]],
                tuple[list[np.ndarray], list[np.ndarray]]]
"""``body(i, states, elements, outer) -> (states, outputs)``: one iteration."""


@primitive
def loop(count: np.ndarray | int | None, states: Sequence[np.ndarray],
         xs: Sequence[np.ndarray], outer: Sequence[np.ndarray], body: Body,
         reverse_inputs: Sequence[bool] = (), reverse_outputs: Sequence[bool] = (),
         until: int | None = None) -> Any:
    """Run ``body`` ``count`` times (a negative count runs none; None: the length of axis 0
    of ``xs``, or without end), and with ``until`` only while the bool state of that index
    is true (checked before each iteration: ONNX Loop's condition). Iteration ``i`` gets
    the int64 ``i``, the states, element ``i`` of each of ``xs`` along axis 0 (counted from
    the end where ``reverse_inputs``) and ``outer``; it returns the next states and its
    outputs. The result is the final states, then each output stacked along a new axis 0
    (in reverse order where ``reverse_outputs``); one array alone when that is all.

    Raises:
        ValueError: neither ``count``, ``xs`` nor ``until`` is given, or a loop that runs
            no iteration has outputs to stack (their shape is unknown).

    >>> loop(3, [np.zeros(1)], [], [], lambda i, s, e, o: ([s[0] + i], [])).tolist()
    [3.0]
    """
    if count is None and not xs and until is None:
        raise ValueError("loop: give count, xs to scan along axis 0, or until")
    steps = (max(int(np.asarray(count).reshape(-1)[0]), 0) if count is not None
             else len(xs[0]) if xs else None)
    backwards = list(reverse_inputs) or [False] * len(xs)
    carried, outputs = list(states), []
    for i in itertools.count() if steps is None else range(steps):
        if until is not None and not bool(np.asarray(carried[until]).reshape(-1)[0]):
            steps = i
            break
        elements = [x[len(x) - 1 - i if back else i] for x, back in zip(xs, backwards)]
        carried, out = body(np.array(i, np.int64), carried, elements, list(outer))
        outputs.append(out)
    columns = list(zip(*outputs))
    if not steps and int(getattr(body, "outputs", 0)):  # NOTE: a body may say how many it has
        raise ValueError("loop: a loop that runs no iteration has no outputs to stack")
    stacked = [np.stack(column[::-1] if back else column)
               for column, back in zip(columns, list(reverse_outputs) or [False] * len(columns))]
    result = (*carried, *stacked)
    return result[0] if len(result) == 1 else result

