"""ConvTranspose and Pad's border modes from ONNX compiled to wasm, against onnxruntime
within 1e-4 relative on every kernel provider: one-node models (every attribute form the
importer maps: pads, output_padding, output_shape, auto_pad, group, dilations, 1-D) and a
decoder exported from torch."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from single_node import Run, i64, r, single_node

# id: (op, operands, attrs, opset), as test_ops.CASES
CASES: dict[str, tuple] = {
    "conv_transpose_stride2_output_padding": (
        "ConvTranspose", [Run(r(2, 3, 5, 6)), r(3, 4, 3, 3), r(4)],
        {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}, 13),
    "conv_transpose_stride3_dilated_groups": (
        "ConvTranspose", [Run(r(1, 4, 4, 7)), r(4, 3, 3, 2), r(6)],
        {"strides": [3, 1], "dilations": [1, 2], "group": 2, "pads": [2, 0, 2, 0]}, 11),
    "conv_transpose_depthwise": (
        "ConvTranspose", [Run(r(1, 5, 6, 6)), r(5, 1, 4, 4)],
        {"strides": [2, 2], "pads": [1, 1, 1, 1], "group": 5}, 13),
    "conv_transpose_uneven_pads": (
        "ConvTranspose", [Run(r(1, 2, 4, 5)), r(2, 4, 3, 3), r(8)],
        {"strides": [2, 1], "pads": [0, 1, 2, 0], "group": 2}, 11),
    "conv_transpose_output_shape": (
        "ConvTranspose", [Run(r(1, 2, 3, 3)), r(2, 2, 3, 3)],
        {"strides": [3, 2], "output_shape": [10, 8]}, 13),
    "conv_transpose_same_upper": (
        "ConvTranspose", [Run(r(1, 2, 5, 6)), r(2, 3, 3, 3), r(3)],
        {"strides": [2, 3], "auto_pad": "SAME_UPPER"}, 13),
    "conv_transpose_same_lower_dilated": (
        "ConvTranspose", [Run(r(1, 2, 5, 4)), r(2, 3, 4, 3)],
        {"strides": [3, 2], "dilations": [1, 2], "auto_pad": "SAME_LOWER"}, 11),
    "conv_transpose_1d": (
        "ConvTranspose", [Run(r(2, 3, 9)), r(3, 2, 4), r(2)],
        {"strides": [2], "pads": [1, 1]}, 13),
    "pad_reflect": ("Pad", [Run(r(1, 2, 4, 4)), i64(0, 0, 1, 3, 0, 0, 2, 1)],
                    {"mode": "reflect"}, 13),
    "pad_edge_axes": ("Pad", [Run(r(2, 4, 4)), i64(1, 2, 0, 5), None, i64(0, 2)],
                      {"mode": "edge"}, 18),
    "pad_wrap": ("Pad", [Run(r(1, 3, 5, 4)), i64(0, 0, 2, 4, 0, 0, 5, 1)],
                 {"mode": "wrap"}, 19),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_node_in_wasm_matches_onnxruntime(case, check_wasm_against_ort):
    check_wasm_against_ort(*single_node(*CASES[case]))


def test_torch_decoder_in_wasm_matches_onnxruntime(torch_to_onnx, check_wasm_against_ort):
    torch = pytest.importorskip("torch")
    tnn = torch.nn
    torch.manual_seed(0)
    decoder = tnn.Sequential(
        tnn.Conv2d(4, 8, 3, padding=1, padding_mode="reflect"), tnn.ReLU(),
        tnn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1), tnn.ReLU(),
        tnn.ConvTranspose2d(6, 4, 3, stride=2, groups=2, dilation=2), tnn.ReplicationPad2d(1),
        tnn.Conv2d(4, 3, 1), tnn.Sigmoid())
    x = np.random.default_rng(0).standard_normal((2, 4, 5, 6)).astype(np.float32)
    data = torch_to_onnx(decoder, (torch.from_numpy(x),), ["image"], ["out"])
    check_wasm_against_ort(data, {"image": x})
