"""The kernel ABI: data only. Every kernel provider exports exactly this table.

A model imports kernels by these names from the versioned module ``MODULE``. Pointers are
byte offsets into the shared linear memory; tensors are dense, row-major float32.
Changing a row's meaning or signature means a new ``VERSION`` (and so a new ``MODULE``).

Each row is the single source of its kernel's semantics: the template that generates it
(``family``), what it computes (``op``, and for elementwise rows a ``formula`` that the
wasm templates and the host provider both evaluate through ``wasm_kernels.formula``), the
steps fused after it (``epilogue``) and its element types (``dtypes``). Nobody parses
these back out of kernel names; ``find`` looks a kernel up by them.
"""

from __future__ import annotations

from .abi_attention import ATTENTION
from .abi_attention import ATTENTION_PARTS as ATTENTION_PARTS
from .abi_attention import ATTENTION_ROWS as ATTENTION_ROWS
from .abi_attention import attention_scratch_floats as attention_scratch_floats
from .abi_integer import CASTS, COMPARES, INTEGERS
from .abi_integer import COMPARE_OPS as COMPARE_OPS
from .abi_integer import INTEGER_OPS as INTEGER_OPS
from .abi_quantized import QCONV, QLINEARS, QRESCALE, QUANTIZE
from .abi_recurrent import LSTM_STEPS, RNN_ACTIVATIONS, cell
from .abi_recurrent import RECURRENT_CELLS as RECURRENT_CELLS
from .abi_winograd import winograd_rows
from .kernel_spec import BROADCAST_RANK, UNARY_OPS, KernelSpec, broadcast_params, short

VERSION = 9
MODULE = f"wasmnn_kernels_v{VERSION}"


FUSED_ACTIVATIONS: tuple[str, ...] = ("relu", "relu6", "gelu", "silu", "sigmoid", "hardswish")
"""The unary ops that the gemm, linear and conv families also apply in their epilogue."""


def _epilogue(bias: bool, residual: bool, activation: str) -> tuple[str, ...]:
    return (("bias",) if bias else ()) + (("add",) if residual else ()) + (
        (activation,) if activation else ())


def _math(core: str, epilogue: tuple[str, ...]) -> str:
    """The formula of a gemm-like kernel: ``core`` then each step of ``epilogue``."""
    steps = {"bias": " + bias[None, :]", "add": " + R"}
    math = core + "".join(steps.get(step, "") for step in epilogue)
    activation = [step for step in epilogue if step not in steps]
    return f"{activation[0]}({math})" if activation else math


def _gemm(bias: bool, residual: bool, activation: str) -> KernelSpec:
    epilogue = _epilogue(bias, residual, activation)
    params = (("a", "b") + (("bias",) if bias else ()) + (("r",) if residual else ())
              + ("c", "ws", "wa", "m", "k", "n"))
    return KernelSpec("_".join(("f32_gemm",) + epilogue), "gemm", "gemm", params,
                      f"C(m, n) = {_math('A @ B', epilogue)}; A is (m, k), B is (k, n)"
                      + (", R is (m, n)" if residual else "")
                      + ", all row-major f32; C may alias R; ws and wa are scratch of n * k "
                      "and m * k floats (B's and A's panels are packed there), overwritten",
                      epilogue=epilogue)


def _linear(bias: bool, residual: bool, activation: str) -> KernelSpec:
    epilogue = _epilogue(bias, residual, activation)
    params = (("a", "w") + (("bias",) if bias else ()) + (("r",) if residual else ())
              + ("c", "wa", "m", "k", "n"))
    return KernelSpec("_".join(("f32_linear",) + epilogue), "linear", "linear", params,
                      f"C(m, n) = {_math('A @ W.T', epilogue)}; A is (m, k), W is (n, k) "
                      "(nn.Linear's weight), packed by wasm_kernels.pack.pack_linear_weight"
                      + (", R is (m, n)" if residual else "")
                      + ", all row-major f32; C may alias R; wa is scratch of m * k floats "
                      "(A's rows are packed there, each group where it lies in A), "
                      "overwritten", epilogue=epilogue)


