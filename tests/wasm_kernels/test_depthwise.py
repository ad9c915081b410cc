"""Every depthwise row against nn.functional.conv2d with groups = c (and torch for the
MobileNetV2 shapes): unrolled 3x3 and 5x5 kernels at stride 1, 2, (2, 1) and (1, 2), 7x7 at
stride 1, the runtime-tap paths (other kernels, dilation, stride 3);
tiles of 2 registers (narrow ones on rows 5 to 7 wide), one register and lane by lane over
planes 1..17 and 56 wide; padding 0..2; channel multipliers; batch > 1; traps on a geometry
the kernel was not sized for."""

import numpy as np
import pytest
import wasmtime

from nn import functional as F
from runtime import ResourceLimits, Trap
from runtime.compartment import translate
from wasi_intrinsics.kernel_limits import KernelFault
from wasm_kernels import abi

DEPTHWISE = [k for k in abi.KERNELS if k.family == "depthwise" and k.dtypes[0] == "float32"]
PLAIN = abi.find("depthwise", "depthwise_conv2d")

def _output_size(size: int, k: int, s: int, p: int, d: int) -> int:
    return (size + 2 * p - d * (k - 1) - 1) // s + 1

def _run(kernels, spec: abi.KernelSpec, shape: tuple[int, int, int, int], mult: int,  # type: ignore[no-untyped-def]
         kernel: tuple[int, int], stride: tuple[int, int], pad: tuple[int, int],
         dilation: tuple[int, int] = (1, 1), seed: int = 0):
    n, c, h, w = shape
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape, np.float32)
    weight = rng.standard_normal((c * mult, 1) + kernel, np.float32)
    bias = rng.standard_normal(c * mult).astype(np.float32)
    expected = F.conv2d(x, weight, bias, stride, pad, dilation, c).astype(np.float64)
    for op in spec.activations:
        expected = getattr(F, op)(expected)
    oh, ow = expected.shape[2:]
    scratch = abi.depthwise_scratch_floats(h, w, oh, ow, *kernel, *stride, *pad, *dilation)
    out = kernels.call(spec.name, offset=4 * (seed % 3), x=x, weight=weight, bias=bias,
                       scratch=(scratch,), y=expected.shape, n=n, c=c, o=c * mult, h=h, w=w,
                       oh=oh, ow=ow, kh=kernel[0], kw=kernel[1], sh=stride[0], sw=stride[1],
                       ph=pad[0], pw=pad[1], dh=dilation[0], dw=dilation[1])["y"]
    return out, expected

@pytest.mark.parametrize("k, sh, sw", [(3, 1, 1), (3, 2, 2), (5, 1, 1), (5, 2, 2), (7, 1, 1),
                                       (3, 2, 1), (5, 2, 1), (3, 1, 2), (5, 1, 2)])
@pytest.mark.parametrize("size", [*range(1, 18), 56])
def test_unrolled_kernels_over_plane_sizes(kernels, size: int, k: int, sh: int, sw: int) -> None:  # type: ignore[no-untyped-def]
    """Every tile shape: 4-register tiles, one-register tiles moved left to the row's end,
    a row narrower than a register; padding cycling 0..2 (planes smaller than the kernel
    need enough of it)."""
    pad = max(size % 3, (k - size + 1) // 2, 0)
    out, expected = _run(kernels, PLAIN, (1, 3, size + 1, size), 1, (k, k), (sh, sw),
                         (pad, pad), seed=size)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4, err_msg=f"{size}")

STRIDE2 = [(h, w, pad, k) for k in (3, 5) for pad in (0, 1, 2)
           for h, w in ((1, 1), (2, 2), (3, 3), (4, 5), (5, 4), (7, 8), (8, 9), (9, 16),
                        (10, 17), (11, 24), (12, 31), (13, 33))
           if min(h, w) + 2 * pad >= k]

@pytest.mark.parametrize("h, w, pad, k", STRIDE2)
def test_stride2_even_and_odd_planes(kernels, h: int, w: int, pad: int, k: int) -> None:  # type: ignore[no-untyped-def]
    """The unrolled stride-2 kernels on odd and even heights and widths (around a register
    pair, 8 columns, and the tiles' widths), tiny planes 1x1..3x3 and padding 0..2 (odd
    padding moves the even input columns to the odd taps)."""
    out, expected = _run(kernels, PLAIN, (1, 3, h, w), 1, (k, k), (2, 2), (pad, pad),
                         seed=h * 7 + w + pad)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)

