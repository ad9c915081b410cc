"""reshape: the same elements in a new shape; one entry may be -1, entries may be dim names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from . import OpDef
from ._shapes import numel
from ._strided import copy, dense_strides

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class Reshape(OpDef):
    name = "reshape"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        source, target = shapes[0], list(attrs["shape"])
        have_ints, have_syms = numel(source)
        known = [d for d in target if d != -1]
        want_ints, want_syms = numel(known)
        if target.count(-1) > 1:
            raise CompileError(f"reshape: only one -1 allowed in {target}")
        leftover = have_syms - want_syms
        if want_syms - have_syms:
            raise CompileError(f"reshape {list(source)} -> {target}: dims "
                               f"{sorted(want_syms - have_syms)} are not in the input")
        if -1 in target:
            if leftover and have_ints == want_ints and sum(leftover.values()) == 1:
                fill: int | str = next(iter(leftover))
            elif not leftover and want_ints and have_ints % want_ints == 0:
                fill = have_ints // want_ints
            else:
                raise CompileError(f"reshape {list(source)} -> {target}: cannot infer -1")
            target[target.index(-1)] = fill
        elif leftover or have_ints != want_ints:
            raise CompileError(f"reshape {list(source)} -> {target}: element counts differ")
        return [(tuple(target), dtypes[0])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        source = node.inputs[0]
        if source.is_constant:
            copy(ctx, source, node.output, dense_strides(node.output.shape))
        # Otherwise plan_memory made the output a view of the input: nothing to compute.


OP = Reshape()