BMM = KernelSpec(
    "f32_bmm", "gemm", "bmm", ("a", "b", "c", "batch", "m", "k", "n", "a_stride", "b_stride"),
    "C[i](m, n) = A[i](m, k) @ B[i](k, n) for i < batch; A[i] starts a_stride floats after "
    "A[i-1] and B[i] b_stride floats after B[i-1] (0 broadcasts one matrix); C is dense")

def _unary(op: str, math: str) -> KernelSpec:
    return KernelSpec(f"f32_{op}", "unary", op, ("x", "y", "n"),
                      f"y[i] = {math} for i < n; y may alias x", formula=math)


BINARY_OPS: dict[str, str] = {"add": "a + b", "sub": "a - b", "mul": "a * b", "div": "a / b",
                              "max": "max(a, b)", "min": "min(a, b)"}
"""Elementwise binary ops by name: ``y`` as a formula in ``a`` and ``b``."""
def _binary(op: str, math: str) -> KernelSpec:
    return KernelSpec(f"f32_{op}", "binary", op, broadcast_params(),
                      f"y[i0, i1, i2, i3] = {math} over the dense (d0, d1, d2, d3) output, "
                      "reading a[sum(ik * ask)] and b[sum(ik * bsk)]: strides in floats, 0 "
                      "broadcasts a dimension (numpy broadcasting after padding shapes to "
                      "rank 4); y may alias a dense a or b", formula=math)


REDUCE_OPS: dict[str, str] = {"sum": "sum", "mean": "mean", "max": "max"}


def _reduce(op: str, math: str) -> KernelSpec:
    return KernelSpec(f"f32_reduce_{op}", "reduce", op, ("x", "y", "outer", "n", "inner"),
                      f"y(outer, inner) = {math} of x(outer, n, inner) over its middle axis "
                      "(any set of adjacent axes, after collapsing); n >= 1")


ROWWISE: tuple[KernelSpec, ...] = (
    KernelSpec("f32_softmax", "rowwise", "softmax", ("x", "y", "rows", "n"),
               "y(rows, n) = exp(x - max) / sum(exp(x - max)) along each row of x(rows, n); "
               "y may alias x"),
    KernelSpec("f32_layer_norm", "rowwise", "layer_norm",
               ("x", "gamma", "beta", "y", "rows", "n", "eps:f32"),
               "y(rows, n) = (x - mean) / sqrt(var + eps) * gamma + beta along each row, with "
               "the biased variance; gamma, beta are (n,); y may alias x"),
)

GATHER = KernelSpec(
    "f32_gather", "gather", "gather", ("table", "index", "y", "count", "rows", "dim"),
    "y(count, dim) = table[index[i], :] for i < count: table is (rows, dim) f32, index is "
    "(count,) int64; an index outside [0, rows) traps (unreachable) and is never read through")
GATHER_BYTES = KernelSpec(
    "u8_gather", "gather", "gather", ("table", "index", "y", "count", "rows", "dim"),
    "as f32_gather with rows of dim bytes: y(count, dim) = table[index[i], :] of a (rows, dim) "
    "table of bytes (any dtype, dim counting its bytes)", dtypes=("uint8", "uint8"))

CONV_PARAMS = ("y", "n", "c", "h", "w", "o", "oh", "ow", "kh", "kw", "sh", "sw", "ph", "pw",
               "dh", "dw", "groups")


def _conv(residual: bool, activation: str) -> KernelSpec:
    epilogue = _epilogue(False, residual, activation)
    math = _math("conv2d(x, weight) + bias", epilogue)
    return KernelSpec("_".join(("f32_conv2d",) + epilogue), "conv", "conv2d",
                      ("x", "weight", "bias") + (("r",) if residual else ()) + CONV_PARAMS,
                      f"Y(n, o, oh, ow) = {math}: torch's conv2d (cross-correlation) of "
                      "x(n, c, h, w) with weight(o, c / groups, kh, kw) packed by "
                      "wasm_kernels.pack.pack_conv_weight, stride (sh, sw), zero "
                      "padding (ph, pw) on both sides, dilation (dh, dw); bias is (o,)"
                      + (", R is laid out as Y" if residual else "")
                      + "; all row-major f32; oh, ow must be torch's output size; Y must not "
                      "alias X" + (" or R" if residual else ""), epilogue=epilogue)


