"""avg_pool2d: the mean of each window (torch's count_include_pad and ceil_mode rules).

The kernel sums each window; the divisors, which depend only on the output position, are
computed here once by ``nn.functional.avg_pool2d`` itself and passed as reciprocals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from nn import functional as F

from ._pool import Pool2d

if TYPE_CHECKING:
    from ..graph import Node


class AvgPool2d(Pool2d):
    name = "avg_pool2d"

    def scale(self, node: Node) -> np.ndarray:
        attrs = {k: v for k, v in node.attrs.items() if k != "divisor_override"}
        ones = np.ones((1, 1) + tuple(node.inputs[0].shape[2:]), np.float32)
        override = node.attrs.get("divisor_override")
        if override is not None:
            return np.full(node.output.shape[2:], 1 / override, np.float32)
        # mean of ones = count / divisor, so 1 / divisor = mean / count
        counts = F.avg_pool2d(ones, **{**attrs, "divisor_override": 1})
        return (F.avg_pool2d(ones, **attrs) / counts)[0, 0]


OP = AvgPool2d()
