"""The host kernels of the ``winograd`` family: the input and output transforms of Winograd
F(2x2, 3x3) and F(4x4, 3x3) (of a dilated conv's tiles too), computed with numpy in float64
over the channels a call (or a part) covers."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from wasm_kernels import abi
from wasm_kernels.abi_winograd import TRANSFORMS, tile

from .intrinsic import HostContext
from .kernel_limits import check_bytes
from .kernel_math import activate
from .kernel_operands import operand


def _channels(ctx: HostContext, pointer: int, images: int, stride: int, count: int,
              size: int) -> np.ndarray:
    """(images, count, size): ``count`` blocks of ``size`` floats from ``pointer``, the
    images ``stride`` blocks apart (a view)."""
    flat = operand(ctx.memory, pointer, (((images - 1) * stride + count) * size,))
    return np.lib.stride_tricks.as_strided(flat, (images, count, size),
                                           (stride * size * 4, size * 4, 4), writeable=True)


def _starts(tiles: int, m: int, dil: int) -> np.ndarray:
    """Each tile's first output row (or column): the ``dil`` tiles of a block of ``m dil``
    interleave (``abi_winograd.DILATED``)."""
    j = np.arange(tiles)
    return (j // dil) * m * dil + j % dil


def _input(spec: abi.KernelSpec) -> Callable[..., None]:
    m = tile(spec.op)
    b_t, a = np.array(TRANSFORMS[m][0], np.float64), m + 2

    def run(ctx: HostContext, x: int, v: int, n: int, c: int, cs: int, h: int, w: int,
            th: int, tw: int, top: int, left: int, count: int, dil: int = 1) -> None:
        rows, cols = (_starts(t, m, dil)[:, None] + dil * np.arange(a) for t in (th, tw))
        height, width = max(rows.max() + 1, top + h), max(cols.max() + 1, left + w)
        check_bytes(ctx, n * c * height * width * 8, "the padded input")
        image = _channels(ctx, x, n, cs, c, h * w).reshape(n, c, h, w)
        padded = np.zeros((n, c, height, width), np.float64)
        padded[:, :, top:top + h, left:left + w] = image
        d = padded[:, :, rows[:, None, :, None], cols[None, :, None, :]]  # (N, C, TH, TW, a, a)
        tiles = np.einsum("ar,ncijrs,bs->abcnij", b_t, d, b_t).reshape(a * a, c, n * th * tw)
        out = _channels(ctx, v, a * a, cs, c, count)
        out[..., :n * th * tw] = tiles.astype(np.float32)

    return run


def _output(spec: abi.KernelSpec) -> Callable[..., None]:
    size = tile(spec.op)
    a_t, a = np.array(TRANSFORMS[size][1], np.float64), size + 2

    def output(ctx: HostContext, *args: int) -> None:
        arg = dict(zip(spec.params, args))
        n, o, os, oh, ow, th, tw = (arg[k] for k in ("n", "o", "os", "oh", "ow", "th", "tw"))
        m = _channels(ctx, arg["m"], a * a, os, o, arg["count"])[..., :n * th * tw]
        m = m.astype(np.float64).reshape(a, a, o, n, th, tw)
        dil = arg.get("dil", 1)
        rows, cols = (_starts(t, size, dil)[:, None] + dil * np.arange(size) for t in (th, tw))
        y = np.zeros((n, o, rows.max() + 1, cols.max() + 1), np.float64)
        y[:, :, rows[:, :, None, None], cols[None, None, :, :]] = np.einsum(
            "ar,rsonij,bs->noiajb", a_t, m, a_t)
        y = y[:, :, :oh, :ow] + operand(ctx.memory, arg["bias"], (o,))[:, None, None]
        y = y.astype(np.float32)
        if "add" in spec.epilogue:
            y = y + _channels(ctx, arg["r"], n, os, o, oh * ow).reshape(n, o, oh, ow)
        for op in spec.activations:
            y = activate(y, op)
        _channels(ctx, arg["y"], n, os, o, oh * ow)[...] = y.reshape(n, o, oh * ow)

    return output


FAMILIES: dict[str, Callable[[abi.KernelSpec], Callable[..., None]]] = {
    "winograd": lambda spec: _input(spec) if spec.op.endswith("input") else _output(spec)}
