"""The ABI rows of the ``attention`` family: a transformer's attention per head in one call,
``softmax(Q K^T [+ mask]) V``, with the heads read and written in place in the rows of the
projections (``modelc.passes.fuse_attention``); data only like ``abi``."""

from __future__ import annotations

from .kernel_spec import KernelSpec

ATTENTION_ROWS = 16
"""Query rows whose scores a call holds at once (``ATTENTION_ROWS * src`` floats: 8 KiB at
128 keys, so they stay in L1 from the products that write them to the one that reads them)."""

ATTENTION_PARTS = 8
"""Regions in an attention kernel's scratch: a call split across threads runs at most this
many parts (ranges of query rows), each in a region of its own."""


def attention_scratch_floats(src: int, d: int) -> int:
    """The floats of an attention kernel's scratch for ``src`` keys of ``d`` floats a head:
    ``ATTENTION_PARTS`` regions, each a block of ``ATTENTION_ROWS`` rows of scores and a
    dense copy of one head's V (``src * d``)."""
    return ATTENTION_PARTS * (ATTENTION_ROWS + d) * src


_PARAMS = ("batch", "heads", "t", "rows", "src", "d")

_DOC = (
    "Y(b, i, h, :) = softmax(Q(b, i, h, :) @ KT(b, h){mask}) @ V(b, :, h, :) for b < batch, "
    "i < rows, h < heads: Q and Y are (batch, t, heads, d) from their pointers (a call's "
    "first query row, the rows <= t of each batch element computed), KT is (batch, heads, "
    "d, src), V is (batch, src, heads, d), all dense f32; s is scratch of "
    "attention_scratch_floats(src, d) floats, overwritten")

ATTENTION: tuple[KernelSpec, ...] = (
    KernelSpec("f32_head_attention", "attention", "head_attention",
               ("q", "kt", "v", "y", "s") + _PARAMS, _DOC.format(mask="")),
    KernelSpec("f32_head_attention_bias", "attention", "head_attention",
               ("q", "kt", "v", "mask", "y", "s") + _PARAMS + ("mask_stride",),
               _DOC.format(mask=" + mask[b * mask_stride:][:src]") + "; the mask rows "
               "(src floats, mask_stride floats apart, 0 shares one) are added to the "
               "scores", epilogue=("bias",)),
    KernelSpec("f32_head_attention_add", "attention", "head_attention",
               ("q", "kt", "v", "mask", "y", "s") + _PARAMS + ("mask_stride",),
               _DOC.format(mask=" + M(b, i, :)") + "; M(b) is a (rows, src) mask from the "
               "mask pointer (a call's first query row), M(b + 1) mask_stride floats after "
               "M(b) (0 shares one), one row per query row", epilogue=("add",)),
)
