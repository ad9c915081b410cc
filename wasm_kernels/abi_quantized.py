"""The quantized rows of the kernel ABI (issue #14): TFLite's integer Add and Concat,
quantize / dequantize, and the int8 x int8 -> int32 linear with its epilogues. ``abi``
lists them in ``KERNELS``."""

from __future__ import annotations

from .kernel_spec import KernelSpec

# Quantized int8 tensors (issue #14): TFLite's integer Add and Concat. A rescale by a real
# factor is (mult, shift), computed in integers as wasm_kernels.fixed_point describes.
QRESCALE: tuple[KernelSpec, ...] = (
    KernelSpec("qs8_qadd", "qrescale", "qadd",
               ("a", "b", "y", "n", "a_zp", "a_mult", "a_shift", "b_zp", "b_mult", "b_shift",
                "y_zp", "y_mult", "y_shift", "lo", "hi"),
               "y[i] = clamp(y_zp + rescale(rescale((a[i] - a_zp) << 20, a_mult, a_shift) + "
               "rescale((b[i] - b_zp) << 20, b_mult, b_shift), y_mult, y_shift), lo, hi) for "
               "i < n (TFLite's 8-bit Add), int8 a, b, y; rescale(v, mult, shift) is "
               "fixed_point.multiply_by_quantized_multiplier; y may alias a or b",
               dtypes=("int8", "int8")),
    KernelSpec("qs8_rescale_rows", "qrescale", "rescale_rows",
               ("x", "y", "rows", "n", "y_stride", "x_zp", "mult", "shift", "y_zp", "lo", "hi"),
               "y[r * y_stride + j] = clamp(y_zp + rescale(x[r * n + j] - x_zp, mult, shift), "
               "lo, hi) for r < rows, j < n: an int8 x(rows, n) requantized into a region of "
               "the int8 y (a concat input with its own scale and zero point)",
               dtypes=("int8", "int8")),
    KernelSpec("qs8_copy_rows", "qrescale", "copy_rows", ("x", "y", "rows", "n", "y_stride"),
               "y[r * y_stride + j] = x[r * n + j] for r < rows, j < n: int8 bytes moved "
               "into a region of y (a concat input already in the output's scale and zero "
               "point)", dtypes=("int8", "int8")),
)

# Quantized inference (issue #14). A quantized tensor q stands for (q - zero_point) * scale.
QUANTIZE_PARAMS = ("x", "scale", "zero_point", "y", "outer", "channels", "inner")
QUANTIZE: tuple[KernelSpec, ...] = (
    KernelSpec("f32_quantize_linear", "quantize", "quantize_linear", QUANTIZE_PARAMS + ("signed",),
               "y(outer, channels, inner) = saturate(round_half_even(x / scale[c]) + "
               "zero_point[c]) for f32 x: scale is (channels,) f32, zero_point (channels,) "
               "bytes; y and the zero points are int8 when signed is 1, uint8 when it is 0 "
               "(saturate clamps to their range; NaN gives 0)",
               dtypes=("float32", "uint8")),
    *(KernelSpec(f"{short}_dequantize_linear", "quantize", "dequantize_linear", QUANTIZE_PARAMS,
                 f"y(outer, channels, inner) = float32(x - zero_point[c]) * scale[c] for "
                 f"{dtype} x and zero_point (channels,), scale (channels,) f32",
                 dtypes=(dtype, "float32"))
      for short, dtype in (("qu8", "uint8"), ("qs8", "int8"))),
    KernelSpec("f32_dynamic_quantize_linear", "quantize", "dynamic_quantize_linear",
               ("x", "y", "scale", "zero_point", "n"),
               "ONNX DynamicQuantizeLinear of the n f32 x: lo = min(0, min x), hi = max(0, "
               "max x), scale = (hi - lo) / 255 (1 when hi == lo), zero_point = "
               "saturate(round_half_even(-lo / scale)), y[i] = saturate(round_half_even("
               "x[i] / scale) + zero_point), all uint8; writes the one f32 scale and one "
               "uint8 zero_point", dtypes=("float32", "uint8")),
)

QLINEAR_MAX_K = 65793
"""The longest k the integer products accumulate exactly: every product is at most 255 * 128
in magnitude (activations minus their zero point against int8 weights), and k of them must
stay within int32."""


