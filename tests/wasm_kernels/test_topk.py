"""f32_topk on every provider: largest and smallest, ties in index order, k = 0 and k = n,
the axis in the middle of (outer, n, inner)."""

import numpy as np
import pytest


@pytest.mark.parametrize("outer, n, inner, k", [(1, 1, 1, 1), (2, 7, 3, 3), (3, 10, 1, 10),
                                                (1, 5, 4, 0), (4, 33, 2, 5)])
@pytest.mark.parametrize("largest", [1, 0])
def test_topk(kernels, outer: int, n: int, inner: int, k: int, largest: int) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(n)
    # Few distinct values, so ties occur; -0.0 and infinities among them.
    x = rng.choice(np.array([-2.5, -0.0, 0.0, 1.0, 3.5, np.inf, -np.inf], np.float32),
                   (outer, n, inner))
    out = kernels.call("f32_topk", offset=4, x=x, values=(outer, k, inner),
                       indices=kernels.output((outer, k, inner), np.int64), outer=outer, n=n,
                       inner=inner, k=k, largest=largest)
    order = np.argsort(-x if largest else x, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(out["indices"], order)
    np.testing.assert_array_equal(out["values"].view(np.uint32),
                                  np.take_along_axis(x, order, 1).view(np.uint32))