# (n, c, h, w, (ph, pw), multiplier, k, s): k x k with padding <= k // 2 reads the interior
# rows in place, the border rows from the scratch plane; stride 2 (3x3: no padding right of
# the plane; 5x5: up to 2 columns, zeroed in the register), stride 1 (rows of 8 or more
# outputs: the 1 or 2 padding columns zeroed in the register)
IN_PLACE = [(1, 2, h, w, pad, 1, 3, 2) for h in (2, 3, 4, 5, 6, 7, 9, 12) for w, pad in
            ((8, (1, 1)), (10, (0, 0)), (17, (0, 1)), (16, (1, 0))) if h + 2 * pad[0] >= 3] + [
    (3, 2, 13, 28, (1, 1), 1, 3, 2), (2, 3, 11, 9, (0, 0), 2, 3, 2),
    (1, 2, 14, 14, (1, 1), 3, 3, 2), (1, 2, 10, 15, (1, 1), 1, 3, 2),
    (1, 2, 10, 7, (1, 1), 1, 3, 2), (2, 4, 30, 56, (1, 1), 1, 3, 2)] + [
    (1, 2, h, w, pad, 1, 5, 2) for h in (1, 3, 4, 5, 6, 7, 8, 9, 12) for w, pad in
    ((13, (2, 2)), (15, (2, 2)), (16, (2, 2)), (16, (1, 2)), (17, (2, 2)), (18, (2, 1)),
     (19, (0, 0)), (20, (1, 1)), (22, (2, 2))) if h + 2 * pad[0] >= 5] + [
    (3, 2, 14, 28, (2, 2), 1, 5, 2), (2, 3, 13, 27, (2, 2), 2, 5, 2),
    (2, 4, 29, 56, (2, 2), 1, 5, 2)] + [
    (1, 2, h, w, pad, 1, 3, 1) for h in (1, 2, 3, 4, 5, 6, 9, 14) for w, pad in
    ((8, (1, 1)), (9, (1, 1)), (12, (1, 1)), (13, (1, 1)), (10, (0, 0)), (17, (0, 1)),
     (16, (1, 0)), (7, (1, 1))) if h + 2 * pad[0] >= 3] + [
    (1, 2, h, w, pad, 1, 5, 1) for h in (1, 3, 5, 6, 7, 9, 14) for w, pad in
    ((8, (2, 2)), (9, (2, 2)), (14, (2, 2)), (17, (2, 2)), (16, (1, 2)), (18, (2, 1)),
     (20, (0, 0)), (7, (2, 2))) if h + 2 * pad[0] >= 5] + [
    (3, 2, 14, 28, (1, 1), 1, 3, 1), (2, 3, 11, 14, (1, 1), 2, 3, 1),
    (2, 4, 28, 56, (1, 1), 1, 3, 1), (2, 3, 14, 14, (2, 2), 2, 5, 1),
    (2, 4, 28, 56, (2, 2), 1, 5, 1)] + [
    (1, 2, h, w, pad, 1, 3, (2, 1)) for h in (2, 3, 4, 5, 6, 7, 9, 12, 13) for w, pad in
    ((8, (1, 1)), (9, (1, 1)), (12, (1, 1)), (13, (1, 1)), (10, (0, 0)), (17, (0, 1)),
     (16, (1, 0)), (7, (1, 1))) if h + 2 * pad[0] >= 3] + [
    (2, 3, 12, 80, (1, 1), 1, 3, (2, 1)), (2, 3, 13, 21, (1, 1), 2, 3, (2, 1)),
    (3, 2, 6, 80, (1, 1), 1, 3, (2, 1))]


def _strides(s: int | tuple[int, int]) -> tuple[int, int]:
    return (s, s) if isinstance(s, int) else s