def _conv_gemm(residual: bool, activation: str, op: str = "conv2d_gemm") -> KernelSpec:
    """A row of the conv_gemm family: ``op`` ``conv2d_gemm`` (every path of
    ``templates/conv_gemm.py``), or ``conv2d_im2col``, the same arguments and result from
    packed columns only (``pack_im2col.packs``)."""
    epilogue = _epilogue(False, residual, activation)
    math = _math("conv2d(x, weight) + bias", epilogue)
    return KernelSpec("_".join((f"f32_{op}",) + epilogue), "conv_gemm", op,
                      ("x", "weight", "bias") + (("r",) if residual else ()) + ("ws", "xp")
                      + CONV_PARAMS + ("columns", "pixels", "first_bytes"),
                      f"Y(n, o, oh, ow) = {math}: as f32_conv2d, run as a gemm per image and "
                      "group: weight packed by wasm_kernels.pack_im2col.pack_im2col_weight; "
                      "ws and xp are scratch of pack_im2col.scratch_floats(c / groups * kh "
                      "* kw, columns) and pack_im2col.padded_floats floats, overwritten; "
                      "columns, a multiple of 8, is how many output pixels are packed at a "
                      "time; only output pixels first .. first + pixels of each plane are "
                      "computed, first = first_bytes / 4 (a multiple of 8), with Y, R and ws "
                      "moved to that pixel (ws by first * c * kh * kw floats) by the caller"
                      + (", R is laid out as Y" if residual else "")
                      + "; Y must not alias X" + (" or R" if residual else ""),
                      epilogue=epilogue)


DEPTHWISE_PARAMS = ("x", "weight", "bias", "scratch", "y", "n", "c", "o", "h", "w", "oh", "ow",
                    "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw")


def _depthwise(activation: str) -> KernelSpec:
    epilogue = _epilogue(False, False, activation)
    math = f"{activation}(conv)" if activation else "conv"
    return KernelSpec("_".join(("f32_depthwise_conv2d",) + epilogue), "depthwise",
                      "depthwise_conv2d", DEPTHWISE_PARAMS,
                      f"Y(n, o, oh, ow) = {math} with conv = torch's conv2d of x(n, c, h, w) "
                      "with groups = c (o / c output channels per input channel) and "
                      "weight(o, 1, kh, kw) as is, plus bias(o,); stride (sh, sw), zero "
                      "padding (ph, pw) on both sides, dilation (dh, dw); scratch is "
                      "depthwise_scratch_floats(...) floats, overwritten; all row-major f32. "
                      "Traps (unreachable) on a zero size, stride, dilation or c, o not a "
                      "multiple of c, or oh, ow other than torch's output size",
                      epilogue=epilogue)


QDEPTHWISE_PARAMS = ("x", "x_scale", "x_zero", "weight", "bias", "scratch", "y", "y_scale",
                     "y_zero", *DEPTHWISE_PARAMS[5:])


def _qdepthwise(dtype: str, activation: str) -> KernelSpec:
    short = {"uint8": "qu8", "int8": "qs8"}[dtype]
    epilogue = _epilogue(False, False, activation)
    math = f"{activation}(conv)" if activation else "conv"
    return KernelSpec("_".join((f"{short}_depthwise_conv2d",) + epilogue), "depthwise",
                      "depthwise_conv2d", QDEPTHWISE_PARAMS,
                      f"y = saturate(round_half_even({math} / y_scale) + y_zero) for {dtype} "
                      "x and y (n, c, h, w) and (n, o, oh, ow), y_scale one f32, y_zero one "
                      "byte (saturate clamps to the dtype's range; NaN gives 0), with conv = "
                      "f32_depthwise_conv2d's on float32(x - x_zero) * x_scale (x_scale one "
                      "f32, x_zero one byte), weight(o, 1, kh, kw) and bias(o,) f32: what "
                      "dequantize_linear, f32_depthwise_conv2d and quantize_linear compute "
                      "one after another; scratch and traps as f32_depthwise_conv2d's",
                      epilogue=epilogue, dtypes=(dtype, dtype))


