"""winograd_input: the input transform of Winograd F(2x2, 3x3) (``nn.functional.winograd``).

(N, C, H, W), unpadded, with ``padding`` = (top, left), ``tiles`` = (TH, TW), ``count`` (the
planes' length, N * TH * TW or more) and the output ``tile`` m (2 or 4) -> (1, (m + 2)^2 * C,
1, COUNT): one call of ``f32_winograd[4]_input``, which reads the input in place (zero
outside it) and splits across threads by channel (``wasm_kernels.splits``); with
``dilation`` > 1, of ``f32_winograd[4]_dilated_input`` (a dilated conv's tiles).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nn.functional.winograd import tile_starts
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
    dilation = int(attrs.get("dilation", 1))
    th, tw = attrs.get("tiles") or (((h + top - 2) // m, (w + left - 2) // m) if dilation == 1
                                    else (len(tile_starts(h, m, dilation)),
                                          len(tile_starts(w, m, dilation))))
    return top, left, int(th), int(tw), int(attrs.get("count") or shape[0] * th * tw)


def kernel(tile: int, dilated: bool = False) -> abi.KernelSpec:
    """The input transform of F(``tile`` x ``tile``, 3x3) (of a ``dilated`` conv's tiles).

    Raises:
        CompileError: no such tile.
    """
    op = ("winograd" if tile == 2 else f"winograd{tile}") + ("_dilated" if dilated else "")
    spec = abi.BY_OP.get(("winograd", f"{op}_input", (), "float32"))
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
        if (min(top, left) < 0 or min(th, tw) < 1 or count < n * th * tw
                or int(attrs.get("dilation", 1)) < 1):
            raise CompileError(f"{self.name}: expected padding (top, left) >= 0, at least one "
                               f"tile, count >= the tiles and dilation >= 1, got padding "
                               f"{(top, left)}, tiles {(th, tw)}, count {count} and dilation "
                               f"{attrs.get('dilation', 1)} on {shape}")
        return [((1, a * a * c, 1, count), dtypes[0])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        x, v = node.inputs[0], node.output
        require_float(self.name, x, v)
        n, c, h, w = (int(d) for d in x.shape)
        top, left, th, tw, count = _geometry(x.shape, node.attrs)
        ctx.address(x)
        ctx.address(v)
        dilation = int(node.attrs.get("dilation", 1))
        for number in (n, c, c, h, w, th, tw, top, left, count,
                       *((dilation,) if dilation > 1 else ())):
            ctx.push(number)
        ctx.call(kernel(int(node.attrs.get("tile", 2)), dilation > 1).name)


OP = WinogradInput()