@pytest.mark.parametrize("n, c, h, w, pad, mult, k, s", IN_PLACE)
def test_rows_read_in_place(kernels, n: int, c: int, h: int, w: int,  # type: ignore[no-untyped-def]
                            pad: tuple[int, int], mult: int, k: int,
                            s: int | tuple[int, int]) -> None:
    """The in-place rows beside the border rows: heights where every row is a border row
    (2..4) and where single and paired interior rows remain, the left lane zeroed (pw 1) or
    not, unequal padding, batch and channels (the read-ahead crosses into the next plane),
    multipliers, and widths just outside the path (stride 2, 3x3: 15, padding right of the
    plane, and 7, rows narrower than a register; 5x5: 13, rows narrower than a tile; stride
    1: 7, rows narrower than a tile, and 5x5 at 9, whose first tile computes column ow - 2
    from the next row, the last one, stored after it, from the padding);
    rows whose last columns (1 or 2) lie right of the plane, after one and two tiles and a
    one-register tile (stride 1, 12 and 13 wide); at stride 1 the last one or two rows in
    place too but in the input's last plane (batch and channels), odd and even heights;
    3x3 at stride (2, 1) as at stride 1 across, as at stride 2 down."""
    out, expected = _run(kernels, PLAIN, (n, c, h, w), mult, (k, k), _strides(s), pad,
                         seed=h * 31 + w)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("k, w, s", [(3, 16, 2), (3, 10, 2), (3, 12, 2), (3, 14, 2),
                                     (5, 16, 2), (3, 8, 1), (3, 13, 1), (5, 14, 1),
                                     (3, 8, (2, 1)), (3, 13, (2, 1))])
@pytest.mark.parametrize("end", ["start", "end"])
def test_in_place_input_at_memory_edge(kernels, end: str, k: int, w: int,  # type: ignore[no-untyped-def]
                                       s: int | tuple[int, int]) -> None:
    """X at address 0 or ending at the last byte of memory: the in-place tiles' loads left
    of a row, past its end (narrow tiles, 5 to 7 outputs a row, reach 9 floats past it) and
    ahead into the next plane stay inside the input (a trap would fail the test)."""
    n, c, h = 2, 3, 12
    rng = np.random.default_rng(9)
    x = rng.standard_normal((n, c, h, w), np.float32)
    weight = rng.standard_normal((c, 1, k, k), np.float32)
    bias = rng.standard_normal(c).astype(np.float32)
    expected = F.conv2d(x, weight, bias, _strides(s), k // 2, 1, c)
    window = (*expected.shape[2:], k, k, *_strides(s), k // 2, k // 2, 1, 1)
    scratch = 4 * abi.depthwise_scratch_floats(h, w, *window)
    memory = kernels.view()
    x_at = 0 if end == "start" else memory.size - x.nbytes
    base = x.nbytes + 64 if end == "start" else 64
    w_at, b_at = base, base + weight.nbytes + 64
    s_at = b_at + bias.nbytes + 64
    y_at = s_at + scratch + 64
    for at, array in ((x_at, x), (w_at, weight), (b_at, bias)):
        memory[at:at + array.nbytes] = array.view(np.uint8).ravel()
    kernels.funcs(PLAIN.name)(kernels.store, x_at, w_at, b_at, s_at, y_at, n, c, c, h, w,
                              *window)
    out = memory[y_at:y_at + expected.nbytes].view(np.float32).reshape(expected.shape)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


# (input shape, multiplier, kernel, stride, padding, dilation)
CASES = {
    "batch2": ((2, 5, 9, 13), 1, (3, 3), (1, 1), (1, 1), (1, 1)),
    "batch2-stride2": ((2, 4, 11, 23), 1, (3, 3), (2, 2), (1, 1), (1, 1)),
    "multiplier2": ((1, 3, 8, 10), 2, (3, 3), (1, 1), (1, 1), (1, 1)),
    "multiplier3-stride2": ((2, 2, 9, 19), 3, (5, 5), (2, 2), (2, 2), (1, 1)),
    "dilated": ((1, 4, 12, 21), 1, (3, 3), (1, 1), (2, 2), (2, 2)),
    "dilated-rows": ((1, 2, 12, 9), 1, (3, 3), (1, 1), (2, 1), (2, 1)),
    "7x7": ((1, 3, 14, 17), 1, (7, 7), (1, 1), (3, 3), (1, 1)),
    "7x7-stride2": ((1, 3, 15, 18), 1, (7, 7), (2, 2), (3, 3), (1, 1)),
    "stride3": ((1, 3, 13, 22), 1, (3, 3), (3, 3), (1, 1), (1, 1)),
    "stride-2x1": ((1, 3, 10, 15), 1, (3, 3), (2, 1), (1, 1), (1, 1)),
    "stride-2x1-batch2-multiplier2": ((2, 3, 13, 22), 2, (3, 3), (2, 1), (1, 1), (1, 1)),
    "stride-2x1-no-padding": ((1, 2, 12, 80), 1, (3, 3), (2, 1), (0, 0), (1, 1)),
    "5x5-stride-2x1-batch2-multiplier2": ((2, 3, 13, 22), 2, (5, 5), (2, 1), (2, 2), (1, 1)),
    "stride-1x2-batch2-multiplier2": ((2, 3, 11, 37), 2, (3, 3), (1, 2), (1, 1), (1, 1)),
    "5x5-stride-1x2-unequal-padding": ((1, 3, 7, 41), 1, (5, 5), (1, 2), (2, 1), (1, 1)),
    "stride-1x2": ((1, 3, 10, 15), 1, (3, 3), (1, 2), (1, 1), (1, 1)),
    "3x5": ((1, 2, 9, 11), 1, (3, 5), (1, 1), (1, 2), (1, 1)),
    "1x1": ((1, 3, 5, 7), 2, (1, 1), (1, 1), (0, 0), (1, 1)),
    "no-padding": ((1, 3, 9, 9), 1, (3, 3), (1, 1), (0, 0), (1, 1)),
    "5x5-stride2": ((1, 4, 17, 26), 1, (5, 5), (2, 2), (2, 2), (1, 1)),
    "odd-narrow": ((2, 3, 5, 3), 1, (3, 3), (2, 2), (1, 1), (1, 1)),
    "padding-wider-than-input": ((1, 2, 2, 2), 1, (3, 3), (1, 1), (2, 2), (1, 1)),
}

@pytest.mark.parametrize("case", list(CASES))
def test_depthwise_shapes(kernels, case: str) -> None:  # type: ignore[no-untyped-def]
    out, expected = _run(kernels, PLAIN, *CASES[case])
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4, err_msg=case)

@pytest.mark.parametrize("spec", DEPTHWISE, ids=lambda s: s.name)
def test_depthwise_epilogues(kernels, spec: abi.KernelSpec) -> None:  # type: ignore[no-untyped-def]
    for seed, case in enumerate(("batch2", "batch2-stride2", "multiplier3-stride2", "7x7",
                                 "stride3", "odd-narrow", "stride-2x1-batch2-multiplier2",
                                 "5x5-stride-2x1-batch2-multiplier2",
                                 "stride-1x2-batch2-multiplier2")):
        out, expected = _run(kernels, spec, *CASES[case], seed=seed)
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4,
                                   err_msg=f"{spec.name} {case}")

