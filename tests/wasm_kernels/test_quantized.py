"""The quantize and qlinear rows on every provider against ``nn.functional``'s quantized ops
(eager numpy): bit-exact, at the tile edges of the SIMD qlinear (2 rows by 8 columns, k in
steps of 4, blocks of rows widened in scratch) and at the accumulation bound; the relaxed
tile, which ``TILE_ISA`` leaves out of the relaxed module, the same way."""

import numpy as np
import pytest

from nn import functional as F
from wasm_kernels import abi, abi_quantized
from wasm_kernels.pack_quantized import SEVEN_BIT as SEVEN
from wasm_kernels.pack_quantized import (
    pack_qlinear_weight,
    qblock_rows,
    qlinear_scratch_floats,
    seven_bit_panels,
)

# (m, k, n): size 1, k % 4 tails of 1-3, n below, at and past the 8-column panel, m % 2
# remainders, several tiles, a long k, and k past the unrolled steps of 8 by one step of 4
# (with and without a tail), and past A's widened chunks of 16 by steps of 4 (23, 44); fewer
# rows than pack_quantized.DIRECT_ROWS take the tiles that widen W as they load it, the rest widen
# it a panel at a time (4 rows and more).
SHAPES = [(1, 1, 1), (1, 3, 7), (2, 4, 8), (3, 5, 9), (2, 7, 16), (2, 12, 8), (3, 15, 9),
          (5, 16, 17), (2, 23, 8), (4, 33, 24), (3, 44, 9), (7, 130, 31), (3, 384, 40)]
QLINEAR = [k for k in abi.KERNELS if k.family == "qlinear"]
RANGE = {"uint8": (0, 256), "int8": (-128, 128)}


def q(value, dtype=np.float32):  # type: ignore[no-untyped-def]
    return np.array(value, dtype)


