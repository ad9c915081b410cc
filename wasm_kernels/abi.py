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


GEMM_EPILOGUES: tuple[tuple[str, ...], ...] = ((), ("relu",))


def _gemm(bias: bool, epilogue: tuple[str, ...]) -> KernelSpec:
    name = "_".join(("f32_gemm",) + (("bias",) if bias else ()) + epilogue)
    params = ("a", "b") + (("bias",) if bias else ()) + ("c", "m", "k", "n")
    math = "A @ B" + (" + bias[None, :]" if bias else "")
    for op in epilogue:
        math = f"{op}({math})"
    return KernelSpec(name, "gemm", params,
                      f"C(m, n) = {math}; A is (m, k), B is (k, n), all row-major f32")


UNARY_OPS: dict[str, str] = {"relu": "max(x, 0)"}


def _unary(op: str, math: str) -> KernelSpec:
    return KernelSpec(f"f32_{op}", "unary", ("x", "y", "n"),
                      f"y[i] = {math} for i < n; y may alias x")


KERNELS: tuple[KernelSpec, ...] = (
    *(_gemm(bias, epilogue) for bias in (False, True) for epilogue in GEMM_EPILOGUES),
    *(_unary(op, math) for op, math in UNARY_OPS.items()),
)

BY_NAME: dict[str, KernelSpec] = {k.name: k for k in KERNELS}