@pytest.mark.parametrize("size, stride", [(56, 1), (56, 2), (14, 1), (7, 1)])
def test_mobilenet_layers_against_torch(kernels, size: int, stride: int) -> None:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    c = 24
    rng = np.random.default_rng(size)
    x = rng.standard_normal((1, c, size, size), np.float32)
    weight = rng.standard_normal((c, 1, 3, 3), np.float32)
    bias = rng.standard_normal(c).astype(np.float32)
    spec = abi.find("depthwise", "depthwise_conv2d", ("relu6",))
    expected = torch.nn.functional.relu6(torch.nn.functional.conv2d(
        torch.from_numpy(x), torch.from_numpy(weight), torch.from_numpy(bias), stride, 1,
        1, c)).numpy()
    oh = ow = expected.shape[-1]
    scratch = abi.depthwise_scratch_floats(size, size, oh, ow, 3, 3, stride, stride, 1, 1, 1, 1)
    out = kernels.call(spec.name, x=x, weight=weight, bias=bias, scratch=(scratch,),
                       y=expected.shape, n=1, c=c, o=c, h=size, w=size, oh=oh, ow=ow, kh=3,
                       kw=3, sh=stride, sw=stride, ph=1, pw=1, dh=1, dw=1)["y"]
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)

BAD = {
    "zero-stride": dict(sh=0),
    "zero-kernel": dict(kw=0),
    "zero-dilation": dict(dh=0),
    "zero-channels": dict(c=0),
    "o-not-a-multiple": dict(o=5),
    "wrong-oh": dict(oh=5),
    "wrong-ow": dict(ow=7),
    "kernel-larger-than-padded-input": dict(kh=9, oh=1),
}

