"""The kernel ABI: data only. Every kernel provider exports exactly this table.

A model imports kernels by these names from the versioned module ``MODULE``. Pointers are
byte offsets into the shared linear memory; tensors are dense, row-major float32.
Changing a row's meaning or signature means a new ``VERSION`` (and so a new ``MODULE``).
"""

from __future__ import annotations

from dataclasses import dataclass

VERSION = 2
MODULE = f"wasmnn_kernels_v{VERSION}"


@dataclass(frozen=True)
class KernelSpec:
    """One kernel: its import name, family (the template that generates it), wasm parameter
    names (all i32 unless written ``name:type``), and meaning."""

    name: str
    family: str
    params: tuple[str, ...]
    doc: str
    results: tuple[str, ...] = ()

    @property
    def param_types(self) -> tuple[str, ...]:
        return tuple(p.split(":")[1] if ":" in p else "i32" for p in self.params)


GEMM_ACTIVATIONS: tuple[str, ...] = ("", "relu", "relu6", "gelu", "silu", "sigmoid")


def _gemm(bias: bool, residual: bool, activation: str) -> KernelSpec:
    parts = ("f32_gemm",) + (("bias",) if bias else ()) + (("add",) if residual else ())
    name = "_".join(parts + ((activation,) if activation else ()))
    params = (("a", "b") + (("bias",) if bias else ()) + (("r",) if residual else ())
              + ("c", "m", "k", "n"))
    math = "A @ B" + (" + bias[None, :]" if bias else "") + (" + R" if residual else "")
    if activation:
        math = f"{activation}({math})"
    return KernelSpec(name, "gemm", params,
                      f"C(m, n) = {math}; A is (m, k), B is (k, n)" + (", R is (m, n)" if residual
                                                                       else "")
                      + ", all row-major f32; C may alias R")


def _linear(bias: bool, residual: bool, activation: str) -> KernelSpec:
    parts = ("f32_linear",) + (("bias",) if bias else ()) + (("add",) if residual else ())
    name = "_".join(parts + ((activation,) if activation else ()))
    params = (("a", "w") + (("bias",) if bias else ()) + (("r",) if residual else ())
              + ("c", "m", "k", "n"))
    math = "A @ W.T" + (" + bias[None, :]" if bias else "") + (" + R" if residual else "")
    if activation:
        math = f"{activation}({math})"
    return KernelSpec(name, "linear", params,
                      f"C(m, n) = {math}; A is (m, k), W is (n, k) (nn.Linear's weight), "
                      "packed by wasm_kernels.pack.pack_linear_weight" + (", R is (m, n)" if residual else "")
                      + ", all row-major f32; C may alias R")


BMM = KernelSpec(
    "f32_bmm", "gemm", ("a", "b", "c", "batch", "m", "k", "n", "a_stride", "b_stride"),
    "C[i](m, n) = A[i](m, k) @ B[i](k, n) for i < batch; A[i] starts a_stride floats after "
    "A[i-1] and B[i] b_stride floats after B[i-1] (0 broadcasts one matrix); C is dense")

UNARY_OPS: dict[str, str] = {
    "relu": "max(x, 0)", "relu6": "min(max(x, 0), 6)", "neg": "-x", "abs": "|x|",
    "sqrt": "sqrt(x)", "exp": "e**x", "log": "ln(x)", "tanh": "tanh(x)", "erf": "erf(x)",
    "sigmoid": "1 / (1 + e**-x)", "silu": "x / (1 + e**-x)",
    "gelu": "x / 2 * (1 + erf(x / sqrt(2)))",
}


def _unary(op: str, math: str) -> KernelSpec:
    return KernelSpec(f"f32_{op}", "unary", ("x", "y", "n"),
                      f"y[i] = {math} for i < n; y may alias x")