def _operands(spec: abi.KernelSpec, m: int, k: int, n: int, seed: int,
              weights: tuple[int, int] = (-128, 128)) -> dict:
    rng = np.random.default_rng(seed)
    dtype = spec.dtypes[0]
    a = rng.integers(*RANGE[dtype], (m, k)).astype(dtype)
    w = rng.integers(*weights, (n, k)).astype(np.int8)
    w.flat[[0, -1]] = weights[0], weights[1] - 1  # both ends of the range
    return {"a": a, "a_scale": q([0.02]), "a_zero_point": q([rng.integers(*RANGE[dtype])],
                                                             dtype),
            "w": w, "w_scale": rng.uniform(0.001, 0.01, n).astype(np.float32),
            "bias": rng.integers(-5000, 5000, n).astype(np.int32),
            "fbias": rng.standard_normal(n).astype(np.float32),
            "c_scale": q([0.4]), "c_zero_point": q([rng.integers(*RANGE[dtype]) // 2], dtype)}


def _reference(spec: abi.KernelSpec, ops: dict) -> np.ndarray:
    requantize = "requantize" in spec.epilogue
    activation = spec.activations[0] if spec.activations else ""
    return F.qlinear(ops["a"], ops["a_scale"][0], ops["a_zero_point"][0], ops["w"],
                     ops["w_scale"], q(0, np.int8), ops["bias"] if requantize else None,
                     ops["c_scale"][0] if requantize else None,
                     ops["c_zero_point"][0] if requantize else None, activation) \
        if requantize else F.qlinear(
            ops["a"], ops["a_scale"][0], ops["a_zero_point"][0], ops["w"], ops["w_scale"],
            q(0, np.int8), ops["bias"], activation=activation) + 0 * ops["fbias"]


def _scratch(m: int, k: int) -> dict[str, np.ndarray]:
    """The kernels' scratch ``wa`` and ``ws``, of the ABI's size, filled with garbage: the
    kernel must not read what it did not write there."""
    return {name: np.full(size, np.nan, np.float32)
            for name, size in zip(("wa", "ws"), qlinear_scratch_floats(m, k))}


def _call(kernels, spec: abi.KernelSpec, ops: dict, offset: int = 0) -> np.ndarray:  # type: ignore[no-untyped-def]
    m, k = ops["a"].shape
    n = ops["w"].shape[0]
    dtype = np.dtype(spec.dtypes[1])
    w = pack_qlinear_weight(ops["w"], wide=spec.op == "qlinear_wide",
                            mixed=spec.op == "qlinear_mixed")
    args = dict(ops, w=w, c=kernels.output((m, n), dtype),
                **_scratch(m, k), m=m, k=k, n=n)
    if "fbias" in spec.params:
        args["fbias"] = np.zeros(n, np.float32)
    return kernels.call(spec.name, offset=offset, **args)["c"]


@pytest.mark.parametrize("shape", SHAPES + [(1, 258, 33)], ids=lambda s: "x".join(map(str, s)))
def test_qlinear_rows_are_exact(kernels, shape) -> None:  # type: ignore[no-untyped-def]
    m, k, n = shape
    for index, spec in enumerate(QLINEAR):
        ops = _operands(spec, m, k, n, seed=m * 1000 + k * 10 + n)
        got = _call(kernels, spec, ops, offset=index % 3)
        np.testing.assert_array_equal(got, _reference(spec, ops), err_msg=spec.name)


SEVEN_BIT = (SEVEN[0], SEVEN[1] + 1)


@pytest.mark.parametrize("shape", SHAPES + [(37, 5, 9), (9, 64, 33)],
                         ids=lambda s: "x".join(map(str, s)))
def test_qlinear_rows_are_exact_on_seven_bit_weights(kernels, shape) -> None:  # type: ignore[no-untyped-def]
    """Weights in [-64, 63], and onnxruntime's reduce_range [-64, 64] with the columns that
    reach 64 in [-63, 64] (used negated): the relaxed module's relaxed-dot tile (4 rows,
    blocks of at most 2 * round_up(k, 4) rows: 37 rows at k = 5 take three)."""
    m, k, n = shape
    for index, spec in enumerate(QLINEAR):
        seed = m * 1000 + k * 10 + n
        ops = _operands(spec, m, k, n, seed=seed, weights=SEVEN_BIT)
        got = _call(kernels, spec, ops, offset=index % 3)
        np.testing.assert_array_equal(got, _reference(spec, ops), err_msg=spec.name)
        ops = _operands(spec, m, k, n, seed=seed, weights=(-63, 65))
        ops["w"][::2] = np.clip(ops["w"][::2], -64, 63)  # every other column plain
        got = _call(kernels, spec, ops, offset=index % 3)
        np.testing.assert_array_equal(got, _reference(spec, ops), err_msg=spec.name)


MIXED = [k for k in QLINEAR if k.op == "qlinear_mixed"]


@pytest.mark.parametrize("shape", [(1, 3, 7), (1, 258, 33), (2, 23, 24), (3, 44, 40),
                                   (5, 16, 17), (7, 130, 31)],
                         ids=lambda s: "x".join(map(str, s)))
def test_mixed_rows_are_exact_on_mixed_panels(kernels, shape) -> None:  # type: ignore[no-untyped-def]
    """A mixed packing whose panels alternate: 7-bit ones (columns plain in [-64, 63] and
    negated in [-63, 64], their ends reached) and full-range ones (-128 and 127 reached),
    on every provider (the relaxed module's relaxed dot, the others' i16 dot on the bytes);
    5 and 7 rows take blocks of MIXED_ROWS."""
    m, k, n = shape
    for index, spec in enumerate(MIXED):
        ops = _operands(spec, m, k, n, seed=m * 1000 + k * 10 + n + index)
        w = ops["w"]
        panel = np.arange(n) // 8
        plain, negated = (panel % 2 == 0) & (np.arange(n) % 2 == 0), (panel % 2 == 0) & (
            np.arange(n) % 2 == 1)
        w[plain] = np.clip(w[plain], -64, 63)
        w[negated] = np.clip(w[negated], -63, 64)
        w[plain, 0], w[negated, -1] = -64, 64
        w[plain & (np.arange(n) % 4 == 0), -1] = 63
        w[panel % 2 == 1, 0] = -128
        w[panel % 2 == 1, -1] = 127
        assert list(seven_bit_panels(w)) == [p % 2 == 0 for p in range(-(-n // 8))]
        got = _call(kernels, spec, ops, offset=index % 3)
        np.testing.assert_array_equal(got, _reference(spec, ops), err_msg=spec.name)


def test_only_columns_within_seven_bits_or_their_negation_are_marked() -> None:
    """The packed flag and masks, read back: [-64, 63] plain, [-63, 64] negated, a column
    with both -64 and 64 clears the flag."""
    w = np.zeros((9, 5), np.int8)
    w[1, 0], w[2, 1], w[3, 2] = -64, 64, 63
    packed = pack_qlinear_weight(w)
    flag, masks = packed[-4 * 16 - 4:-4 * 16].view("<i4"), packed[-4 * 16:].view("<i4")
    assert flag.tolist() == [1]
    assert masks.tolist() == [0, 0, -1] + [0] * 13
    w[2, 3] = -64
    assert pack_qlinear_weight(w)[-4 * 16 - 4:-4 * 16].view("<i4").tolist() == [0]


@pytest.mark.parametrize("shape", SHAPES + [(9, 64, 33)], ids=lambda s: "x".join(map(str, s)))
def test_relaxed_tile_is_exact(relaxed_tile, shape) -> None:  # type: ignore[no-untyped-def]
    m, k, n = shape
    for index, spec in enumerate(QLINEAR):
        ops = _operands(spec, m, k, n, seed=m * 1000 + k * 10 + n)
        got = _call(relaxed_tile, spec, ops, offset=index % 3)
        np.testing.assert_array_equal(got, _reference(spec, ops), err_msg=spec.name)


@pytest.mark.parametrize("k", [20000, 20003])
def test_qlinear_rows_are_exact_over_several_blocks(kernels, k) -> None:  # type: ignore[no-untyped-def]
    """A long k: the simd128 tile widens A a few rows at a time (``qblock_rows``), here 6,
    so 13 rows take two whole blocks and a 1-row one."""
    assert qblock_rows(k) == 6
    for spec in (QLINEAR[0], QLINEAR[-1]):
        for weights in ((-128, 128), SEVEN_BIT):
            ops = _operands(spec, 13, k, 17, seed=k, weights=weights)
            np.testing.assert_array_equal(_call(kernels, spec, ops), _reference(spec, ops),
                                          err_msg=spec.name)


@pytest.mark.parametrize("dtype, a_value, zero, w_value", [
    ("uint8", 255, 0, -128), ("uint8", 0, 255, -128), ("int8", 127, -128, -128),
    ("int8", -128, 127, 127), ("uint8", 255, 0, -64), ("uint8", 0, 255, 63),
    ("int8", -128, 127, 63), ("int8", 127, -128, -64), ("uint8", 255, 0, 64)])
def test_qlinear_is_exact_at_the_accumulation_bound(kernels, dtype, a_value, zero,  # type: ignore[no-untyped-def]
                                                    w_value) -> None:
    k = abi_quantized.QLINEAR_MAX_K
    spec = abi.find("qlinear", "qlinear", ("dequantize",), dtype)
    a = np.full((3, k), a_value, dtype)
    w = np.full((9, k), w_value, np.int8)
    got = kernels.call(spec.name, a=a, a_scale=q([1.0]), a_zero_point=q([zero], dtype),
                       w=pack_qlinear_weight(w), w_scale=np.ones(9, np.float32),
                       bias=np.zeros(9, np.int32), fbias=np.zeros(9, np.float32),
                       c=(3, 9), **_scratch(3, k), m=3, k=k, n=9)["c"]
    exact = k * (a_value - zero) * w_value
    assert abs(exact) < 2 ** 31
    assert abs(w_value) < 128 or 2 ** 31 <= (k + 1) * 255 * 128  # the bound is tight
    np.testing.assert_array_equal(got, np.full((3, 9), np.float32(exact)))


@pytest.mark.parametrize("signed", [0, 1])
def test_quantize_and_dequantize_per_channel(kernels, signed) -> None:  # type: ignore[no-untyped-def]
    dtype = np.int8 if signed else np.uint8
    x = (np.random.default_rng(3).standard_normal((2, 3, 5)) * 4).astype(np.float32)
    x[0, 0, :3] = [np.nan, 1e9, -1e9]
    x[1, 1, :2] = [0.25, 0.75]  # ties at scale 0.5 round to even
    scale = np.array([0.05, 0.5, 0.02], np.float32)
    zero = np.array([-3, 7, 0] if signed else [3, 128, 250], dtype)
    y = kernels.call("f32_quantize_linear", x=x, scale=scale, zero_point=zero,
                     y=kernels.output(x.shape, dtype), outer=2, channels=3, inner=5,
                     signed=signed)["y"]
    expected = F.quantize_linear(np.nan_to_num(x, nan=0.0), scale, zero, axis=1)
    expected[0, 0, 0] = 0  # NaN gives 0
    np.testing.assert_array_equal(y, expected)
    back = kernels.call(f"q{'s' if signed else 'u'}8_dequantize_linear", x=y, scale=scale,
                        zero_point=zero, y=x.shape, outer=2, channels=3, inner=5)["y"]
    np.testing.assert_array_equal(back, F.dequantize_linear(y, scale, zero, axis=1))


@pytest.mark.parametrize("values", [
    [-1.0, 0.0, 1.0], [0.0] * 9, [2.0, 5.0], [-2.0, -5.0], list(np.linspace(-3, 7, 37)),
    list(np.linspace(-9, -1, 8)), list(np.linspace(0.5, 4, 13)),
    # scale 1: every other x / scale a tie (half to even), in the 16-wide SIMD loop and after
    list(np.arange(511) * 0.5), list(np.arange(-510, 1) * 0.5),
    list(np.random.default_rng(3).standard_normal(1000) * 7), [0.0] * 31 + [3.0]])
def test_dynamic_quantize(kernels, values) -> None:  # type: ignore[no-untyped-def]
    x = np.array(values, np.float32)
    got = kernels.call("f32_dynamic_quantize_linear", x=x, y=kernels.output(x.shape, np.uint8),
                       scale=(1,), zero_point=kernels.output((1,), np.uint8), n=x.size)
    y, scale, zero = F.dynamic_quantize_linear(x)
    np.testing.assert_array_equal(got["y"], y)
    assert got["scale"][0] == scale and got["zero_point"][0] == zero


@pytest.mark.parametrize("outer, rows, cols", [(1, 1, 1), (1, 16, 16), (2, 33, 47),
                                               (1, 5, 70), (3, 17, 16), (1, 48, 200)])
def test_transposes_move_every_element(kernels, outer, rows, cols) -> None:  # type: ignore[no-untyped-def]
    """qu8_transpose in 16 x 16 squares and its edges, f32_transpose one by one."""
    rng = np.random.default_rng(rows * cols)
    for name, x in (("qu8_transpose", rng.integers(0, 256, (outer, rows, cols)).astype(np.uint8)),
                    ("f32_transpose", rng.standard_normal((outer, rows, cols), np.float32))):
        got = kernels.call(name, x=x, y=kernels.output((outer, cols, rows), x.dtype),
                           outer=outer, rows=rows, cols=cols)["y"]
        np.testing.assert_array_equal(got, x.transpose(0, 2, 1), err_msg=name)


@pytest.mark.parametrize("c, h, w, k, stride, pad, dilation", [
    (3, 7, 9, 3, 2, 3, 1), (17, 5, 6, 3, 1, 1, 1), (33, 4, 4, 2, 1, 2, 2), (16, 3, 3, 1, 2, 0, 1)])
def test_im2col_rows_hold_the_windows(kernels, c, h, w, k, stride, pad, dilation) -> None:  # type: ignore[no-untyped-def]
    """qu8_im2col against windows cut from an explicitly padded numpy array: runs of c bytes
    (16 at a time and the tail), taps in the padding at the zero point."""
    x = np.random.default_rng(c).integers(0, 256, (2, h, w, c)).astype(np.uint8)
    oh = (h + 2 * pad - dilation * (k - 1) - 1) // stride + 1
    ow = (w + 2 * pad - dilation * (k - 1) - 1) // stride + 1
    padded = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)), constant_values=201)
    expected = np.stack([padded[:, i * dilation:i * dilation + stride * (oh - 1) + 1:stride,
                                j * dilation:j * dilation + stride * (ow - 1) + 1:stride]
                         for i in range(k) for j in range(k)], 3)  # n oh ow taps c
    got = kernels.call("qu8_im2col", x=x, zero_point=q([201], np.uint8),
                       a=kernels.output((2 * oh * ow, k * k * c), np.uint8), n=2, c=c, h=h,
                       w=w, oh=oh, ow=ow, kh=k, kw=k, sh=stride, sw=stride, pt=pad, pl=pad,
                       dh=dilation, dw=dilation)["a"]
    np.testing.assert_array_equal(got, expected.reshape(2 * oh * ow, k * k * c))
