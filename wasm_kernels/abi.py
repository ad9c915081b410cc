"""The kernel ABI: data only. Every kernel provider exports exactly this table.

A model imports kernels by these names from the versioned module ``MODULE``. Pointers are
byte offsets into the shared linear memory; tensors are dense, row-major float32.
Changing a row's meaning or signature means a new ``VERSION`` (and so a new ``MODULE``).
"""

from __future__ import annotations

from dataclasses import dataclass

VERSION = 1
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


def _binary(op: str, math: str) -> KernelSpec:
    dims = tuple(f"d{i}" for i in range(BROADCAST_RANK))
    strides = tuple(f"{t}s{i}" for t in "ab" for i in range(BROADCAST_RANK))
    return KernelSpec(f"f32_{op}", "binary", ("a", "b", "y") + dims + strides,
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
)

BY_NAME: dict[str, KernelSpec] = {k.name: k for k in KERNELS}
