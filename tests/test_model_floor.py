"""``bench/model_floor.py``'s count of the multiply-adds a compiled model's products execute,
against the textbook formula for each layer (2 FLOPs per multiply-add)."""

import math
import sys
from pathlib import Path

import numpy as np

import modelc
import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from model_floor import product_flops  # noqa: E402


def _flops(model: nn.Module, x: np.ndarray) -> dict[str, float]:
    return product_flops(modelc.optimize(modelc.trace(model.eval(), {"x": x})))


def test_conv_depthwise_pointwise_linear_count_matches_formula():
    n, h = 2, 10
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8),
                          nn.Conv2d(8, 12, 1), nn.Flatten(), nn.Linear(12 * 5 * 5, 10))
    flops = _flops(model, np.zeros((n, 3, h, h), np.float32))
    dense = 2 * n * 8 * h * h * 3 * 3 * 3          # 3 -> 8, 3x3 at 10x10
    depthwise = 2 * n * 8 * 5 * 5 * 3 * 3          # 8 groups of one channel, 3x3/2 at 5x5
    pointwise = 2 * n * 12 * 5 * 5 * 8             # 8 -> 12, 1x1 at 5x5
    linear = 2 * n * 300 * 10
    assert flops["depthwise"] == depthwise
    assert sum(flops.values()) == dense + depthwise + pointwise + linear


def test_winograd_conv_counts_its_grouped_product_not_the_direct_conv():
    c, o, h = 16, 24, 8
    graph = modelc.optimize(modelc.trace(nn.Sequential(nn.Conv2d(c, o, 3, padding=1)).eval(),
                                         {"x": np.zeros((1, c, h, h), np.float32)}))
    (tiles,) = [node for node in graph.nodes if node.op == "winograd_input"]
    m, count = tiles.attrs["tile"], tiles.attrs["count"]
    assert count >= math.ceil(h / m) ** 2
    assert product_flops(graph) == {"winograd": 2 * (m + 2) ** 2 * o * c * count}
