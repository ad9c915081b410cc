"""The recurrences (``lstm``, ``gru``, ``rnn``): shape rule and lowering to a loop over time.

The input projection of every step is already one ``linear`` node upstream (``gates``), so
the lowering emits, inside the model's ``run``: the initial states copied (or zeroed) into
the final-state outputs, then ``for step in range(T)``: the recurrent gemm ``hw = h @
W_hh.T`` (``f32_linear``, weight packed at compile time, into a scratch buffer) and one
call of the op's ``recurrent`` cell kernel, which applies the gate math to the whole batch. The trip count is
read from the dims at run time, so a symbolic sequence length works.
"""

from __future__ import annotations

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
        """The recurrent product of one step, (B, gates * H)."""
        return ((node.inputs[0].shape[1], node.inputs[0].shape[2]),)

    def lower(self, node: Node, ctx: LowerContext) -> None:
        named = dict(zip(node.input_names, node.inputs))
        gates, weight = named["gates"], named["weight_hh"]
        require_constant_weight(weight, self.name)
        y, *finals = node.outputs
        for init, final in zip(self.states, finals):
            if init in named:
                source = named[init]
                copy_region(ctx, final.shape, source, (0,), list(dense_strides(source.shape)),
                            final, (0,))
            else:
                fill(ctx, final, 0.0)
        step, steps = ctx.local(), ctx.local()
        ctx.numel(gates.shape[:1])
        ctx.emit("local.set", steps)
        ctx.push(0)
        ctx.emit("local.set", step)
        ctx.emit("block")
        ctx.emit("loop")
        for instruction in (("local.get", step), ("local.get", steps), ("i32.ge_u",),
                            ("br_if", 1)):
            ctx.emit(*instruction)
        self._recurrent_gemm(node, named, ctx)
        ctx.address(gates)
        ctx.scratch(node)
        for final in reversed(finals):  # the cell takes (c, h)
            ctx.address(final)
        ctx.address(y)
        self._lengths(named.get("lengths"), ctx)
        ctx.numel(gates.shape[1:2])
        ctx.push(weight.shape[1])
        ctx.emit("local.get", step)
        ctx.emit("local.get", steps)
        ctx.push(int(bool(node.attrs.get("reverse", False))))
        ctx.call(self.cell(node))
        for instruction in (("local.get", step), ("i32.const", 1), ("i32.add",),
                            ("local.set", step), ("br", 0), ("end",), ("end",)):
            ctx.emit(*instruction)

    def _recurrent_gemm(self, node: Node, named: dict[str, Value], ctx: LowerContext) -> None:
        """``scratch = h @ W_hh.T (+ recurrent bias)`` with h the first final-state output."""
        weight = named["weight_hh"]
        rows, hidden = weight.shape
        bias = named.get(self.recurrent_bias) if self.recurrent_bias else None
        ctx.address(node.outputs[1])
        ctx.constant(pack_linear_weight(np.asarray(weight.data, dtype=np.float32)))
        if bias is not None:
            ctx.address(bias)
        ctx.scratch(node)
        ctx.numel(node.inputs[0].shape[1:2])
        ctx.push(hidden)
        ctx.push(rows)
        ctx.call(abi.find("linear", "linear", ("bias",) if bias is not None else ()).name)

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