BINARY_OPS: dict[str, str] = {"add": "a + b", "sub": "a - b", "mul": "a * b", "div": "a / b",
                              "max": "max(a, b)", "min": "min(a, b)"}
BROADCAST_RANK = 4


def _broadcast_params() -> tuple[str, ...]:
    """``a, b, y``, the output's dims ``d0..d3`` and each operand's strides ``as0..bs3``."""
    dims = tuple(f"d{i}" for i in range(BROADCAST_RANK))
    return ("a", "b", "y") + dims + tuple(f"{t}s{i}" for t in "ab" for i in range(BROADCAST_RANK))


def _binary(op: str, math: str) -> KernelSpec:
    return KernelSpec(f"f32_{op}", "binary", _broadcast_params(),
                      f"y[i0, i1, i2, i3] = {math} over the dense (d0, d1, d2, d3) output, "
                      "reading a[sum(ik * ask)] and b[sum(ik * bsk)]: strides in floats, 0 "
                      "broadcasts a dimension (numpy broadcasting after padding shapes to "
                      "rank 4); y may alias a dense a or b")


REDUCE_OPS: dict[str, str] = {"sum": "sum", "mean": "mean", "max": "max"}


def _reduce(op: str, math: str) -> KernelSpec:
    return KernelSpec(f"f32_reduce_{op}", "reduce", ("x", "y", "outer", "n", "inner"),
                      f"y(outer, inner) = {math} of x(outer, n, inner) over its middle axis "
                      "(any set of adjacent axes, after collapsing); n >= 1")


ROWWISE: tuple[KernelSpec, ...] = (
    KernelSpec("f32_softmax", "rowwise", ("x", "y", "rows", "n"),
               "y(rows, n) = exp(x - max) / sum(exp(x - max)) along each row of x(rows, n); "
               "y may alias x"),
    KernelSpec("f32_layer_norm", "rowwise", ("x", "gamma", "beta", "y", "rows", "n", "eps:f32"),
               "y(rows, n) = (x - mean) / sqrt(var + eps) * gamma + beta along each row, with "
               "the biased variance; gamma, beta are (n,); y may alias x"),
)

CASTS: dict[str, str] = {
    "i64_to_f32": "float32(x[i]) for int64 x (rounded to nearest)",
    "f32_to_i64": "int64(x[i]) truncated toward zero, saturating at the int64 range; NaN "
                  "gives 0",
    "bool_to_f32": "1.0 if the byte x[i] is nonzero else 0.0 (numpy bool)",
    # Integer tensors (issue #19): int32 inputs and indices, masks turned into numbers.
    "i32_to_f32": "float32(x[i]) for int32 x (rounded to nearest)",
    "f32_to_i32": "int32(x[i]) truncated toward zero, saturating at the int32 range; NaN "
                  "gives 0",
    "i32_to_i64": "int64(x[i]) for int32 x (sign-extended)",
    "i64_to_i32": "int32(x[i]) for int64 x, wrapping (the low 32 bits, as numpy's astype)",
    "bool_to_i32": "1 if the byte x[i] is nonzero else 0, as int32",
    "bool_to_i64": "1 if the byte x[i] is nonzero else 0, as int64",
    "i32_to_bool": "x[i] != 0 as a numpy bool byte, for int32 x",
    "f32_to_bool": "x[i] != 0 as a numpy bool byte, for float32 x (NaN is true)",
}


def _cast(name: str, math: str) -> KernelSpec:
    return KernelSpec(name, "cast", ("x", "y", "n"), f"y[i] = {math} for i < n")


GATHER = KernelSpec(
    "f32_gather", "gather", ("table", "index", "y", "count", "rows", "dim"),
    "y(count, dim) = table[index[i], :] for i < count: table is (rows, dim) f32, index is "
    "(count,) int64; an index outside [0, rows) traps (unreachable) and is never read through")

CONV_PARAMS = ("y", "n", "c", "h", "w", "o", "oh", "ow", "kh", "kw", "sh", "sw", "ph", "pw",
               "dh", "dw", "groups")