QUANTIZED_ACTIVATIONS = ("relu", "relu6")
"""The activations a quantized depthwise row fuses (those of ``qconv2d``)."""


DEPTHWISE_PARTS = 8
"""Planes in a depthwise kernel's scratch: a call split across threads runs at most this many
parts (ranges of channels), each padding its planes into a plane of its own (the first
plane is a one-thread call's)."""


def depthwise_plane_floats(h: int, w: int, oh: int, ow: int, kh: int, kw: int, sh: int,
                           sw: int, ph: int, pw: int, dh: int, dw: int) -> int:
    """The floats of one plane of a depthwise kernel's scratch: a zero-padded input plane, tall
    and wide enough for every register its tiles load (4 lanes, 4 floats of slack for the
    stride-2 pairs; rows of under 8 outputs read as 8 wide)."""
    rows = max(ph + h, (oh - 1) * sh + (kh - 1) * dh + 1)
    columns = max(pw + w, (max(ow, 8) - 1) * sw + (kw - 1) * dw + 1) + 4
    return rows * columns


def depthwise_scratch_floats(h: int, w: int, oh: int, ow: int, kh: int, kw: int, sh: int,
                             sw: int, ph: int, pw: int, dh: int, dw: int) -> int:
    """The floats of a depthwise kernel's scratch: ``DEPTHWISE_PARTS`` planes of
    ``depthwise_plane_floats``."""
    return DEPTHWISE_PARTS * depthwise_plane_floats(h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh,
                                                    dw)


