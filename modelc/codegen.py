"""Code generation: an optimised graph -> a model module (bytes).

The module imports ``env.memory``, the kernels it calls from the versioned kernel module,
and ``fd_write`` from WASI when it has symbolic dims (it reports an out-of-range dim on
stderr). It exports ``run(dims...) -> i32`` (0 on success) and re-exports ``memory``.

Memory layout: [0, 16) scratch for WASI calls, then error messages, then weights (data
segments), then the activation arena planned by ``plan_memory``. Each op's ``lower``
records instructions into a ``LowerContext``; addresses are resolved once the layout is
known, and kernel calls once the imports are.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from wasm_kernels import abi
from wasm_kernels.wasm import Code, FuncType, Limits, MemoryType, ModuleBuilder

from . import ops
from .errors import CompileError
from .graph import Graph, Shape, Value
from .metadata import SECTION, encode_metadata

SCRATCH_BYTES = 16
PAGE = 65536
ALIGN = 16
WASI = "wasi_snapshot_preview1"
FD_WRITE = FuncType(("i32", "i32", "i32", "i32"), ("i32",))


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


class LowerContext:
    """What an op's ``lower`` writes into: pushes of addresses and sizes, and kernel calls."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.dim_params = {name: i for i, name in enumerate(graph.dims)}
        self.records: list[tuple[Any, ...]] = []
        self.weights = bytearray()
        self.kernels: list[str] = []
        self._constant_offsets: dict[int, int] = {}

    def push(self, number: int) -> None:
        """Push an i32 constant."""
        self.records.append(("i32.const", number))

    def _place(self, array: np.ndarray) -> int:
        raw = np.ascontiguousarray(array).tobytes()
        offset = _aligned(len(self.weights))
        self.weights.extend(bytes(offset - len(self.weights)) + raw)
        return offset

    def constant(self, array: np.ndarray) -> None:
        """Place ``array`` (e.g. a weight packed for its kernel) among the weights and push
        its address."""
        self.records.append(("weight", self._place(array)))

    def address(self, value: Value) -> None:
        """Push the address of ``value``: a weight for constants, else its arena slot."""
        if value.is_constant:
            if id(value) not in self._constant_offsets:
                self._constant_offsets[id(value)] = self._place(value.data.astype(np.float32))
            self.records.append(("weight", self._constant_offsets[id(value)]))
        else:
            self.records.append(("arena", self.graph.meta["arena"][id(value)]))

    def numel(self, shape: Shape) -> None:
        """Push the element count of ``shape``, multiplying in symbolic dims at run time."""
        self.push(math.prod(d for d in shape if isinstance(d, int)))
        for dim in shape:
            if isinstance(dim, str):
                self.records.append(("local.get", self.dim_params[dim]))
                self.records.append(("i32.mul",))

    def call(self, kernel: str) -> None:
        """Call kernel ``kernel`` of the ABI with the arguments pushed so far."""
        if kernel not in abi.BY_NAME:
            raise CompileError(f"no kernel {kernel!r} in ABI v{abi.VERSION}; "
                               f"available: {sorted(abi.BY_NAME)}")
        if kernel not in self.kernels:
            self.kernels.append(kernel)
        self.records.append(("kernel", kernel))


def _message_segment(graph: Graph, base: int) -> tuple[bytes, dict[str, tuple[int, int]]]:
    blob = bytearray()
    where = {}
    for name, (low, high) in graph.dims.items():
        text = f"wasmnn model: dim {name!r} must be in [{low}, {high}]\n".encode()
        where[name] = (base + len(blob), len(text))
        blob += text
    return bytes(blob), where


def generate(graph: Graph, producer: str) -> bytes:
    """Encode ``graph`` (after ``passes.optimize``) as a model module.

    Raises:
        CompileError: an op cannot be lowered, naming the node and the user's source line.
    """
    ctx = LowerContext(graph)
    for node in graph.nodes:
        try:
            ops.get(node.op).lower(node, ctx)
        except CompileError as err:
            raise CompileError(f"while lowering {node.describe()}: {err}") from None

    messages, message_at = _message_segment(graph, SCRATCH_BYTES)
    weights_base = _aligned(SCRATCH_BYTES + len(messages))
    arena_base = _aligned(weights_base + len(ctx.weights))
    memory_bytes = arena_base + graph.meta["arena_bytes"]
    pages = max(1, -(-memory_bytes // PAGE))

    builder = ModuleBuilder()
    builder.import_memory("env", "memory", MemoryType(Limits(pages)))
    fd_write = builder.import_func(WASI, "fd_write", FD_WRITE) if graph.dims else None
    kernel_index = {}
    for name in ctx.kernels:
        spec = abi.BY_NAME[name]
        kernel_index[name] = builder.import_func(abi.MODULE, name,
                                                 FuncType(spec.param_types, spec.results))

    code = Code(("i32",) * len(graph.dims))
    for param, (name, (low, high)) in enumerate(graph.dims.items()):
        pointer, length = message_at[name]
        code.emit("local.get", param).emit("i32.const", low).emit("i32.lt_u")
        code.emit("local.get", param).emit("i32.const", high).emit("i32.gt_u").emit("i32.or")
        code.emit("if")
        code.emit("i32.const", 0).emit("i32.const", pointer).emit("i32.store", 2)
        code.emit("i32.const", 4).emit("i32.const", length).emit("i32.store", 2)
        code.emit("i32.const", 2).emit("i32.const", 0).emit("i32.const", 1)
        code.emit("i32.const", 8).emit("call", fd_write).emit("drop")
        code.emit("i32.const", 1).emit("return").emit("end")
    for record in ctx.records:
        kind = record[0]
        if kind == "weight":
            code.emit("i32.const", weights_base + record[1])
        elif kind == "arena":
            code.emit("i32.const", arena_base + record[1])
        elif kind == "kernel":
            code.emit("call", kernel_index[record[1]])
        else:
            code.emit(*record)
    code.emit("i32.const", 0)
    builder.add_function(FuncType(("i32",) * len(graph.dims), ("i32",)), code, export="run")
    builder.export("memory", "memory", 0)

    if messages:
        builder.add_data(SCRATCH_BYTES, messages)
    if ctx.weights:
        builder.add_data(weights_base, bytes(ctx.weights))
    arena = graph.meta["arena"]
    builder.add_custom(SECTION, encode_metadata(
        graph, producer=producer,
        input_offsets={n: arena_base + arena[id(v)] for n, v in graph.inputs.items()},
        output_offsets={n: arena_base + arena[id(v)] for n, v in graph.outputs.items()},
        weights_bytes=len(ctx.weights), memory_bytes=memory_bytes))
    return builder.encode()