@pytest.mark.parametrize("bad", list(BAD))
def test_depthwise_traps_on_bad_geometry(kernels, bad: str) -> None:  # type: ignore[no-untyped-def]
    args = dict(n=1, c=2, o=2, h=6, w=6, oh=6, ow=6, kh=3, kw=3, sh=1, sw=1, ph=1, pw=1, dh=1,
                dw=1)
    args.update(BAD[bad])
    with pytest.raises((wasmtime.Trap, KernelFault)) as info:
        kernels.call(PLAIN.name, x=np.ones((2, 6, 6), np.float32),
                     weight=np.ones((6, 9), np.float32), bias=np.ones(6, np.float32),
                     scratch=(200,), y=(6, 6, 6), **args)
    trap = translate(info.value, ResourceLimits())  # NOTE: what the runtime raises for both
    assert isinstance(trap, Trap) and trap.code == "unreachable"

QUANTIZED = [k for k in abi.KERNELS if k.family == "depthwise" and k.dtypes[0] != "float32"]
RANGE = {"uint8": (0, 255), "int8": (-128, 127)}

@pytest.mark.parametrize("spec", QUANTIZED, ids=lambda s: s.name)
@pytest.mark.parametrize("case, y_scale", [
    ("batch2-stride2", 0.02), ("multiplier2", 0.02), ("7x7", 0.02), ("odd-narrow", 0.02),
    ("no-padding", 0.02), ("dilated", 0.02), ("batch2", 0.002), ("5x5-stride2", 0.003)])
def test_quantized_rows_dequantize_convolve_quantize(kernels, spec: abi.KernelSpec,  # type: ignore[no-untyped-def]
                                                     case: str, y_scale: float) -> None:
    """float32(x - x_zero) * x_scale through the f32 depthwise conv, then saturate(rint(v /
    y_scale) + y_zero), against numpy in float64: within one step (float rounding may move
    a value across a rounding boundary), nearly always equal; rows narrower than a register
    and wider than 4 of them (the plane copy's paths) and every tile; a small y_scale
    saturates many outputs at both ends of the range."""

    shape, mult, kernel, stride, pad, dilation = CASES[case]
    dtype = spec.dtypes[0]
    low, high = RANGE[dtype]
    n, c, h, w = shape
    rng = np.random.default_rng(len(case))
    x = rng.integers(low, high, shape, endpoint=True).astype(dtype)
    weight = rng.uniform(-0.1, 0.1, (c * mult, 1) + kernel).astype(np.float32)
    bias = rng.uniform(-1, 1, c * mult).astype(np.float32)
    x_scale, x_zero = np.float32(0.03), np.array([rng.integers(low, high)], dtype)
    y_zero = np.array([rng.integers(low // 2, high // 2)], dtype)
    y_scale = np.float32(y_scale)
    real = (x.astype(np.int32) - x_zero.astype(np.int32)).astype(np.float32) * x_scale
    conv = F.conv2d(real.astype(np.float64), weight.astype(np.float64),
                    bias.astype(np.float64), stride, pad, dilation, c)
    for op in spec.activations:
        conv = getattr(F, op)(conv)
    expected = np.clip(np.rint(conv / y_scale) + y_zero.astype(np.float64), low, high)
    oh, ow = expected.shape[2:]
    scratch = abi.depthwise_scratch_floats(h, w, oh, ow, *kernel, *stride, *pad, *dilation)
    out = kernels.call(spec.name, x=x, x_scale=np.array([x_scale]), x_zero=x_zero,
                       weight=weight, bias=bias, scratch=(scratch,),
                       y=kernels.output(expected.shape, dtype), y_scale=np.array([y_scale]),
                       y_zero=y_zero, n=n, c=c, o=c * mult, h=h, w=w, oh=oh, ow=ow,
                       kh=kernel[0], kw=kernel[1], sh=stride[0], sw=stride[1], ph=pad[0],
                       pw=pad[1], dh=dilation[0], dw=dilation[1])["y"]
    steps = np.abs(out.astype(np.int32) - expected.astype(np.int32))
    assert steps.max() <= 1 and steps.mean() < 0.01, (steps.max(), steps.mean())
    assert len(np.unique(out)) > 5  # the scales spread the outputs over the range
    if y_scale < 0.01 and not spec.activations:
        assert (out == low).any() and (out == high).any()
