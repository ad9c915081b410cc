"""A dense conv on a small plane as the transposed product: its pixels as the rows.

The conv gemm (``conv_gemm``) makes the output channels its rows and the pixels its
columns; on a plane of a few dozen pixels its tiles run short along the pixels. Here the
NCHW input is transposed to channels-last (a strided copy, as ``permute`` moves floats),
its window rows, (n * oh * ow, kh * kw * c), are built by ``qu8_im2col`` on 4-byte taps (a
padding tap is four zero bytes: 0.0), the ``f32_linear`` tile multiplies them by the weight
as its packed (o, kh * kw * c) matrix with the bias and activation in its epilogue, and the
(pixels, o) rows are transposed back to NCHW. A residual add is fused too, its input first
transposed to the product's (pixels, o) layout. These are the integer conv's steps
(``qconv2d``), on floats.

``runs_transposed`` says when: ``bench/conv_transposed.py`` timed the whole layer (the
transposes and the im2col included) against the conv gemm, relaxed / simd128, load 1-9:
3x3 convs on 49 pixels 1.11-1.50x / 1.06-1.31x (open_nsfw and ResNet's 256 and 512 @7,
also 64 @7 and 16 -> 256 @7), on 100 1.14-1.22x / 1.01-1.07x (NudeNet's 128 -> 256/2 @20),
on 169 1.05-1.11x / 1.01-1.03x (ddddocr's 192 -> 384/2 @26), on 196 1.05-1.06x /
0.97-1.00x, on 676 0.86-0.96x; 32 @8 (K * O = 9216) 0.79x; 1x1 convs (their own pointwise
kernel) 0.40-1.06x. In a session with a silu (load 1): 1.06-1.25x on one thread and
1.17-1.51x on two at 49-100 pixels, 1.09x / 1.02x at 169, 1.03x / 0.97x at 196. A 3x3
stride-1 conv of 16 or more channels is Winograd's (``winograd_convs``), which ran
1.08-1.8x faster than this on 49-196 pixels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from wasm_kernels import abi
from wasm_kernels.pack import pack_linear_weight

from ._strided import emit_strided

if TYPE_CHECKING:
    from ..codegen import LowerContext
    from ..graph import Node, Shape

MOST_PIXELS = 169
"""The largest output plane (oh * ow) the transposed product runs: 13 x 13."""
LEAST_WORK = 32768
"""The least (c * kh * kw) * o it runs: below, the transposes and the im2col cost more than
the product gains."""


def runs_transposed(per_group: int, out: int, kernel: tuple[int, int], plane: tuple[int, int],
                    groups: int) -> bool:
    """Whether a conv of ``per_group`` input channels per group, ``out`` filters, a
    ``kernel`` window and an output ``plane`` runs as the transposed product (a dense conv
    with a window larger than one pixel on a small plane: the module docstring)."""
    steps = per_group * kernel[0] * kernel[1]
    return (groups == 1 and kernel != (1, 1) and plane[0] * plane[1] <= MOST_PIXELS
            and steps * out >= LEAST_WORK)


def scratch(batch: Shape, inputs: int, plane: tuple[int, int], steps: int, out: int,
            residual: bool) -> tuple[Shape, ...]:
    """The channels-last input (``inputs`` floats an image), the window rows, the product's
    rows, the linear's packed rows and (with a residual) the residual's rows, in floats."""
    pixels = plane[0] * plane[1]
    rows = (*batch, pixels * steps)
    buffers = ((*batch, inputs), rows, (*batch, pixels * out), rows)
    return buffers + (((*batch, pixels * out),) if residual else ())


def _transpose(ctx: LowerContext, source: Callable[[], None], target: Callable[[], None],
               batch: Shape, rows: int, cols: int) -> None:
    """(batch, rows, cols) floats at ``source`` -> (batch, cols, rows) at ``target``, as
    ``permute`` lowers it: the strided ``f32_mul`` by 1.0 (exact), which moved a 192 x 480
    plane at 0.31 ns a float where ``f32_transpose``, one float at a time, took 1.8."""
    source()
    ctx.scalar(1.0)
    target()
    emit_strided(ctx, "f32_mul", (*batch, cols, rows), [[(rows, cols), (), (cols,)],
                                                          [None, None, None]])


def lower(node: Node, ctx: LowerContext, weight: np.ndarray,
          numbers: tuple[int, ...]) -> None:
    """Lower conv ``node`` as the transposed product: ``weight`` (o, c, kh, kw) and
    ``numbers`` (c, h, w, o, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, groups) as the conv
    kernels take them (a tall 1-D conv already laid out wide)."""
    named = node.named_inputs()
    batch = named["input"].shape[:1]
    c, h, w, o, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, _ = numbers
    pixels, steps = oh * ow, c * kh * kw
    _transpose(ctx, lambda: ctx.address(named["input"]), lambda: ctx.scratch(node, 0), batch,
               c, h * w)  # NCHW -> channels-last, im2col's source
    ctx.scratch(node, 0)
    ctx.constant(np.zeros(1, np.uint8))  # the padding's byte: 0.0 in every tap
    ctx.scratch(node, 1)
    ctx.numel(batch)
    for number in (4 * c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw):
        ctx.push(number)
    ctx.call("qu8_im2col")
    epilogue = tuple(node.attrs.get("epilogue", ()))
    if "residual" in named:  # NCHW -> the product's (pixels, o) rows
        _transpose(ctx, lambda: ctx.address(named["residual"]), lambda: ctx.scratch(node, 4),
                   batch, o, pixels)
    ctx.scratch(node, 1)
    ctx.constant(pack_linear_weight(weight.transpose(0, 2, 3, 1).reshape(o, steps)))
    if "bias" in named:
        ctx.address(named["bias"])
    if "residual" in named:
        ctx.scratch(node, 4)
    ctx.scratch(node, 2)
    ctx.scratch(node, 3)
    ctx.numel((*batch, pixels))
    ctx.push(steps)
    ctx.push(o)
    bias = ("bias",) if "bias" in named else ()
    ctx.call(abi.find("linear", "linear", bias + epilogue).name)
    _transpose(ctx, lambda: ctx.scratch(node, 2), lambda: ctx.address(node.output), batch,
               pixels, o)  # (pixels, o) -> NCHW