def _qlinear(dtype: str, requantize: bool, activation: str, op: str) -> KernelSpec:
    short = {"uint8": "qu8", "int8": "qs8"}[dtype]
    mode = "requantize" if requantize else "dequantize"
    epilogue = (mode,) + ((activation,) if activation else ())
    out = ("c_scale", "c_zero_point") if requantize else ("fbias",)
    finish = ("C = saturate(round_half_even(float32(acc) * float32(a_scale * w_scale[j] / "
              f"c_scale)) + c_zero_point) as {dtype}" if requantize else
              "C = float32(acc) * (a_scale * w_scale[j]) + fbias[j] as f32")
    clamp = {"relu": ", clamped to >= c_zero_point (relu)" if requantize else ", then relu",
             "relu6": (", clamped to [c_zero_point, c_zero_point + round(6 / c_scale)] "
                       "(relu6)") if requantize else ", then relu6", "": ""}[activation]
    return KernelSpec(
        "_".join((f"{short}_{op}",) + epilogue), "qlinear", op,
        ("a", "a_scale", "a_zero_point", "w", "w_scale", "bias") + out + ("c", "wa", "ws", "m",
                                                                           "k", "n"),
        f"acc(m, n) = (A - a_zero_point) @ W.T + bias in int32, A (m, k) {dtype} with one "
        "f32 a_scale and one a_zero_point byte (pointers: they may be computed at run time), "
        "W (n, k) int8 with zero point 0 packed by wasm_kernels.pack.pack_qlinear_weight, "
        f"w_scale (n,) f32, bias (n,) int32; {finish}{clamp}; exact for k <= QLINEAR_MAX_K; "
        "wa and ws are scratch of pack_quantized.qlinear_scratch_floats(m, k) floats (A's "
        "rows widened to int16, a block at a time; one widened weight panel per "
        "pack_quantized.QSPLIT_ROWS rows, so parts of the rows on other threads use their own)"
        + {"qconv": CONV_TILE, "qlinear_wide": WIDE, "qlinear_mixed": MIXED}.get(op, ""),
        epilogue=epilogue, dtypes=(dtype, dtype if requantize else "float32"))


CONV_TILE = ("; the same product for a conv's im2col rows, built with the simd128 tile in "
             "the relaxed module too (templates/qlinear.py TILE_ISA)")

WIDE = ("; W packed wide (pack_qlinear_weight(w, wide=True): its weights as int16, twice the "
        "bytes), which the k loop loads without widening it: a product of a few rows (an "
        "unrolled recurrent step's) over a weight that fits in L2 (templates/qlinear.py)")

MIXED = ("; W packed mixed (pack_qlinear_weight(w, mixed=True): wide, but its panels of "
         "7-bit columns as bytes, which the relaxed module multiplies with the relaxed dot): "
         "the qlinear_wide rows' product when some panels are 7-bit")

QLINEARS: tuple[KernelSpec, ...] = tuple(
    _qlinear(dtype, requantize, act, op)
    for op in ("qlinear", "qconv", "qlinear_wide", "qlinear_mixed")
    for dtype in ("uint8", "int8") for requantize in (False, True)
    for act in ("", "relu", "relu6"))

QCONV_WINDOW = ("n", "c", "h", "w", "oh", "ow", "kh", "kw", "sh", "sw", "pt", "pl", "dh", "dw")
QCONV: tuple[KernelSpec, ...] = (
    KernelSpec("qu8_im2col", "qconv", "im2col", ("x", "zero_point", "a") + QCONV_WINDOW,
               "A(n * oh * ow, kh * kw * c) = the windows of the channels-last byte tensor "
               "x(n, h, w, c): A[(b * oh + y) * ow + x', (i * kw + j) * c + ci] = x[b, y * sh "
               "- pt + i * dh, x' * sw - pl + j * dw, ci], the byte at zero_point where that "
               "falls outside x (padding stands for the real 0); the rows a quantized conv "
               "multiplies by its (o, kh * kw * c) weight", dtypes=("uint8", "uint8")),
    *(KernelSpec(f"{short}_transpose", "qconv", "transpose",
                 ("x", "y", "outer", "rows", "cols"),
                 f"y(outer, cols, rows) = x(outer, rows, cols) transposed, {size}-byte "
                 "elements moved bit for bit (int8 or uint8 alike for qu8); y must not alias x",
                 dtypes=(dtype, dtype))
      for short, size, dtype in (("qu8", 1, "uint8"), ("f32", 4, "float32"))),
)
"""The layout kernels of the integer conv (``modelc/ops/qconv2d.py``): the NCHW input
transposed to channels-last, a conv is the qlinear product of its im2col rows and the
weight, and the (pixels, channels) result is transposed back to NCHW."""
