"""<dtype>_topk on every provider: largest and smallest, ties in index order, k = 0 and
k = n, the axis in the middle of (outer, n, inner); float32 with signed zeros and
infinities, int32 and int64 with their extremes (where negation would overflow)."""

import numpy as np
import pytest

VALUES = {
    "f32": np.array([-2.5, -0.0, 0.0, 1.0, 3.5, np.inf, -np.inf], np.float32),
    "i32": np.array([-(2 ** 31), -3, 0, 1, 7, 2 ** 31 - 1], np.int32),
    "i64": np.array([-(2 ** 63), -(2 ** 40), 0, 1, 2 ** 40 + 1, 2 ** 63 - 1], np.int64),
}


@pytest.mark.parametrize("short", sorted(VALUES))
@pytest.mark.parametrize("outer, n, inner, k", [(1, 1, 1, 1), (2, 7, 3, 3), (3, 10, 1, 10),
                                                (1, 5, 4, 0), (4, 33, 2, 5)])
@pytest.mark.parametrize("largest", [1, 0])
def test_topk(kernels, short: str, outer: int, n: int, inner: int, k: int, largest: int) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(n)
    x = rng.choice(VALUES[short], (outer, n, inner))  # few distinct values, so ties occur
    out = kernels.call(f"{short}_topk", offset=4, x=x,
                       values=kernels.output((outer, k, inner), x.dtype),
                       indices=kernels.output((outer, k, inner), np.int64), outer=outer, n=n,
                       inner=inner, k=k, largest=largest)
    # NOTE: a sort of the values as Python numbers (exact, no negation) is the reference.
    key = [[(-v if largest else v, m) for m, v in enumerate(column.tolist())]
           for column in x.transpose(0, 2, 1).reshape(-1, n)]
    order = np.array([[m for _, m in sorted(column)[:k]] for column in key], np.int64)
    order = order.reshape(outer, inner, k).transpose(0, 2, 1)
    np.testing.assert_array_equal(out["indices"], order)
    np.testing.assert_array_equal(out["values"].view(f"u{x.itemsize}"),
                                  np.take_along_axis(x, order, 1).view(f"u{x.itemsize}"))
