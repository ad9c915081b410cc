"""f32_resample (one resize axis from index/weight tables) on every provider, against the
same weighted sum in numpy, across XNNPACK's size classes of ``inner`` and, for the last
axis (``inner == 1``, registers across outputs), of ``on``."""

import numpy as np
import pytest


@pytest.mark.parametrize("outer, n, on, inner, taps", [
    (1, 1, 1, 1, 1), (2, 5, 9, 1, 2), (3, 4, 8, 4, 1), (2, 6, 11, 8, 2), (1, 7, 3, 3, 4),
    (2, 9, 17, 13, 2), (1, 3, 5, 6, 4), (3, 6, 4, 1, 1), (2, 5, 8, 1, 4), (1, 9, 3, 1, 2),
    (2, 4, 13, 1, 1)])
def test_resample_is_a_weighted_gather(kernels, outer: int, n: int, on: int, inner: int,
                                       taps: int) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(on * 10 + inner)
    x = rng.standard_normal((outer, n, inner)).astype(np.float32)
    index = rng.integers(0, n, (on, taps)).astype(np.int32)
    weight = rng.standard_normal((on, taps)).astype(np.float32)
    y = kernels.call("f32_resample", offset=4 * (inner % 3), x=x,
                     index=np.ascontiguousarray(index.T), weight=np.ascontiguousarray(weight.T),
                     y=(outer, on, inner), outer=outer, n=n, on=on, inner=inner,
                     taps=taps)["y"]
    want = np.einsum("bokj,ok->boj", x[:, index, :].astype(np.float64), weight)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
