"""The attention rows against numpy's softmax(Q K^T + mask) V per head, on every provider."""

import numpy as np
import pytest

from wasm_kernels import abi

# (batch, heads, t, src, d): one query; fewer rows than a tile; a block and a row; two blocks
# of scores with tiles of 4 rows, single rows, 8-, 4- and 1-column panels (src and d not
# multiples of 8); MiniLM's 12 heads of 32 over 128 tokens, and two batch elements.
SHAPES = [(1, 1, 1, 1, 1), (1, 2, 3, 5, 7), (1, 3, 17, 13, 6), (2, 2, 37, 45, 33),
          (1, 12, 128, 128, 32), (2, 4, 20, 21, 8)]


def reference(q, kt, v, mask):  # type: ignore[no-untyped-def]
    """Y (batch, t, heads, d) in float64; mask (batch, src) or (batch, t, src)."""
    scores = q.astype(np.float64).transpose(0, 2, 1, 3) @ kt  # (batch, heads, t, src)
    if mask is not None:
        scores += mask[:, None, None, :] if mask.ndim == 2 else mask[:, None]
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return ((e / e.sum(axis=-1, keepdims=True)) @ v.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", [spec.name for spec in abi.ATTENTION])
def test_attention(kernels, shape, name) -> None:  # type: ignore[no-untyped-def]
    batch, heads, t, src, d = shape
    rng = np.random.default_rng(sum(shape))
    q = rng.standard_normal((batch, t, heads, d), np.float32)
    kt = rng.standard_normal((batch, heads, d, src), np.float32)
    v = rng.standard_normal((batch, src, heads, d), np.float32)
    spec = abi.BY_NAME[name]
    if "add" in spec.epilogue:  # a mask per query row: causal, each row a little different
        mask = np.where(np.tri(t, src, dtype=bool), 0, np.finfo(np.float32).min)
        mask = (mask + rng.standard_normal((batch, t, src))).astype(np.float32)
    else:  # a padding mask: the last keys of the second batch element masked out
        mask = np.zeros((batch, src), np.float32)
        mask[1:, src // 2 + 1:] = np.finfo(np.float32).min
    out = kernels.call(name, offset=4, q=q, kt=kt, v=v, mask=mask, y=(batch, t, heads, d),
                       s=(abi.attention_scratch_floats(src, d),), batch=batch, heads=heads, t=t,
                       rows=t, src=src, d=d, mask_stride=mask[0].size)["y"]
    expected = reference(q, kt, v, mask if "mask" in spec.params else None)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5 * np.sqrt(d * src))


def test_attention_rows_of_a_part(kernels) -> None:  # type: ignore[no-untyped-def]
    """A call from a later query row (a part of a split call) with one mask row shared by
    the batch: only its rows of each batch element are written."""
    batch, heads, t, src, d, first, rows = 2, 3, 29, 19, 8, 9, 17
    rng = np.random.default_rng(3)
    q = rng.standard_normal((batch, t, heads, d), np.float32)
    kt = rng.standard_normal((batch, heads, d, src), np.float32)
    v = rng.standard_normal((batch, src, heads, d), np.float32)
    mask = rng.standard_normal(src).astype(np.float32)
    y = np.zeros((batch, t, heads, d), np.float32)
    whole = kernels.call("f32_head_attention_bias", q=q, kt=kt, v=v, mask=mask,
                         y=kernels.inout(y), s=(abi.attention_scratch_floats(src, d),),
                         batch=batch, heads=heads, t=t, rows=t, src=src, d=d,
                         mask_stride=0)["y"]
    np.testing.assert_allclose(whole, reference(q, kt, v, np.stack([mask] * batch)),
                               rtol=1e-4, atol=1e-4)
    # the same call on rows first .. first + rows: q and y start that many rows on
    part = np.zeros_like(y)
    flat_q = q.reshape(-1)[first * heads * d:]
    out = kernels.call("f32_head_attention_bias", q=flat_q, kt=kt, v=v, mask=mask,
                       y=kernels.inout(part.reshape(-1)[first * heads * d:].copy()),
                       s=(abi.attention_scratch_floats(src, d),), batch=batch, heads=heads,
                       t=t, rows=rows, src=src, d=d, mask_stride=0)["y"]
    written = np.zeros(batch * t * heads * d, np.float32)
    written[first * heads * d:] = out
    written = written.reshape(batch, t, heads, d)
    np.testing.assert_array_equal(written[:, first + rows:], 0)
    np.testing.assert_array_equal(written[:, :first], 0)
    np.testing.assert_allclose(written[:, first:first + rows], whole[:, first:first + rows],
                               rtol=1e-5, atol=1e-6)


def test_attention_with_a_mask_per_query_row_from_a_later_row(kernels) -> None:  # type: ignore[no-untyped-def]
    """f32_head_attention_add from query row ``first`` on, its mask pointer that row's."""
    batch, heads, t, src, d, first = 2, 2, 21, 21, 8, 6
    rng = np.random.default_rng(4)
    q = rng.standard_normal((batch, t, heads, d), np.float32)
    kt = rng.standard_normal((batch, heads, d, src), np.float32)
    v = rng.standard_normal((batch, src, heads, d), np.float32)
    mask = rng.standard_normal((batch, t, src)).astype(np.float32)
    out = kernels.call("f32_head_attention_add", q=q.reshape(-1)[first * heads * d:],
                       kt=kt, v=v, mask=mask.reshape(-1)[first * src:],
                       y=(batch * t * heads * d - first * heads * d,),
                       s=(abi.attention_scratch_floats(src, d),), batch=batch, heads=heads,
                       t=t, rows=t - first, src=src, d=d, mask_stride=t * src)["y"]
    written = np.concatenate([np.zeros(first * heads * d, np.float32), out])
    written = written.reshape(batch, t, heads, d)
    np.testing.assert_allclose(written[:, first:], reference(q, kt, v, mask)[:, first:],
                               rtol=1e-4, atol=1e-4)
