"""``conv2d.kernel_path`` (what bench/op_profile.py labels convs with) names the kernel the
lowering calls."""

import numpy as np
import pytest
from executors import Lambda

import modelc
from modelc.export import pipeline
from modelc.ops.conv2d import kernel_path
from nn import functional as F
from wasm_kernels.wasm import read_module

RNG = np.random.default_rng(0)


def _conv(c: int, o: int, k: int, stride: int, size: int, groups: int = 1):
    weight = RNG.standard_normal((o, c // groups, k, k)).astype(np.float32)
    model = Lambda(lambda x: F.conv2d(x, weight, None, stride=stride, padding=k // 2,
                                      groups=groups))
    return model, (RNG.standard_normal((1, c, size, size)).astype(np.float32),)


@pytest.mark.parametrize("c, o, k, stride, size, groups, path, prefix", [
    (16, 16, 3, 1, 20, 16, "depthwise", "f32_depthwise"),
    (256, 256, 3, 2, 14, 1, "rows", "f32_linear"),
    (12, 24, 3, 1, 208, 1, "taps", "f32_conv2d_gemm"),
    (32, 32, 3, 1, 160, 1, "taps", "f32_conv2d_gemm"),
    (32, 64, 3, 2, 80, 1, "gemm", "f32_conv2d_im2col"),
    (32, 64, 1, 1, 28, 1, "pointwise", "f32_conv2d_gemm"),
    (64, 128, 3, 2, 56, 1, "gemm", "f32_conv2d_im2col"),
    (128, 256, 1, 2, 56, 1, "pointwise", "f32_conv2d_gemm"),
    (3, 16, 3, 2, 112, 1, "direct", "f32_conv2d"),
])
def test_kernel_path_names_the_kernel_the_lowering_calls(c, o, k, stride, size, groups, path,
                                                         prefix) -> None:
    model, inputs = _conv(c, o, k, stride, size, groups)
    graph = modelc.optimize(modelc.trace(model, inputs), pipeline(winograd=False))
    (conv,) = [node for node in graph.nodes if node.op == "conv2d"]
    assert kernel_path(conv) == path
    calls = {i.name for i in read_module(modelc.export(model, inputs, winograd=False)).imports}
    assert any(name.startswith(prefix) for name in calls), calls
    if path == "direct":
        assert not any(name.startswith("f32_conv2d_gemm") for name in calls)
