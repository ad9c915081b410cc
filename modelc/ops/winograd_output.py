"""winograd_output: the output transform of Winograd F(2x2, 3x3) (``nn.functional.winograd``).

(1, (m + 2)^2 * O, 1, COUNT >= N * TH * TW) -> (N, O, OH, OW) for the output ``tile`` m (2 or
4), with the conv's bias, residual and fused activation: one call of an
``f32_winograd[4]_output_bias[_add][_<activation>]`` row, which
writes the image directly and splits across threads by channel (``wasm_kernels.splits``);
with ``dilation`` > 1, of an ``f32_winograd[4]_dilated_output_bias[_<activation>]`` row
(a dilated conv's tiles, no residual).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from nn.functional.winograd import tile_starts
from wasm_kernels import abi

from ..errors import CompileError
from . import OpDef
from ._movement import require_float

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node


def tiles(size: Any, tile: int = 2, dilation: int = 1) -> tuple[int, int]:
    """(TH, TW): the ``tile`` x ``tile`` tiles covering an output of ``size`` (OH, OW), their
    outputs ``dilation`` apart (``nn.functional.winograd.tile_starts``)."""
    oh, ow = size
    if dilation > 1:
        return len(tile_starts(oh, tile, dilation)), len(tile_starts(ow, tile, dilation))
    return -(-int(oh) // tile), -(-int(ow) // tile)


def kernel(epilogue: tuple[str, ...], tile: int = 2,
           dilated: bool = False) -> abi.KernelSpec | None:
    """The output transform's row for a node's fused ``epilogue`` and output ``tile`` (of a
    ``dilated`` conv's tiles: no residual), or None."""
    op = ("winograd" if tile == 2 else f"winograd{tile}") + ("_dilated" if dilated else "")
    return abi.BY_OP.get(("winograd", f"{op}_output", ("bias", *epilogue), "float32"))


class WinogradOutput(OpDef):
    name = "winograd_output"
    epilogues = abi.fusable("winograd")

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        m, batch, size = tuple(shapes[0]), attrs.get("batch", 1), tuple(attrs["size"])
        tile = int(attrs.get("tile", 2))
        (th, tw), a = tiles(size, tile, int(attrs.get("dilation", 1))), tile + 2
        if (len(m) != 4 or not isinstance(m[1], int) or m[1] % (a * a)
                or not isinstance(m[3], int) or m[3] < batch * th * tw):
            raise CompileError(f"{self.name}: expected (1, {a * a} * O, 1, >= "
                               f"{batch * th * tw}) for {batch} images of {size}, got {m}")
        return [((batch, m[1] // (a * a), *size), dtypes[0])]

    def lower(self, node: Node, ctx: LowerContext) -> None:
        named = node.named_inputs()
        m, y = named["input"], node.output
        require_float(self.name, m, y)
        epilogue, tile = tuple(node.attrs.get("epilogue", ())), int(node.attrs.get("tile", 2))
        dilation = int(node.attrs.get("dilation", 1))
        spec = kernel(epilogue, tile, dilation > 1)
        if spec is None or ("add" in epilogue) != ("residual" in named):
            raise CompileError(f"{self.name}: no kernel for the epilogue {epilogue!r} "
                               f"{'with' if 'residual' in named else 'without'} a residual")
        batch, o, oh, ow = (int(d) for d in y.shape)
        ctx.address(m)
        if "bias" in named:
            ctx.address(named["bias"])
        else:
            ctx.constant(np.zeros(o, np.float32))
        if "residual" in named:
            ctx.address(named["residual"])
        ctx.address(y)
        for number in (batch, o, o, oh, ow, *tiles((oh, ow), tile, dilation), int(m.shape[3]),
                       *((dilation,) if dilation > 1 else ())):
            ctx.push(number)
        ctx.call(spec.name)


OP = WinogradOutput()
