"""``KernelSpec``: one row of the kernel ABI (``wasm_kernels.abi``), and the unary ops a row
may apply, alone or fused into its epilogue."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KernelSpec:
    """One kernel: its import name, family (the template that generates it), the op it
    computes within that family, wasm parameter names (all i32 unless written
    ``name:type``), and meaning.

    ``epilogue`` lists the steps fused after ``op``, in order of application: ``"bias"``
    (a bias row added), ``"add"`` (a residual ``R`` added) and at most one unary op of
    ``UNARY_OPS``. ``dtypes`` are the numpy element types read and written. ``formula`` is,
    for elementwise rows, ``y`` as an expression in ``x`` (unary) or ``a`` and ``b``."""

    name: str
    family: str
    op: str
    params: tuple[str, ...]
    doc: str
    results: tuple[str, ...] = ()
    epilogue: tuple[str, ...] = ()
    dtypes: tuple[str, str] = ("float32", "float32")
    formula: str = ""

    @property
    def param_types(self) -> tuple[str, ...]:
        return tuple(p.split(":")[1] if ":" in p else "i32" for p in self.params)

    @property
    def activations(self) -> tuple[str, ...]:
        """The unary ops among ``epilogue``, in order of application."""
        return tuple(step for step in self.epilogue if step in UNARY_OPS)




UNARY_OPS: dict[str, str] = {
    "relu": "max(x, 0)", "relu6": "min(max(x, 0), 6)", "neg": "-x", "abs": "abs(x)",
    "sqrt": "sqrt(x)", "exp": "exp(x)", "log": "log(x)", "tanh": "tanh(x)", "erf": "erf(x)",
    "sigmoid": "1 / (1 + exp(-x))", "silu": "x / (1 + exp(-x))",
    "gelu": "x / 2 * erfc(-x / sqrt(2))",
    "hardswish": "x * min(max(x + 3, 0), 6) / 6",
    "floor": "floor(x)", "ceil": "ceil(x)", "round": "round(x)",
    "sin": "sin(x)", "cos": "cos(x)",
}
"""Elementwise unary ops by name: ``y`` as a formula in ``x`` (``wasm_kernels.formula``)."""


BROADCAST_RANK = 4
"""The rank of the strided elementwise kernels' index space."""


def broadcast_params() -> tuple[str, ...]:
    """``a, b, y``, the output's dims ``d0..d3`` and each operand's strides ``as0..bs3``."""
    dims = tuple(f"d{i}" for i in range(BROADCAST_RANK))
    return ("a", "b", "y") + dims + tuple(f"{t}s{i}" for t in "ab" for i in range(BROADCAST_RANK))


ELEMENTS: dict[str, tuple[str, int]] = {
    "float32": ("f32", 4), "int64": ("i64", 8), "int32": ("i32", 4), "int16": ("i16", 2),
    "uint16": ("u16", 2), "int8": ("i8", 1), "uint8": ("u8", 1), "bool": ("bool", 1)}
"""The element dtypes of the ABI's tensors outside the quantized ops: the short name a
kernel's name starts with, and the size in bytes (a bool is one byte, as numpy stores it)."""


def short(dtype: str) -> str:
    """The short name of element dtype ``dtype`` (``f32``, ``i64``, ``u8``, ``bool``...)."""
    return ELEMENTS[dtype][0]
