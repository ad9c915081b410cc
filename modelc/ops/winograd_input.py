"""winograd_input: the input transform of Winograd F(2x2, 3x3) (``nn.functional.winograd``).

(N, C, H, W), unpadded, with ``padding`` = (top, left), ``tiles`` = (TH, TW), ``count`` (the
planes' length, N * TH * TW or more) and the output ``tile`` m (2 or 4) -> (1, (m + 2)^2 * C,
1, COUNT): one call of ``f32_winograd[4]_input``, which reads the input in place (zero
outside it) and splits across threads by channel (``wasm_kernels.splits``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wasm_kernels import abi

from ..errors import CompileError
from . import OpDef
from ._movement import require_float
from ._shapes import require_static

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


def _geometry(shape: tuple, attrs: dict[str, Any]) -> tuple[int, int, int, int, int]:
    """(top, left, TH, TW, COUNT) of a node on an input of ``shape``."""
    top, left = (int(p) for p in attrs.get("padding", (0, 0)))
    h, w, m = int(shape[2]), int(shape[3]), int(attrs.get("tile", 2))
    th, tw = attrs.get("tiles") or ((h + top - 2) // m, (w + left - 2) // m)
    return top, left, int(th), int(tw), int(attrs.get("count") or shape[0] * th * tw)


def kernel(tile: int) -> abi.KernelSpec:
    """The input transform of F(``tile`` x ``tile``, 3x3).

    Raises:
        CompileError: no such tile.
    """
    spec = abi.BY_OP.get(("winograd", "winograd_input" if tile == 2 else f"winograd{tile}_input",
                          (), "float32"))
    if spec is None:
        raise CompileError(f"winograd_input: no kernel for the output tile {tile!r}; "
                           f"expected 2 or 4")
    return spec


class WinogradInput(OpDef):
    name = "winograd_input"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        shape = tuple(shapes[0])
        require_static(shape, range(len(shape)), self.name)
        if len(shape) != 4:
            raise CompileError(f"{self.name}: expected (N, C, H, W), got {shape}")
        top, left, th, tw, count = _geometry(shape, attrs)
        tile = int(attrs.get("tile", 2))
        kernel(tile)  # NOTE: refuses a tile without kernels
        a = tile + 2
        n, c = shape[:2]
        if min(top, left) < 0 or min(th, tw) < 1 or count < n * th * tw:
            raise CompileError(f"{self.name}: expected padding (top, left) >= 0, at least one "
                               f"tile and count >= the tiles, got padding {(top, left)}, "
                               f"tiles {(th, tw)} and count {count} on {shape}")
        return [((1, a * a * c, 1, count), dtypes[0])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        x, v = node.inputs[0], node.output
        require_float(self.name, x, v)
        n, c, h, w = (int(d) for d in x.shape)
        top, left, th, tw, count = _geometry(x.shape, node.attrs)
        ctx.address(x)
        ctx.address(v)
        for number in (n, c, c, h, w, th, tw, top, left, count):
            ctx.push(number)
        ctx.call(kernel(int(node.attrs.get("tile", 2))).name)


OP = WinogradInput()
