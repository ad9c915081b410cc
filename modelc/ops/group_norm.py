"""group_norm: normalise each of ``num_groups`` channel groups, then scale and shift per
channel; lowered to ``f32_group_norm`` (``instance_norm`` is the case of one channel per
group)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import CompileError
from ._families import SameShape

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


class GroupNorm(SameShape):
    name = "group_norm"

    def lower(self, node: Node, ctx: LowerContext) -> None:
        named = node.named_inputs()
        x, groups = named["input"], node.attrs["num_groups"]
        channels = x.shape[1]
        if not isinstance(channels, int) or channels % groups:
            raise CompileError(f"group_norm: {channels!r} channels in {groups} groups")
        ctx.address(x)
        for name, default in (("weight", 1.0), ("bias", 0.0)):
            if name in named:
                ctx.address(named[name])
            else:
                ctx.constant(np.full(channels, default, np.float32))
        ctx.address(node.output)
        ctx.numel(x.shape[:1])
        ctx.push(groups)
        ctx.push(channels // groups)
        ctx.numel(x.shape[2:])
        ctx.push_f32(node.attrs.get("eps", 1e-5))
        ctx.call("f32_group_norm")


OP = GroupNorm()
