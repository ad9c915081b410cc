"""head_attention: ``softmax(q @ key_t + mask) @ v`` per head, with the query, value and
result in the projections' (B, T, H, D) layout (``nn.functional.head_attention``).

Written by ``passes.fuse_attention`` in place of a transformer's head permutes, score
matmul, mask, softmax and weighted sum; lowered to one call of
``f32_head_attention[_bias|_add]`` (no mask, a row of the S keys for every query, or one per
query; each per batch element or one for all).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wasm_kernels import abi

from ..errors import CompileError
from . import OpDef

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape


def mask_form(mask: Shape, batch: Any, length: Any, source: Any) -> tuple[str, bool] | None:
    """The kernel that adds ``mask`` (padded to rank 4) to the scores, and whether it holds
    one mask per batch element: ``f32_head_attention_bias`` for one row of ``source`` floats
    for every query, (B or 1, 1, 1, S); ``f32_head_attention_add`` for a row per query, (B or
    1, 1, T, S). None for any other shape."""
    padded = (1,) * (4 - len(mask)) + tuple(mask)
    if len(padded) != 4 or padded[0] not in (1, batch) or padded[1] != 1 or \
            padded[3] != source:
        return None
    per_batch = padded[0] != 1
    if padded[2] == 1:
        return "f32_head_attention_bias", per_batch
    return ("f32_head_attention_add", per_batch) if padded[2] == length else None


class HeadAttention(OpDef):
    name = "head_attention"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        query, key_t, value = (tuple(s) for s in shapes[:3])
        if len(query) != 4 or len(key_t) != 4 or len(value) != 4:
            raise CompileError(f"head_attention: expected query (B, T, H, D), key_t (B, H, D, "
                               f"S) and value (B, S, H, D), got {list(query)}, {list(key_t)} "
                               f"and {list(value)}")
        b, _, h, d = query
        if key_t[:3] != (b, h, d) or value != (b, key_t[3], h, d):
            raise CompileError(f"head_attention: key_t {list(key_t)} and value {list(value)} "
                               f"do not fit query {list(query)}: expected (B, H, D, S) and "
                               "(B, S, H, D)")
        return [(query, dtypes[0])]

    def scratch(self, node: Node) -> tuple[Shape, ...]:
        """The kernel's blocks of scores and copies of V: ``abi.attention_scratch_floats(S,
        D)`` floats."""
        _, _, d, s = node.inputs[1].shape
        if not isinstance(d, int):
            raise CompileError(f"head_attention: the heads' width {d!r} must be static")
        return ((abi.ATTENTION_PARTS * (abi.ATTENTION_ROWS + d), s),)

    def lower(self, node: Node, ctx: LowerContext) -> None:
        named = node.named_inputs()
        query, key_t, value, mask = (named["query"], named["key_t"], named["value"],
                                     named.get("mask"))
        b, t, h, d = query.shape
        s = key_t.shape[3]
        form = None if mask is None else mask_form(mask.shape, b, t, s)
        if mask is not None and form is None:
            raise CompileError(f"head_attention: a mask of shape {list(mask.shape)} is not "
                               f"lowered; expected one of ({b} or 1, 1, 1 or {t}, {s}): a row "
                               "of the keys for every query or one per query, per batch "
                               "element or for all")
        for operand in (query, key_t, value) + ((mask,) if mask is not None else ()):
            ctx.address(operand)
        ctx.address(node.output)
        ctx.scratch(node)
        for dims in ((b,), (h,), (t,), (t,), (s,), (d,)):
            ctx.numel(dims)
        if form is None:
            ctx.call("f32_head_attention")
            return
        kernel, per_batch = form
        if per_batch:
            ctx.numel(mask.shape[-2:])  # one batch element's mask: (1 or T) x S floats
        else:
            ctx.push(0)
        ctx.call(kernel)


OP = HeadAttention()
