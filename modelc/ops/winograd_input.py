"""winograd_input: the input transform of Winograd F(2x2, 3x3) (``nn.functional.winograd``).

(N, C, 2 * TH + 2, 2 * TW + 2), padded -> (1, 16 * C, 1, N * TH * TW). Lowered to the
strided ``f32_add`` / ``f32_sub`` kernels in two passes, each a difference or sum of two
rows of ``B^T``: along the columns first (into scratch 0, 4 planes of (C, N, H, TW), from
the even and odd input columns that a step-2 copy, one register at a time, put apart in
scratch 1, so the sums read whole registers), then along the rows, one call per position of
the 4x4 tile writing its (C, N, TH, TW) plane of the output, read at unit stride.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CompileError
from . import OpDef
from ._movement import require_float
from ._shapes import require_static
from ._strided import address_at, emit_strided

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape

# B^T d for one axis: output position -> (first tap, kernel, second tap)
STEPS = ((0, "f32_sub", 2), (1, "f32_add", 2), (2, "f32_sub", 1), (1, "f32_sub", 3))


class WinogradInput(OpDef):
    name = "winograd_input"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        shape = tuple(shapes[0])
        require_static(shape, range(len(shape)), self.name)
        if len(shape) != 4 or min(shape[2:]) < 4 or shape[2] % 2 or shape[3] % 2:
            raise CompileError(f"{self.name}: expected (N, C, H, W) with H and W even and "
                               f">= 4, got {shape}")
        n, c, h, w = shape
        return [((1, 16 * c, 1, n * ((h - 2) // 2) * ((w - 2) // 2)), dtypes[0])]

    def scratch(self, node: Node) -> tuple[Shape, ...]:
        n, c, h, w = (int(d) for d in node.inputs[0].shape)
        return (4, c, n, h, (w - 2) // 2), (2, c, n, h, w // 2)

    def lower(self, node: Node, ctx: LowerContext) -> None:
        x, v = node.inputs[0], node.output
        require_float(self.name, x, v)
        n, c, h, w = (int(d) for d in x.shape)
        th, tw, half = (h - 2) // 2, (w - 2) // 2, w // 2
        columns = c * n * h * half
        for parity in range(2):  # even and odd columns apart: plane p of scratch 1
            address_at(ctx, x, (parity,))
            ctx.scalar(1.0)
            ctx.scratch(node, 1)
            ctx.advance((parity * columns,))
            emit_strided(ctx, "f32_mul", (c, n, h, half),
                         [[(h * w,), (c * h * w,), (w,), (2,)], [None] * 4])
        plane = c * n * h * tw
        for s, (a, kernel, b) in enumerate(STEPS):  # columns: plane s of scratch 0
            for tap in (a, b):  # column 2 j + tap: column j + tap // 2 of its parity
                ctx.scratch(node, 1)
                ctx.advance(((tap % 2) * columns + tap // 2,))
            ctx.scratch(node)
            ctx.advance((s * plane,))
            strides = [(n * h * half,), (h * half,), (half,), (1,)]
            emit_strided(ctx, kernel, (c, n, h, tw), [list(strides), list(strides)])
        for r, (a, kernel, b) in enumerate(STEPS):  # rows: position 4 r + s of the output
            for s in range(4):
                strides = [(n * h * tw,), (h * tw,), (2 * tw,), (1,)]
                for row in (a, b):
                    ctx.scratch(node)
                    ctx.advance((s * plane + row * tw,))
                address_at(ctx, v, ((4 * r + s) * c * n * th * tw,))
                emit_strided(ctx, kernel, (c, n, th, tw), [list(strides), list(strides)])


OP = WinogradInput()