def _conv(residual: bool, activation: str) -> KernelSpec:
    name = "_".join(("f32_conv2d",) + (("add",) if residual else ())
                    + ((activation,) if activation else ()))
    math = "conv2d(x, weight) + bias" + (" + R" if residual else "")
    if activation:
        math = f"{activation}({math})"
    return KernelSpec(name, "conv", ("x", "weight", "bias") + (("r",) if residual else ())
                      + CONV_PARAMS,
                      f"Y(n, o, oh, ow) = {math}: torch's conv2d (cross-correlation) of "
                      "x(n, c, h, w) with weight(o, c / groups, kh, kw) packed by "
                      "wasm_kernels.pack.pack_conv_weight, stride (sh, sw), zero "
                      "padding (ph, pw) on both sides, dilation (dh, dw); bias is (o,)"
                      + (", R is laid out as Y" if residual else "")
                      + "; all row-major f32; oh, ow must be torch's output size; Y must not "
                      "alias X" + (" or R" if residual else ""))


POOL_WINDOW = ("h", "w", "oh", "ow", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw")
POOLS: tuple[KernelSpec, ...] = (
    KernelSpec("f32_max_pool2d", "pool", ("x", "y", "planes") + POOL_WINDOW,
               "y(planes, oh, ow) = max of x(planes, h, w) over each window (stride (sh, sw), "
               "padding (ph, pw) counting as -inf, dilation (dh, dw)); taps outside the input "
               "are skipped, so oh, ow may include ceil_mode's partial windows"),
    KernelSpec("f32_avg_pool2d", "pool", ("x", "scale", "y", "planes") + POOL_WINDOW,
               "y(planes, oh, ow) = sum of x(planes, h, w) over each window (as max_pool2d, "
               "padding counting as 0) times scale(oh, ow), the reciprocal of each window's "
               "divisor"),
)

MOVEMENT: tuple[KernelSpec, ...] = (
    KernelSpec("f32_copy", "movement",
               ("x", "y") + tuple(f"d{i}" for i in range(BROADCAST_RANK))
               + tuple(f"{t}s{i}" for t in "xy" for i in range(BROADCAST_RANK)),
               "y[sum(ik * ysk)] = x[sum(ik * xsk)] over (d0, d1, d2, d3): strides in floats "
               "for both sides (x strides 0 broadcast, e.g. a fill from one float; negative "
               "ones read backwards, e.g. a reflection); writes "
               "into a region of a larger y (pad, concat)"),
    *(KernelSpec(f"{t}_where", "movement",
                 ("cond", "a", "b", "y") + tuple(f"d{i}" for i in range(BROADCAST_RANK))
                 + tuple(f"{s}s{i}" for s in "cab" for i in range(BROADCAST_RANK)),
                 "y[i0, i1, i2, i3] = a if cond else b over the dense (d0, d1, d2, d3) output, "
                 "reading the bool bytes cond[sum(ik * csk)] (nonzero is true) and the "
                 f"{size}-byte elements a[sum(ik * ask)], b[sum(ik * bsk)], moved bit for bit "
                 f"({what}); strides in elements, 0 broadcasts")
      for t, size, what in (("f32", 4, "float32 or int32"), ("i64", 8, "int64"))),
)

GROUP_NORM = KernelSpec(
    "f32_group_norm", "norm",
    ("x", "gamma", "beta", "y", "n", "groups", "channels", "spatial", "eps:f32"),
    "y = (x - mean) / sqrt(var + eps) * gamma[ch] + beta[ch] for x(n, groups * channels, "
    "spatial), mean and biased var over each (channels, spatial) group; gamma, beta are "
    "(groups * channels,); y may alias x")

CONV_TRANSPOSE = KernelSpec(
    "f32_conv_transpose2d", "conv_transpose",
    ("x", "weight", "bias", "y", "n", "c", "h", "w", "o", "oh", "ow", "kh", "kw", "sh", "sw",
     "ph", "pw", "dh", "dw", "groups"),
    "Y(n, o, oh, ow) = conv_transpose2d(x, weight) + bias: torch's transposed conv of "
    "x(n, c, h, w), stride (sh, sw), padding (ph, pw) cropped from both sides, dilation "
    "(dh, dw); weight is torch's (c, o / groups, kh, kw) packed as (groups, c / groups, kh, "
    "kw, o / groups); bias is (o,); oh, ow are torch's output size (output_padding "
    "included); all row-major f32")

ADAPTIVE_AVG_POOL = KernelSpec(
    "f32_adaptive_avg_pool2d", "pool", ("x", "y", "planes", "h", "w", "oh", "ow"),
    "y(planes, oh, ow) = mean of x(planes, h, w) over rows [i * h // oh, ceil((i + 1) * h / "
    "oh)) and columns [j * w // ow, ceil((j + 1) * w / ow)) (torch's adaptive windows)")

# Run-time masks (issue #8): comparisons with bool results, and int64 -> bool.
COMPARE_OPS: dict[str, str] = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">",
                               "ge": ">="}


