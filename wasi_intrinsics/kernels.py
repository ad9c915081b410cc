"""The host kernel provider: the kernel ABI implemented with numpy, as an intrinsic module.

It is declared from the same data-only table as the wasm kernel module
(``wasm_kernels.abi``), so both export exactly the same names and signatures. It serves as
an oracle for the wasm kernels and as a fast path when the host is trusted with the math.
Each family implements every row of that family, reading its arguments by parameter name.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from wasm_kernels import abi
from wasm_kernels.wasm import FuncType

from .intrinsic import HostContext, IntrinsicModule

_F32 = np.dtype("<f4")


def _tensor(memory: np.ndarray, pointer: int, shape: tuple[int, ...]) -> np.ndarray:
    count = int(np.prod(shape))
    if pointer < 0 or pointer + 4 * count > memory.size:
        raise IndexError(f"kernel operand [{pointer}, {pointer + 4 * count}) is outside "
                         f"linear memory of {memory.size} bytes")
    return memory[pointer:pointer + 4 * count].view(_F32).reshape(shape)


def _gemm(spec: abi.KernelSpec) -> Callable[..., None]:
    def gemm(ctx: HostContext, *args: int) -> None:
        arg = dict(zip(spec.params, args))
        m, k, n = arg["m"], arg["k"], arg["n"]
        memory = ctx.memory
        out = _tensor(memory, arg["a"], (m, k)) @ _tensor(memory, arg["b"], (k, n))
        if "bias" in arg:
            out += _tensor(memory, arg["bias"], (n,))
        if spec.name.endswith("_relu"):
            np.maximum(out, 0, out=out)
        _tensor(memory, arg["c"], (m, n))[...] = out

    return gemm


UNARY: dict[str, Callable[[np.ndarray, np.ndarray], object]] = {
    "relu": lambda x, out: np.maximum(x, 0, out=out),
}


def _unary(spec: abi.KernelSpec) -> Callable[..., None]:
    apply = UNARY[spec.name.removeprefix("f32_")]

    def unary(ctx: HostContext, x: int, y: int, n: int) -> None:
        memory = ctx.memory
        apply(_tensor(memory, x, (n,)).copy(), _tensor(memory, y, (n,)))

    return unary


FAMILIES: dict[str, Callable[[abi.KernelSpec], Callable[..., None]]] = {"gemm": _gemm, "unary": _unary}


def provider() -> IntrinsicModule:
    """The host provider: one host function per row of ``wasm_kernels.abi.KERNELS``."""
    module = IntrinsicModule(abi.MODULE)
    for spec in abi.KERNELS:
        module.define_function(spec.name, FuncType(spec.param_types, spec.results),
                               FAMILIES[spec.family](spec))
    return module
