"""check: ``input`` passed through once the bool ``condition`` is ``expected``; lowered to a
wasm ``unreachable`` trap under ``if`` and a copy (the branch of a run-time ``If`` that
cannot run for the compiled shapes)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from . import OpDef
from ._strided import copy, dense_strides

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class Check(OpDef):
    name = "check"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        if dtypes[1] != "bool" or any(d != 1 for d in shapes[1]):
            raise CompileError(f"check: the condition must be one bool, got {dtypes[1]} of "
                               f"shape {list(shapes[1])}")
        return [(shapes[0], dtypes[0])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        ctx.trap_unless(node.inputs[1], bool(node.attrs.get("expected", True)))
        copy(ctx, node.inputs[0], node.output, dense_strides(node.output.shape))


OP = Check()