COMPARE_TYPES: dict[str, str] = {"f32": "float32", "i32": "int32", "i64": "int64"}


def _compare(dtype: str, op: str, math: str) -> KernelSpec:
    return KernelSpec(f"{dtype}_cmp_{op}", "compare", _broadcast_params(),
                      f"y[i0, i1, i2, i3] = a {math} b as a numpy bool byte (1 or 0) over the "
                      f"dense (d0, d1, d2, d3) output, reading the {COMPARE_TYPES[dtype]} "
                      "elements a[sum(ik * ask)] and b[sum(ik * bsk)]: strides in elements, 0 "
                      "broadcasts" + ("; a NaN operand makes every comparison but != false"
                                      if dtype == "f32" else " (signed)"))


MASKS: tuple[KernelSpec, ...] = (
    *(_compare(t, op, math) for t in COMPARE_TYPES for op, math in COMPARE_OPS.items()),
    _cast("i64_to_bool", "x[i] != 0 as a numpy bool byte, for int64 x"),
)

BMM_BIAS = KernelSpec(
    "f32_bmm_bias", "gemm",
    ("a", "b", "bias", "c", "batch", "m", "k", "n", "a_stride", "b_stride", "bias_every"),
    "C[i](m, n) = A[i](m, k) @ B[i](k, n) + bias[i // bias_every][None, :] for i < batch, as "
    "f32_bmm: bias holds rows of n floats, each shared by bias_every consecutive batches "
    "(an attention mask of shape (B, 1, 1, T) added to (B, heads, T, T) scores)")

KERNELS: tuple[KernelSpec, ...] = (
    *(_gemm(bias, residual, act) for bias in (False, True) for residual in (False, True)
      for act in GEMM_ACTIVATIONS),
    *(_linear(bias, residual, act) for bias in (False, True) for residual in (False, True)
      for act in GEMM_ACTIVATIONS),
    BMM,
    *(_unary(op, math) for op, math in UNARY_OPS.items()),
    *(_binary(op, math) for op, math in BINARY_OPS.items()),
    *(_reduce(op, math) for op, math in REDUCE_OPS.items()),
    *ROWWISE,
    *(_cast(name, math) for name, math in CASTS.items()),
    GATHER,
    *(_conv(residual, act) for residual in (False, True) for act in GEMM_ACTIVATIONS),
    *POOLS,
    *MOVEMENT,
    GROUP_NORM,
    CONV_TRANSPOSE,
    ADAPTIVE_AVG_POOL,
    *MASKS,
    BMM_BIAS,
)

BY_NAME: dict[str, KernelSpec] = {k.name: k for k in KERNELS}
