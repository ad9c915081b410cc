"""Convolutions: ``conv2d`` and ``conv_transpose2d`` (primitives), ``conv1d`` and ``conv3d``
(composites of ``conv2d``), ``conv_transpose3d`` (of ``conv_transpose2d``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .._dispatch import primitive
from .._utils import pair, triple
from .shape import concat, pad, permute, reshape, slice

__all__ = ["conv1d", "conv2d", "conv3d", "conv_padding", "conv_transpose2d",
           "conv_transpose3d"]

Padding = int | tuple[int, ...] | str


def conv_padding(padding: Padding, kernel_size: tuple[int, int], stride: tuple[int, int],
                 dilation: tuple[int, int]) -> tuple[tuple[int, int], tuple[int, int]]:
    """``((top, bottom), (left, right))`` for an int, a pair, ``'valid'`` or ``'same'``;
    ``'same'`` puts the odd extra row/column at the end, as torch does.

    Raises:
        ValueError: an unknown padding string, or ``'same'`` with a stride other than 1.

    >>> conv_padding("same", (4, 3), (1, 1), (1, 1))
    ((1, 2), (1, 1))
    """
    if isinstance(padding, str):
        if padding == "valid":
            return (0, 0), (0, 0)
        if padding != "same":
            raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                             "['same', 'valid']")
        if stride != (1, 1):
            raise ValueError("padding='same' is not supported for strided convolutions")
        totals = [d * (k - 1) for k, d in zip(kernel_size, dilation)]
        return (totals[0] // 2, totals[0] - totals[0] // 2), (totals[1] // 2,
                                                              totals[1] - totals[1] // 2)
    ph, pw = pair(padding)
    return (ph, ph), (pw, pw)


def _check_conv_input(input: np.ndarray, weight: np.ndarray, groups: int, channels: int,
                      op: str) -> None:
    if input.ndim != 4:
        raise ValueError(f"Expected 4D (batched) input to {op}, but got input of size: "
                         f"{list(input.shape)}")
    if input.shape[1] != channels * groups or input.shape[1] % groups:
        raise ValueError(f"Given groups={groups}, weight of size {list(weight.shape)}, "
                         f"expected input{list(input.shape)} to have {channels * groups} "
                         f"channels, but got {input.shape[1]} channels instead")


@primitive
def conv2d(input: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None,
           stride: Any = 1, padding: Padding = 0, dilation: Any = 1,
           groups: int = 1) -> np.ndarray:
    """2-D cross-correlation as ``torch.nn.functional.conv2d``: input (N, C, H, W), weight
    (O, C / groups, kH, kW); ``padding`` may be an int, a pair, ``'same'`` or ``'valid'``.

    Raises:
        ValueError: input not 4-D, or channels that do not match weight and groups.

    >>> conv2d(np.ones((1, 2, 5, 5), np.float32), np.ones((3, 2, 3, 3), np.float32)).shape
    (1, 3, 3, 3)
    """
    _check_conv_input(input, weight, groups, weight.shape[1], "conv2d")
    out_channels, group_channels, kh, kw = weight.shape
    (sh, sw), (dh, dw) = pair(stride), pair(dilation)
    (top, bottom), (left, right) = conv_padding(padding, (kh, kw), (sh, sw), (dh, dw))
    x = np.pad(input, ((0, 0), (0, 0), (top, bottom), (left, right)))
    windows = sliding_window_view(x, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    windows = windows[:, :, ::sh, ::sw, ::dh, ::dw]  # (N, C, OH, OW, kH, kW)
    n, _, oh, ow = windows.shape[:4]
    windows = windows.reshape(n, groups, group_channels, oh, ow, kh, kw)
    w = weight.reshape(groups, out_channels // groups, group_channels, kh, kw)
    out = np.einsum("ngchwij,gocij->ngohw", windows, w, optimize=True)
    out = out.reshape(n, out_channels, oh, ow).astype(input.dtype, copy=False)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return out


@primitive
def conv_transpose2d(input: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> np.ndarray:
    """2-D transposed convolution as ``torch.nn.functional.conv_transpose2d``: input
    (N, C, H, W), weight (C, O / groups, kH, kW); output size
    ``(H - 1) * stride - 2 * padding + dilation * (kH - 1) + output_padding + 1``.

    Raises:
        ValueError: input not 4-D, mismatched channels, or ``output_padding`` not smaller
            than stride or dilation.

    >>> conv_transpose2d(np.ones((1, 2, 3, 3), np.float32), np.ones((2, 4, 2, 2), np.float32),
    ...                  stride=2).shape
    (1, 4, 6, 6)
    """
    _check_conv_input(input, weight, groups, weight.shape[0] // groups, "conv_transpose2d")
    in_channels, group_out, kh, kw = weight.shape
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = (pair(stride), pair(padding),
                                                pair(output_padding), pair(dilation))
    if not (oph < max(sh, dh) and opw < max(sw, dw)):
        raise ValueError(f"output padding {(oph, opw)} must be smaller than either stride "
                         f"{(sh, sw)} or dilation {(dh, dw)}")
    n, _, h, w = input.shape
    x = input.reshape(n, groups, in_channels // groups, h, w)
    wt = weight.reshape(groups, in_channels // groups, group_out, kh, kw)
    cols = np.einsum("ngchw,gcoij->ngoijhw", x, wt, optimize=True)  # (N, G, O/G, kH, kW, H, W)
    full_h = (h - 1) * sh + dh * (kh - 1) + 1 + oph
    full_w = (w - 1) * sw + dw * (kw - 1) + 1 + opw
    out = np.zeros((n, groups, group_out, full_h, full_w), dtype=input.dtype)
    for i in range(kh):
        for j in range(kw):
            out[..., i * dh:i * dh + (h - 1) * sh + 1:sh,
                j * dw:j * dw + (w - 1) * sw + 1:sw] += cols[:, :, :, i, j]
    out = out.reshape(n, groups * group_out, full_h, full_w)[:, :, ph:full_h - ph,
                                                             pw:full_w - pw]
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return out


def _single(value: int | tuple[int, ...]) -> int:
    return value[0] if isinstance(value, (tuple, list)) else value


def conv1d(input: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None,
           stride: int | tuple[int, ...] = 1, padding: int | tuple[int, ...] | str = 0,
           dilation: int | tuple[int, ...] = 1, groups: int = 1) -> np.ndarray:
    """1-D cross-correlation: input (N, C, L), weight (O, C / groups, k); a ``conv2d``
    over a height-1 image.

    >>> conv1d(np.ones((1, 2, 5), np.float32), np.ones((3, 2, 3), np.float32),
    ...        padding="same").shape
    (1, 3, 5)
    """
    n, c, length = input.shape
    out_channels, group_channels, k = weight.shape
    out = conv2d(reshape(input, (n, c, 1, length)),  # (N, C, 1, L)
                 reshape(weight, (out_channels, group_channels, 1, k)), bias,
                 (1, _single(stride)),
                 padding if isinstance(padding, str) else (0, _single(padding)),
                 (1, _single(dilation)), groups)
    return reshape(out, (n, out_channels, out.shape[-1]))  # (N, O, L_out)


def conv3d(input: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None,
           stride: int | tuple[int, ...] = 1, padding: int | tuple[int, ...] = 0,
           dilation: int | tuple[int, ...] = 1, groups: int = 1) -> np.ndarray:
    """3-D cross-correlation as ``torch.nn.functional.conv3d``: input (N, C, D, H, W), weight
    (O, C / groups, kD, kH, kW). Each output depth is one ``conv2d`` over the kD input
    planes it reads, taken as kD channels per input channel, so the weight is only
    reshaped (groups stay contiguous) and a symbolic batch needs no merging.

    Raises:
        ValueError: input not 5-D, or channels that do not match weight and groups.

    >>> conv3d(np.ones((1, 2, 4, 5, 5), np.float32), np.ones((3, 2, 2, 3, 3), np.float32),
    ...        padding=(0, 1, 1)).shape
    (1, 3, 3, 5, 5)
    """
    if len(input.shape) != 5 or input.shape[1] != weight.shape[1] * groups:
        raise ValueError(f"conv3d: expected input (N, {weight.shape[1] * groups}, D, H, W) for "
                         f"weight {list(weight.shape)} and groups={groups}, got "
                         f"{list(input.shape)}")
    n, c, depth, h, w = input.shape
    out_channels, group_channels, kd, kh, kw = weight.shape
    (sd, sh, sw), (pd, ph, pw), (dd, dh, dw) = triple(stride), triple(padding), triple(dilation)
    x = pad(input, (0, 0, 0, 0, pd, pd)) if pd else input
    planar_weight = reshape(weight, (out_channels, group_channels * kd, kh, kw))
    outs = []
    for start in range(0, depth + 2 * pd - dd * (kd - 1), sd):
        planes = slice(x, 2, start, start + dd * (kd - 1) + 1, dd)  # (N, C, kD, H, W)
        out = conv2d(reshape(planes, (n, c * kd, h, w)), planar_weight, bias, (sh, sw),
                     (ph, pw), (dh, dw), groups)  # (N, O, OH, OW)
        outs.append(reshape(out, (n, out_channels, 1, *out.shape[2:])))
    return outs[0] if len(outs) == 1 else concat(outs, 2)  # (N, O, OD, OH, OW)


def conv_transpose3d(input: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None,
                     stride: int | tuple[int, ...] = 1, padding: int | tuple[int, ...] = 0,
                     output_padding: int | tuple[int, ...] = 0, groups: int = 1,
                     dilation: int | tuple[int, ...] = 1) -> np.ndarray:
    """3-D transposed convolution as ``torch.nn.functional.conv_transpose3d``: input
    (N, C, D, H, W), weight (C, O / groups, kD, kH, kW). Each input depth is one
    ``conv_transpose2d`` whose output channels are the kD depth taps of each output channel;
    each tap lands on output depth ``d * stride + z * dilation``, where the taps add up.

    Raises:
        ValueError: input not 5-D, or channels that do not match the weight.

    >>> conv_transpose3d(np.ones((1, 2, 3, 3, 3), np.float32),
    ...                  np.ones((2, 4, 2, 2, 2), np.float32), stride=2).shape
    (1, 4, 6, 6, 6)
    """
    if len(input.shape) != 5 or input.shape[1] != weight.shape[0]:
        raise ValueError(f"conv_transpose3d: expected input (N, {weight.shape[0]}, D, H, W) "
                         f"for weight {list(weight.shape)}, got {list(input.shape)}")
    n, c, depth = input.shape[:3]
    group_out, kd = weight.shape[1], weight.shape[2]
    (sd, sh, sw), (pd, ph, pw) = triple(stride), triple(padding)
    (od, oh, ow), (dd, dh, dw) = triple(output_padding), triple(dilation)
    taps_weight = reshape(permute(weight, (0, 2, 1, 3, 4)),
                          (c, kd * group_out, *weight.shape[3:]))  # (C, kD * O/G, kH, kW)
    full = (depth - 1) * sd + dd * (kd - 1) + 1 + od
    landed: list[list[np.ndarray]] = [[] for _ in range(full)]
    for d in range(depth):
        plane = reshape(slice(input, 2, d, d + 1), (n, c, *input.shape[3:]))
        out = conv_transpose2d(plane, taps_weight, None, (sh, sw), (ph, pw), (oh, ow), groups,
                               (dh, dw))  # (N, G * kD * O/G, OH, OW)
        size = out.shape[2:]
        taps = reshape(out, (n, groups, kd, group_out, *size))
        for z in range(kd):
            tap = reshape(slice(taps, 2, z, z + 1), (n, groups * group_out, 1, *size))
            landed[d * sd + z * dd].append(tap)
    planes = []
    for parts in landed[pd:full - pd]:
        total = parts[0] if parts else None
        for part in parts[1:]:
            total = total + part
        planes.append(total)
    zero = next(p for p in planes if p is not None) * 0.0
    out = concat([zero if p is None else p for p in planes], 2)  # (N, O, OD, OH, OW)
    if bias is not None:
        out = out + reshape(bias, (1, -1, 1, 1, 1))
    return out
