"""The ABI rows of the ``winograd`` family: the two transforms of Winograd F(2x2, 3x3) around
the per-tile product (``modelc.passes.winograd_convs``), data only like ``abi``."""

from __future__ import annotations

from .kernel_spec import KernelSpec

TRANSFORMS: dict[int, tuple[tuple[tuple[float, ...], ...], tuple[tuple[float, ...], ...]]] = {
    2: (((1, 0, -1, 0), (0, 1, 1, 0), (0, -1, 1, 0), (0, 1, 0, -1)),
        ((1, 1, 1, 0), (0, 1, -1, -1))),
    4: (((4, 0, -5, 0, 1, 0), (0, -4, -4, 1, 1, 0), (0, 4, -4, -1, 1, 0),
         (0, -2, -1, 2, 1, 0), (0, 2, -1, -2, 1, 0), (0, 4, 0, -5, 0, 1)),
        ((1, 1, 1, 1, 1, 0), (0, 1, -1, 2, -2, 0), (0, 1, 1, 4, 4, 0), (0, 1, -1, 8, -8, 1))),
}
"""Winograd F(m x m, 3x3) by output tile m: (B^T, A^T), the input tile being m + 2 wide."""


def tile(op: str) -> int:
    """The output tile m of a winograd row's ``op`` (``winograd_input``: 2,
    ``winograd4_output``: 4)."""
    return 4 if op.startswith("winograd4") else 2


def _input(m: int) -> KernelSpec:
    a, op = m + 2, "winograd_input" if m == 2 else f"winograd{m}_input"
    return KernelSpec(
        f"f32_{op}", "winograd", op,
        ("x", "v", "n", "c", "cs", "h", "w", "th", "tw", "top", "left", "count"),
        f"V({a * a} * cs, count) = B^T d B (TRANSFORMS[{m}]) of the {a}x{a} input tile d of "
        f"every {m}x{m} output tile: tile t = b * th * tw + i * tw + j of image b reads rows "
        f"{m} i - top .. {m} i - top + {a - 1} and columns {m} j - left .. {m} j - left + "
        f"{a - 1} of x(n, cs, h, w), zero outside it (the padding), and position {a} r + s "
        f"of channel ch's transformed tile goes to V[({a} r + s) * cs + ch, t] (count >= n * "
        "th * tw: columns past the tiles are not written); only channels ch < c are "
        "computed (a part of the channels: the caller moves x and V to its first channel); "
        "all row-major f32; V must not alias x")


def _output(m: int, residual: bool, activation: str) -> KernelSpec:
    epilogue = ("bias",) + (("add",) if residual else ()) + ((activation,) if activation else ())
    math = "A^T m A + bias[ch]" + (" + R" if residual else "")
    math = f"{activation}({math})" if activation else math
    a, op = m + 2, "winograd_output" if m == 2 else f"winograd{m}_output"
    return KernelSpec(
        "_".join((f"f32_{op}",) + epilogue), "winograd", op,
        ("m", "bias") + (("r",) if residual else ()) + ("y", "n", "o", "os", "oh", "ow", "th",
                                                         "tw", "count"),
        f"Y(n, os, oh, ow) = {math} (TRANSFORMS[{m}]): the {m}x{m} outputs of tile t = b * th "
        f"* tw + i * tw + j (rows {m} i .. {m} i + {m - 1} and columns {m} j .. {m} j + {m - 1} "
        f"of image b, those inside oh x ow; th = ceil(oh / {m}), tw = ceil(ow / {m})) from the "
        f"{a}x{a} products m(r, s) = M[({a} r + s) * os + ch, t] of M({a * a} * os, count), "
        "count >= n * th * tw, bias (os,)"
        + (", R laid out as Y" if residual else "")
        + "; only channels ch < o are computed (the caller moves M, bias, Y"
        + (", R" if residual else "") + " to a part's first channel); all row-major f32; "
        "Y must not alias M" + (" (it may alias R)" if residual else ""), epilogue=epilogue)


DILATED = ("tile j of a row starts at output column (j / dil) * {m} dil + j % dil, tile i at "
           "row (i / dil) * {m} dil + i % dil (th, tw tiles of n images, each starting inside "
           "the image)")


def _dilated_input(m: int) -> KernelSpec:
    a, op = m + 2, "winograd_dilated_input" if m == 2 else f"winograd{m}_dilated_input"
    return KernelSpec(
        f"f32_{op}", "winograd", op,
        ("x", "v", "n", "c", "cs", "h", "w", "th", "tw", "top", "left", "count", "dil"),
        f"V({a * a} * cs, count) = B^T d B (TRANSFORMS[{m}]) of the {a}x{a} input tile d of "
        f"every {m}x{m} output tile of a 3x3 conv of dilation dil >= 1: "
        + DILATED.format(m=m) + f"; tile t = b * th * tw + i * tw + j of image b starting at "
        f"(r0, c0) reads rows r0 - top + dil r and columns c0 - left + dil s (r, s < {a}) of "
        f"x(n, cs, h, w), zero outside it, and position {a} r + s of channel ch's transformed "
        f"tile goes to V[({a} r + s) * cs + ch, t] (count >= n * th * tw: columns past the "
        "tiles are not written); only channels ch < c are computed (the caller moves x and V "
        "to its first channel); all row-major f32; V must not alias x")


def _dilated_output(m: int, activation: str) -> KernelSpec:
    epilogue = ("bias",) + ((activation,) if activation else ())
    math = f"{activation}(A^T m A + bias[ch])" if activation else "A^T m A + bias[ch]"
    a, op = m + 2, "winograd_dilated_output" if m == 2 else f"winograd{m}_dilated_output"
    return KernelSpec(
        "_".join((f"f32_{op}",) + epilogue), "winograd", op,
        ("m", "bias", "y", "n", "o", "os", "oh", "ow", "th", "tw", "count", "dil"),
        f"Y(n, os, oh, ow) = {math} (TRANSFORMS[{m}]) for a 3x3 conv of dilation dil >= 1: "
        + DILATED.format(m=m) + f"; the outputs of tile t = b * th * tw + i * tw + j starting "
        f"at (r0, c0) are rows r0 + dil r and columns c0 + dil s (r, s < {m}) of image b, "
        f"those inside oh x ow, from the {a}x{a} products m(r, s) = M[({a} r + s) * os + ch, "
        "t] of M({a * a} * os, count), count >= n * th * tw, bias (os,); only channels ch < o "
        "are computed (the caller moves M, bias, Y to a part's first channel); all row-major "
        "f32; Y must not alias M", epilogue=epilogue)


def winograd_rows(activations: tuple[str, ...]) -> tuple[KernelSpec, ...]:
    """The family's rows for F(2x2, 3x3) and F(4x4, 3x3): the input transform, and the output
    transform with a bias, with or without a residual, followed by none or one of
    ``activations``; and the dilated conv's input transform and output transforms (a bias
    and none or one of ``activations``)."""
    return tuple(row for m in TRANSFORMS for row in (
        _input(m), *(_output(m, residual, act) for residual in (False, True)
                     for act in ("", *activations)),
        _dilated_input(m), *(_dilated_output(m, act) for act in ("", *activations))))