POOL_WINDOW = ("h", "w", "oh", "ow", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw")
POOLS: tuple[KernelSpec, ...] = (
    KernelSpec("f32_max_pool2d", "pool", "max_pool2d", ("x", "y", "planes") + POOL_WINDOW,
               "y(planes, oh, ow) = max of x(planes, h, w) over each window (stride (sh, sw), "
               "padding (ph, pw) counting as -inf, dilation (dh, dw)); taps outside the input "
               "are skipped, so oh, ow may include ceil_mode's partial windows"),
    KernelSpec("f32_avg_pool2d", "pool", "avg_pool2d", ("x", "scale", "y", "planes") + POOL_WINDOW,
               "y(planes, oh, ow) = sum of x(planes, h, w) over each window (as max_pool2d, "
               "padding counting as 0) times scale(oh, ow), the reciprocal of each window's "
               "divisor"),
)

MOVED: dict[int, str] = {1: "uint8", 2: "uint16", 4: "float32", 8: "int64"}
"""Per element size in bytes: the dtype of the movement kernels that move such elements bit
for bit, whatever dtype they hold (``f32_copy`` moves 8-byte ones as two words)."""

MOVEMENT: tuple[KernelSpec, ...] = (
    *(KernelSpec(f"{short(dtype)}_copy", "movement", "copy",
                 ("x", "y") + tuple(f"d{i}" for i in range(BROADCAST_RANK))
                 + tuple(f"{t}s{i}" for t in "xy" for i in range(BROADCAST_RANK)),
                 "y[sum(ik * ysk)] = x[sum(ik * xsk)] over (d0, d1, d2, d3): strides in "
                 f"{size}-byte elements for both sides (x strides 0 broadcast, e.g. a fill "
                 "from one element; negative ones read backwards, e.g. a reflection); writes "
                 "into a region of a larger y (pad, concat)", dtypes=(dtype, dtype))
      for size, dtype in MOVED.items() if size <= 4),
    *(KernelSpec(f"{short(dtype)}_where", "movement", "where",
                 ("cond", "a", "b", "y") + tuple(f"d{i}" for i in range(BROADCAST_RANK))
                 + tuple(f"{t}s{i}" for t in "cab" for i in range(BROADCAST_RANK)),
                 "y[i0, i1, i2, i3] = a if cond else b over the dense (d0, d1, d2, d3) output, "
                 "reading the bool bytes cond[sum(ik * csk)] (nonzero is true) and the "
                 f"{size}-byte elements a[sum(ik * ask)], b[sum(ik * bsk)], moved bit for bit "
                 "(any dtype of that size); strides in elements, 0 broadcasts",
                 dtypes=(dtype, dtype))
      for size, dtype in MOVED.items()),
)

GROUP_NORM = KernelSpec(
    "f32_group_norm", "norm", "group_norm",
    ("x", "gamma", "beta", "y", "n", "groups", "channels", "spatial", "eps:f32"),
    "y = (x - mean) / sqrt(var + eps) * gamma[ch] + beta[ch] for x(n, groups * channels, "
    "spatial), mean and biased var over each (channels, spatial) group; gamma, beta are "
    "(groups * channels,); y may alias x")

CONV_TRANSPOSE = KernelSpec(
    "f32_conv_transpose2d", "conv_transpose", "conv_transpose2d",
    ("x", "weight", "bias", "y", "n", "c", "h", "w", "o", "oh", "ow", "kh", "kw", "sh", "sw",
     "ph", "pw", "dh", "dw", "groups"),
    "Y(n, o, oh, ow) = conv_transpose2d(x, weight) + bias: torch's transposed conv of "
    "x(n, c, h, w), stride (sh, sw), padding (ph, pw) cropped from both sides, dilation "
    "(dh, dw); weight is torch's (c, o / groups, kh, kw) packed as (groups, c / groups, kh, "
    "kw, o / groups); bias is (o,); oh, ow are torch's output size (output_padding "
    "included); all row-major f32")

ADAPTIVE_AVG_POOL = KernelSpec(
    "f32_adaptive_avg_pool2d", "pool", "adaptive_avg_pool2d",
    ("x", "y", "planes", "h", "w", "oh", "ow"),
    "y(planes, oh, ow) = mean of x(planes, h, w) over rows [i * h // oh, ceil((i + 1) * h / "
    "oh)) and columns [j * w // ow, ceil((j + 1) * w / ow)) (torch's adaptive windows)")

TOPK_TYPES: tuple[str, ...] = ("float32", "int32", "int64")
"""The element dtypes of the top-k kernels (integers compare signed)."""
TOPKS: tuple[KernelSpec, ...] = tuple(KernelSpec(
    f"{short(dtype)}_topk", "topk", "topk",
    ("x", "values", "indices", "outer", "n", "inner", "k", "largest"),
    f"values(outer, k, inner), indices(outer, k, inner) = the k largest (smallest when "
    f"largest is 0) of the {dtype} x(outer, n, inner) along its middle axis, sorted, and "
    "their int64 indices; equal values keep their order (the lower index first); k <= n",
    dtypes=(dtype, dtype)) for dtype in TOPK_TYPES)

NMS = KernelSpec(
    "f32_non_max_suppression", "nms", "non_max_suppression",
    ("boxes", "scores", "selected", "count", "scratch", "batches", "classes", "n", "k",
     "center", "floored", "iou:f32", "floor:f32"),
    "ONNX NonMaxSuppression of f32 boxes(batches, n, 4) (two corners in either order, or "
    "centre and size when center is 1) and scores(batches, classes, n): per (batch, class), "
    "the boxes whose score (-inf read as the lowest finite f32) is over floor (all when "
    "floored is 0), by descending score (the lower index first on ties), each kept unless "
    "a box kept before it overlaps it with IoU over iou (boxes that do not overlap never "
    "suppress), at most k; int64 selected(batches * classes * k, 3) gets their [batch, "
    "class, box] rows in (batch, class, rank) order, then rows of -1, and int64 count(1,) "
    "their number; scratch is nms_scratch_floats(n, k) floats, overwritten",
    dtypes=("float32", "int64"))


def nms_scratch_floats(n: int, k: int) -> int:
    """The scratch floats of ``f32_non_max_suppression`` on ``n`` boxes keeping ``k`` per
    class: each box's corners and area, a heap of (score, index) pairs, the kept boxes'."""
    return 7 * n + 5 * k


BMM_BIAS = KernelSpec(
    "f32_bmm_bias", "gemm", "bmm",
    ("a", "b", "bias", "c", "batch", "m", "k", "n", "a_stride", "b_stride", "bias_every"),
    "C[i](m, n) = A[i](m, k) @ B[i](k, n) + bias[i // bias_every][None, :] for i < batch, as "
    "f32_bmm: bias holds rows of n floats, each shared by bias_every consecutive batches "
    "(an attention mask of shape (B, 1, 1, T) added to (B, heads, T, T) scores)",
    epilogue=("bias",))

RESAMPLE = KernelSpec(
    "f32_resample", "resample", "resample",
    ("x", "index", "weight", "y", "outer", "n", "on", "inner", "taps"),
    "y(outer, on, inner) = sum over t < taps of weight[t * on + o] * x(outer, index[t * on + "
    "o], inner) for x(outer, n, inner): one axis of a resize (nearest, linear, cubic), with "
    "the tap-major (taps, on) int32 row index (each in [0, n)) and f32 weight tables "
    "computed at compile time; y must not alias x")

KERNELS: tuple[KernelSpec, ...] = (
    *(_gemm(bias, residual, act) for bias in (False, True) for residual in (False, True)
      for act in ("", *FUSED_ACTIVATIONS)),
    *(_linear(bias, residual, act) for bias in (False, True) for residual in (False, True)
      for act in ("", *FUSED_ACTIVATIONS)),
    BMM,
    *(_unary(op, math) for op, math in UNARY_OPS.items()),
    *(_binary(op, math) for op, math in BINARY_OPS.items()),
    *(_reduce(op, math) for op, math in REDUCE_OPS.items()),
    *ROWWISE,
    *CASTS,
    GATHER,
    GATHER_BYTES,
    *(_conv(residual, act) for residual in (False, True) for act in ("", *FUSED_ACTIVATIONS)),
    *(_conv_gemm(residual, act, op) for op in ("conv2d_gemm", "conv2d_im2col")
      for residual in (False, True) for act in ("", *FUSED_ACTIVATIONS)),
    *(_depthwise(act) for act in ("", *FUSED_ACTIVATIONS)),
    *(_qdepthwise(dtype, act) for dtype in ("uint8", "int8")
      for act in ("", *QUANTIZED_ACTIVATIONS)),
    *POOLS,
    *MOVEMENT,
    GROUP_NORM,
    CONV_TRANSPOSE,
    ADAPTIVE_AVG_POOL,
    *COMPARES,
    BMM_BIAS,
    *ATTENTION,
    cell("lstm_cell"),
    cell("gru_cell"),
    cell("gru_reset"),
    cell("gru_update"),
    *(cell("rnn_cell", (act,)) for act in RNN_ACTIVATIONS),
    *LSTM_STEPS,
    RESAMPLE,
    *INTEGERS,
    *TOPKS,
    NMS,
    *QRESCALE,
    *QUANTIZE,
    *QLINEARS,
    *QCONV,
    *winograd_rows(FUSED_ACTIVATIONS),
)

BY_NAME: dict[str, KernelSpec] = {k.name: k for k in KERNELS}
BY_OP: dict[tuple[str, str, tuple[str, ...], str], KernelSpec] = {
    (k.family, k.op, k.epilogue, k.dtypes[0]): k for k in KERNELS}


def find(family: str, op: str, epilogue: tuple[str, ...] = (),
         dtype: str = "float32") -> KernelSpec:
    """The kernel of ``family`` computing ``op`` on ``dtype`` elements, followed by the
    fused ``epilogue`` steps.

    Raises:
        KeyError: no such kernel; the message lists what ``family`` offers for ``op``.
    """
    spec = BY_OP.get((family, op, tuple(epilogue), dtype))
    if spec is None:
        offered = sorted((k.epilogue, k.dtypes[0]) for k in KERNELS
                         if (k.family, k.op) == (family, op))
        raise KeyError(f"no {family} kernel for {op!r} with epilogue {tuple(epilogue)!r} on "
                       f"{dtype} in {MODULE}; (epilogue, dtype) pairs it has: {offered}")
    return spec


def fusable(family: str) -> frozenset[str]:
    """The epilogue steps some kernel of ``family`` fuses (``"bias"`` aside: it is an
    operand, not a graph op)."""
    return frozenset(step for k in KERNELS if k.family == family for step in k.epilogue
                     if step != "bias")
