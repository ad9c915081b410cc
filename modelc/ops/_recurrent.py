"""The recurrences (``lstm``, ``gru``, ``rnn``): shape rule and lowering to a loop over time.

The input projection of every step is already one ``linear`` node upstream (``gates``), so
the lowering emits, inside the model's ``run``: the initial states copied (or zeroed) into
the final-state outputs, then ``for step in range(T)``: the recurrent gemm ``hw = h @
W_hh.T`` (``f32_linear``, weight packed at compile time, into a scratch buffer) and one
call of the op's ``recurrent`` cell kernel, which applies the gate math to the whole batch.
The trip count is read from the dims at run time, so a symbolic sequence length works.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from wasm_kernels import abi
from wasm_kernels.pack import pack_linear_weight

from ..errors import CompileError
from . import OpDef
from ._movement import copy_region, fill
from ._shapes import require_constant_weight
from ._strided import dense_strides

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape, Value

Result = list[tuple["Shape", str]]
Push = Callable[[], None]
"""Pushes one kernel argument (an address) when called."""


class Recurrence(OpDef):
    """One direction of one recurrent layer; subclasses name the cell and its gates."""

    gates: int = 1
    states: tuple[str, ...] = ("h0",)
    """The initial-state inputs, in the order of the final-state outputs."""
    recurrent_bias: str | None = None
    """An input added to the recurrent product (GRU's ``bias_hh``) instead of to ``gates``."""

    def cell(self, node: Node) -> str:
        """The ABI cell kernel for ``node``."""
        raise NotImplementedError

    def infer(self, shapes: list[Shape], dtypes: list[str], attrs: dict[str, Any]) -> Result:
        gates, weight = shapes[0], shapes[1]
        if len(gates) != 3 or len(weight) != 2:
            raise CompileError(f"{self.name} expects gates (T, B, {self.gates}H) and weight_hh "
                               f"({self.gates}H, H), got {list(gates)} and {list(weight)}")
        hidden = weight[1]
        if weight[0] != self.gates * hidden or gates[2] != weight[0]:
            raise CompileError(f"{self.name}: weight_hh {list(weight)} and gates "
                               f"{list(gates)} do not both have {self.gates} * hidden rows")
        state = (gates[1], hidden)
        for shape in shapes[2:]:
            if len(shape) == 2 and tuple(shape) != state:
                raise CompileError(f"{self.name}: an initial state has shape {list(shape)}, "
                                   f"expected {list(state)}")
        if any(d != "float32" for d in dtypes[:2]):
            raise CompileError(f"{self.name} supports float32 gates and weights, got {dtypes}")
        return [((gates[0], gates[1], hidden), "float32")] + [(state, "float32")] * len(
            self.states)

    def scratch(self, node: Node) -> tuple[Shape, ...]:
        """The recurrent product of one step, (B, gates * H), then the gemm's packed rows of
        h (``PANELS``)."""
        return ((node.inputs[0].shape[1], node.inputs[0].shape[2]), panels_scratch(node))

    def lower(self, node: Node, ctx: LowerContext) -> None:
        named = node.named_inputs()
        require_constant_weight(named["weight_hh"], self.name)
        for init, final in zip(self.states, node.outputs[1:]):
            if init in named:
                source = named[init]
                copy_region(ctx, final.shape, source, (0,), list(dense_strides(source.shape)),
                            final, (0,))
            else:
                fill(ctx, final, 0.0)
        counter = (ctx.local(), ctx.local())  # (step, steps)
        ctx.numel(named["gates"].shape[:1])
        ctx.emit("local.set", counter[1])
        ctx.push(0)
        ctx.emit("local.set", counter[0])
        for instruction in (("block",), ("loop",), ("local.get", counter[0]),
                            ("local.get", counter[1]), ("i32.ge_u",), ("br_if", 1)):
            ctx.emit(*instruction)
        self.step(node, named, ctx, counter)
        for instruction in (("local.get", counter[0]), ("i32.const", 1), ("i32.add",),
                            ("local.set", counter[0]), ("br", 0), ("end",), ("end",)):
            ctx.emit(*instruction)

    def step(self, node: Node, named: dict[str, Value], ctx: LowerContext,
             counter: tuple[int, int]) -> None:
        """One time step: ``scratch = h @ W_hh.T (+ recurrent bias)``, then the cell kernel
        on (c, h, y) (h is the first final-state output)."""
        y, *finals = node.outputs
        bias = named.get(self.recurrent_bias) if self.recurrent_bias else None
        weight = named["weight_hh"].data
        assert weight is not None  # require_constant_weight in lower
        recurrent_gemm(ctx, node, lambda: ctx.address(finals[0]), weight,
                       None if bias is None else lambda: ctx.address(bias),
                       lambda: ctx.scratch(node), lambda: ctx.scratch(node, 1))
        self.call_cell(ctx, node, named, counter, self.cell(node),
                       [lambda: ctx.scratch(node), *(partial(ctx.address, v)
                                                    for v in reversed(finals)),
                        lambda: ctx.address(y)])

    def call_cell(self, ctx: LowerContext, node: Node, named: dict[str, Value],
                  counter: tuple[int, int], kernel: str, operands: list[Push]) -> None:
        """Call cell ``kernel`` on the gates, then ``operands`` (hw, states, outputs as its
        ABI row orders them), the lengths and the sizes of this step."""
        ctx.address(named["gates"])
        for push in operands:
            push()
        self._lengths(named.get("lengths"), ctx)
        ctx.numel(named["gates"].shape[1:2])
        ctx.numel(named["weight_hh"].shape[1:])  # hidden
        ctx.emit("local.get", counter[0])
        ctx.emit("local.get", counter[1])
        ctx.push(int(bool(node.attrs.get("reverse", False))))
        ctx.call(kernel)

    def _lengths(self, lengths: Value | None, ctx: LowerContext) -> None:
        """Push the int32 lengths' address, or 0 for none."""
        if lengths is None:
            ctx.push(0)
        elif lengths.is_constant:
            ctx.constant(np.asarray(lengths.data, dtype=np.int32))
        elif lengths.dtype == "int32":
            ctx.address(lengths)
        else:
            raise CompileError(f"{self.name}: run-time lengths must be int32, got "
                               f"{lengths.dtype}")


def panels_scratch(node: Node) -> Shape:
    """The scratch of ``recurrent_gemm``'s packed rows of its (B, H) source."""
    return node.inputs[0].shape[1], node.inputs[1].shape[1]


def recurrent_gemm(ctx: LowerContext, node: Node, source: Push, weight: np.ndarray,
                   bias: Push | None, target: Push, panels: Push) -> None:
    """``target (B, n) = source (B, k) @ weight.T (+ bias)`` with ``weight`` (n, k) packed
    at compile time; B is the batch of ``node``'s gates; ``panels`` pushes the scratch of
    ``panels_scratch``."""
    rows, hidden = weight.shape
    source()
    ctx.constant(pack_linear_weight(np.asarray(weight, dtype=np.float32)))
    if bias is not None:
        bias()
    target()
    panels()
    ctx.numel(node.inputs[0].shape[1:2])
    ctx.push(hidden)
    ctx.push(rows)
    ctx.call(abi.find("linear", "linear", ("bias",) if bias is not None else ()).name)
