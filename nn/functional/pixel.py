"""Sub-pixel rearrangements, composites of ``reshape`` and ``permute``: ``pixel_shuffle``,
``pixel_unshuffle`` and ``channel_shuffle`` (the channel regrouping of ONNX's DepthToSpace
in DCR mode).

Each is written as permutes of at most 4 axes after merging the axes that stay together,
the shape the strided copy kernel takes, instead of torch's 6-D view: a reshape between the
permutes keeps them apart. The batch axis stays an axis of its own, so it may be symbolic.
"""

from __future__ import annotations

from typing import Any

from .shape import permute, reshape

__all__ = ["channel_shuffle", "pixel_shuffle", "pixel_unshuffle"]


def _check(input: Any, factor: int, op: str) -> tuple[Any, int, int, int]:
    if len(input.shape) != 4:
        raise ValueError(f"{op}: expected 4-D (N, C, H, W) input, got shape "
                         f"{tuple(input.shape)}")
    if not isinstance(factor, int) or factor < 1:
        raise ValueError(f"{op}: the factor must be a positive int, got {factor!r}")
    return tuple(input.shape)


def _lead(n: Any, k: int) -> tuple[Any, ...]:
    """The leading axes (N, K) of a rearrangement that keeps them together: one axis when
    N is fixed, and no axis of size 1, which the strided kernel could not merge away."""
    if isinstance(n, int):
        return (n * k,)
    return (n, k) if k > 1 else (n,)


def _swap(input: Any, lead: tuple[Any, ...], a: int, b: int, rest: tuple[int, ...] = ()
          ) -> Any:
    """``input`` viewed as (*lead, a, b, *rest), with the ``a`` and ``b`` axes swapped."""
    k = len(lead)
    order = (*range(k), k + 1, k, *range(k + 2, k + 2 + len(rest)))
    return permute(reshape(input, (*lead, a, b, *rest)), order)


def pixel_shuffle(input: Any, upscale_factor: int) -> Any:
    """(N, C * r * r, H, W) -> (N, C, H * r, W * r), as torch's ``pixel_shuffle``.

    Raises:
        ValueError: not 4-D, a bad factor, or channels not divisible by ``r * r``.

    >>> import numpy as np
    >>> pixel_shuffle(np.arange(4.0).reshape(1, 4, 1, 1), 2).reshape(-1).tolist()
    [0.0, 1.0, 2.0, 3.0]
    """
    n, c, h, w = _check(input, upscale_factor, "pixel_shuffle")
    r = upscale_factor
    if c % (r * r):
        raise ValueError(f"pixel_shuffle expects its input's 'C' dimension to be divisible "
                         f"by the square of upscale_factor, but input.size(-3)={c} is not "
                         f"divisible by {r * r}")
    depth = c // (r * r)
    rows = _swap(input, _lead(n, depth), r * r, h, (w,))  # (N C', H, r r, W)
    columns = _swap(rows, _lead(n, depth * h * r), r, w)  # (N C' H r, W, r)
    return reshape(columns, (n, depth, h * r, w * r))


def pixel_unshuffle(input: Any, downscale_factor: int) -> Any:
    """(N, C, H * r, W * r) -> (N, C * r * r, H, W), as torch's ``pixel_unshuffle``.

    Raises:
        ValueError: not 4-D, a bad factor, or H or W not divisible by ``r``.

    >>> import numpy as np
    >>> pixel_unshuffle(np.arange(4.0).reshape(1, 1, 2, 2), 2).reshape(-1).tolist()
    [0.0, 1.0, 2.0, 3.0]
    """
    n, c, h, w = _check(input, downscale_factor, "pixel_unshuffle")
    r = downscale_factor
    if h % r or w % r:
        raise ValueError(f"pixel_unshuffle expects height ({h}) and width ({w}) to be "
                         f"divisible by downscale_factor ({r})")
    columns = _swap(input, _lead(n, c * h), w // r, r)  # (N C H, r, W')
    rows = _swap(columns, _lead(n, c), h // r, r * r, (w // r,))  # (N C, r r, H', W')
    return reshape(rows, (n, c * r * r, h // r, w // r))


def channel_shuffle(input: Any, groups: int) -> Any:
    """(N, G * K, H, W): channel ``g * K + k`` moves to ``k * G + g``, as torch's
    ``channel_shuffle``.

    Raises:
        ValueError: not 4-D, or channels not divisible by ``groups``.

    >>> import numpy as np
    >>> channel_shuffle(np.arange(4.0).reshape(1, 4, 1, 1), 2).reshape(-1).tolist()
    [0.0, 2.0, 1.0, 3.0]
    """
    n, c, h, w = _check(input, groups, "channel_shuffle")
    if c % groups:
        raise ValueError(f"channel_shuffle: {c} channels are not divisible by {groups} "
                         "groups")
    return reshape(_swap(input, _lead(n, 1), groups, c // groups, (h * w,)), (n, c, h, w))
