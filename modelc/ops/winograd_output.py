"""winograd_output: the output transform of Winograd F(2x2, 3x3) (``nn.functional.winograd``).

(1, 16 * O, 1, N * TH * TW) -> (N, O, OH, OW), with the conv's bias and fused epilogue.
Lowered to the strided ``f32_add`` / ``f32_sub`` kernels over whole planes (each position
of the tile is a contiguous (O, N * TH * TW) plane): the bias joins position (1, 1), which
``A^T m A`` adds to all four outputs of a tile; ``A^T m`` takes two calls per sum of three
planes (8 planes of the node's scratch), ``(A^T m) A`` as many (4 more); four strided copies
interleave the 2x2 outputs into the image, cropping an odd last row or column; the
activation runs in place and a residual is added in place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wasm_kernels import abi

from ..errors import CompileError
from . import OpDef
from ._movement import require_float
from ._strided import address_at, dense_strides, emit_copy, emit_strided

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape, Value

# A^T m for one axis: output position -> (first, kernel, second, kernel, third)
STEPS = ((0, "f32_add", 1, "f32_add", 2), (1, "f32_sub", 2, "f32_sub", 3))
BIASED, SUMS, TILES = 12, 0, 8  # scratch planes: biased m[1, 1], A^T m, A^T m A


def tiles(size: Any) -> tuple[int, int]:
    """(TH, TW): the 2x2 tiles covering an output of ``size`` (OH, OW)."""
    oh, ow = size
    return -(-int(oh) // 2), -(-int(ow) // 2)


class WinogradOutput(OpDef):
    name = "winograd_output"
    epilogues = abi.fusable("conv")

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        m, batch, size = tuple(shapes[0]), attrs.get("batch", 1), tuple(attrs["size"])
        th, tw = tiles(size)
        if len(m) != 4 or not isinstance(m[1], int) or m[1] % 16 or m[3] != batch * th * tw:
            raise CompileError(f"{self.name}: expected (1, 16 * O, 1, {batch * th * tw}) for "
                               f"{batch} images of {size}, got {m}")
        return [((batch, m[1] // 16, *size), dtypes[0])]

    def scratch(self, node: Node) -> tuple[Shape, ...]:
        return ((13, int(node.inputs[0].shape[1]) // 16, int(node.inputs[0].shape[3])),)

    def lower(self, node: Node, ctx: LowerContext) -> None:
        named = node.named_inputs()
        m, y = named["input"], node.output
        require_float(self.name, m, y)
        o, count = int(m.shape[1]) // 16, int(m.shape[3])
        plane = o * count
        flat: list[Any] = [(1,)]

        def push(source: Value | None, index: int) -> None:
            """The address of plane ``index`` of ``m`` (``source``) or of the scratch."""
            if source is None:
                ctx.scratch(node)
                ctx.advance((index * plane,))
            else:
                address_at(ctx, source, (index * plane,))

        def combine(target: int, first: tuple, steps: tuple) -> None:
            """scratch[target] = first +- second +- third (planes (source, index))."""
            (a, kernel1, b, kernel2, c) = steps
            push(*first(a))
            push(*first(b))
            push(None, target)
            emit_strided(ctx, kernel1, (plane,), [flat, flat])
            push(None, target)
            push(*first(c))
            push(None, target)
            emit_strided(ctx, kernel2, (plane,), [flat, flat])

        biased = "bias" in named
        if biased:
            push(m, 5)
            ctx.address(named["bias"])
            push(None, BIASED)
            emit_strided(ctx, "f32_add", (o, count), [[(count,), (1,)], [(1,), None]])

        def position(r: int, s: int) -> tuple[Value | None, int]:
            return (None, BIASED) if biased and (r, s) == (1, 1) else (m, 4 * r + s)

        for a, steps in enumerate(STEPS):
            for s in range(4):
                combine(SUMS + 4 * a + s, lambda r, s=s: position(r, s), steps)
            for b, column in enumerate(STEPS):
                combine(TILES + 2 * a + b, lambda s, a=a: (None, SUMS + 4 * a + s), column)
        self._interleave(node, ctx, y, o, count)
        for step in node.attrs.get("epilogue", ()):
            _epilogue(ctx, step, y, named.get("residual"))

    def _interleave(self, node: Node, ctx: LowerContext, y: Value, o: int, count: int
                    ) -> None:
        batch, _, oh, ow = (int(d) for d in y.shape)
        th, tw = tiles((oh, ow))
        for a in range(2):
            for b in range(2):
                ctx.scratch(node)
                ctx.advance(((TILES + 2 * a + b) * o * count,))
                address_at(ctx, y, (a * ow + b,))
                region = (o, batch, (oh - a + 1) // 2, (ow - b + 1) // 2)
                emit_copy(ctx, region, [[(count,), (th * tw,), (tw,), (1,)],
                                        [(oh * ow,), (o * oh * ow,), (2 * ow,), (2,)]], 4)


def _epilogue(ctx: LowerContext, step: str, y: Value, residual: Value | None) -> None:
    """Apply one fused epilogue step to ``y`` in place."""
    if step == "add":
        if residual is None:
            raise CompileError("winograd_output: an 'add' epilogue needs a residual input")
        ctx.address(y)
        ctx.address(residual)
        ctx.address(y)
        strides = list(dense_strides(y.shape))
        emit_strided(ctx, "f32_add", y.shape, [list(strides), list(strides)])
        return
    spec = abi.BY_OP.get(("unary", step, (), "float32"))
    if spec is None:
        raise CompileError(f"winograd_output: no unary kernel for the epilogue {step!r}")
    ctx.address(y)
    ctx.address(y)
    ctx.numel(y.shape)
    ctx.call(spec.name)


OP = WinogradOutput()
