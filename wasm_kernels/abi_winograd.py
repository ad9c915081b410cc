"""The ABI rows of the ``winograd`` family: the two transforms of Winograd F(2x2, 3x3) around
the per-tile product (``modelc.passes.winograd_convs``), data only like ``abi``."""

from __future__ import annotations

from .kernel_spec import KernelSpec

WINOGRAD_INPUT = KernelSpec(
    "f32_winograd_input", "winograd", "winograd_input",
    ("x", "v", "n", "c", "cs", "h", "w", "th", "tw", "top", "left", "count"),
    "V(16 * cs, count) = B^T d B of the 4x4 input tile d of every 2x2 output tile: "
    "tile t = b * th * tw + i * tw + j of image b reads rows 2 i - top .. 2 i - top + 3 and "
    "columns 2 j - left .. 2 j - left + 3 of x(n, cs, h, w), zero outside it (the padding), "
    "and position 4 r + s of channel ch's transformed tile goes to V[(4 r + s) * cs + ch, t] "
    "(count >= n * th * tw: columns past the tiles are not written); "
    "only channels ch < c are computed (a part of the channels: the caller moves x and V to "
    "its first channel); all row-major f32; V must not alias x")


def _output(residual: bool, activation: str) -> KernelSpec:
    epilogue = ("bias",) + (("add",) if residual else ()) + ((activation,) if activation else ())
    math = "A^T m A + bias[ch]" + (" + R" if residual else "")
    math = f"{activation}({math})" if activation else math
    return KernelSpec(
        "_".join(("f32_winograd_output",) + epilogue), "winograd", "winograd_output",
        ("m", "bias") + (("r",) if residual else ()) + ("y", "n", "o", "os", "oh", "ow", "th",
                                                         "tw", "count"),
        f"Y(n, os, oh, ow) = {math}: the 2x2 outputs of tile t = b * th * tw + i * tw + j "
        "(rows 2 i, 2 i + 1 and columns 2 j, 2 j + 1 of image b, those inside oh x ow; th = "
        "ceil(oh / 2), tw = ceil(ow / 2)) from the 4x4 products m(r, s) = M[(4 r + s) * os + ch, "
        "t] of M(16 * os, count), count >= n * th * tw, bias (os,)"
        + (", R laid out as Y" if residual else "")
        + "; only channels ch < o are computed (the caller moves M, bias, Y"
        + (", R" if residual else "") + " to a part's first channel); all row-major f32; "
        "Y must not alias M" + (" (it may alias R)" if residual else ""), epilogue=epilogue)


def winograd_rows(activations: tuple[str, ...]) -> tuple[KernelSpec, ...]:
    """The family's rows: the input transform, and the output transform with a bias, with
    or without a residual, followed by none or one of ``activations``."""
    return (WINOGRAD_INPUT, *(_output(residual, act) for residual in (False, True)
                              for act in ("", *activations)))
