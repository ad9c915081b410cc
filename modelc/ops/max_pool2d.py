"""max_pool2d: the maximum of each window (padding counts as -inf).

A window's maximum is the maximum of its rows' maxima, so where it saves taps (stride-1
pools such as YOLO's SPP / SPPF blocks: 5x5, 9x9, 13x13) the pool runs as two window
passes, ``(kh, 1)`` into a scratch of ``(N, C, OH, W)`` and then ``(1, kw)``: ``kh + kw``
taps per output instead of ``kh * kw``. Padding taps are skipped in both passes, so the
result is the same to the bit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._pool import Pool2d, emit_window, window

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape


def _separable(node: Node) -> bool:
    """Whether the two passes read fewer taps than the one: kh * W + kw * OW < kh * kw * OW
    (per output row; at stride 2 the first pass's extra columns cancel the saving)."""
    (kh, kw), *_ = window(node.attrs)
    w, ow = node.inputs[0].shape[3], node.output.shape[3]
    return isinstance(w, int) and isinstance(ow, int) and kh * w + kw * ow < kh * kw * ow


class MaxPool2d(Pool2d):
    name = "max_pool2d"

    def scratch(self, node: Node) -> tuple[Shape, ...]:
        """The rows' maxima of a separable pool: (N, C, OH, W)."""
        if not _separable(node) or node.inputs[0].dtype != "float32":
            return ()
        x, out = node.inputs[0].shape, node.output.shape
        return (tuple(x[:2]) + (out[2], x[3]),)

    def lower(self, node: Node, ctx: LowerContext) -> None:
        if not self.scratch(node):
            super().lower(node, ctx)
            return
        x, out = node.inputs[0], node.output
        (kh, kw), (sh, sw), (ph, pw), (dh, dw) = window(node.attrs)
        rows = tuple(x.shape[:2]) + (out.shape[2], x.shape[3])  # (N, C, OH, W)
        ctx.address(x)
        ctx.scratch(node)
        emit_window(ctx, "f32_max_pool2d", x.shape, rows,
                    ((kh, 1), (sh, 1), (ph, 0), (dh, 1)))
        ctx.scratch(node)
        ctx.address(out)
        emit_window(ctx, "f32_max_pool2d", rows, out.shape,
                    ((1, kw), (1, sw), (0, pw), (1, dw)))


OP = MaxPool2d()
