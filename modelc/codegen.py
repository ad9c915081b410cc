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

import hashlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from wasm_kernels import abi
from wasm_kernels.wasm import Code, FuncType, Limits, MemoryType, ModuleBuilder

from . import ops
from .errors import CompileError
from .graph import Graph, Node, Shape, Value
from .metadata import SECTION, encode_metadata

SCRATCH_BYTES = 16
PAGE = 65536
ALIGN = 16
WASI = "wasi_snapshot_preview1"
FD_WRITE = FuncType(("i32", "i32", "i32", "i32"), ("i32",))


def storage(array: np.ndarray) -> np.ndarray:
    """How a constant is stored in linear memory: floats as float32, other dtypes as they
    are (little-endian, C order)."""
    array = np.asarray(array)
    dtype = np.float32 if array.dtype.kind == "f" else array.dtype.newbyteorder("<")
    return np.ascontiguousarray(array, dtype=dtype)


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
        self.locals = 0
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

    def scalar(self, number: float) -> None:
        """Place one float32 among the weights and push its address."""
        self.constant(np.array([number], np.float32))

    def push_f32(self, number: float) -> None:
        """Push an f32 constant."""
        self.records.append(("f32.const", float(number)))

    def address(self, value: Value) -> None:
        """Push the address of ``value``: a weight for constants, else its arena slot."""
        if value.data is not None:
            if id(value) not in self._constant_offsets:
                self._constant_offsets[id(value)] = self._place(storage(value.data))
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

    def advance(self, elements: Shape, itemsize: int = 4) -> None:
        """Add ``product(elements) * itemsize`` bytes to the address on top of the stack."""
        self.numel(elements)
        self.push(itemsize)
        self.records.append(("i32.mul",))
        self.records.append(("i32.add",))

    def emit(self, op: str, *args: object) -> None:
        """Record one plain instruction (control flow, locals) for ``run``."""
        self.records.append((op, *args))

    def local(self) -> int:
        """A new i32 local of ``run`` (e.g. a loop counter); returns its index."""
        self.locals += 1
        return len(self.dim_params) + self.locals - 1

    def scratch(self, node: Node, index: int = 0) -> None:
        """Push the address of ``node``'s scratch buffer ``index`` (``OpDef.scratch``)."""
        self.records.append(("arena", self.graph.meta["scratch"][(id(node), index)]))

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


@dataclass(frozen=True)
class Layout:
    """Where things live in linear memory; every address the module uses derives from it."""

    messages: bytes
    message_at: dict[str, tuple[int, int]]
    weights_base: int
    arena_base: int
    memory_bytes: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.memory_bytes // PAGE))

    def address(self, graph: Graph, value: Value) -> int:
        return self.arena_base + graph.meta["arena"][id(value)]


def lower(graph: Graph) -> tuple[LowerContext, Layout]:
    """Lower every node (after ``passes.optimize``) and lay out memory.

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
    return ctx, Layout(messages, message_at, weights_base, arena_base,
                       arena_base + graph.meta["arena_bytes"])


def report_error(code: Code, fd_write: int, pointer: int, length: int) -> None:
    """Emit: write the message at ``pointer`` to stderr (iovec in the scratch bytes)."""
    code.emit("i32.const", 0).emit("i32.const", pointer).emit("i32.store", 2)
    code.emit("i32.const", 4).emit("i32.const", length).emit("i32.store", 2)
    code.emit("i32.const", 2).emit("i32.const", 0).emit("i32.const", 1)
    code.emit("i32.const", 8).emit("call", fd_write).emit("drop")


def run_function(ctx: LowerContext, layout: Layout, kernel_index: dict[str, int],
                 fd_write: int | None) -> Code:
    """``run(dims...) -> i32``: check each dim's range (reporting on stderr, returning 1),
    then make the kernel calls and return 0."""
    graph = ctx.graph
    code = Code(("i32",) * len(graph.dims))
    for _ in range(ctx.locals):
        code.local("i32")
    for param, (name, (low, high)) in enumerate(graph.dims.items()):
        assert fd_write is not None
        code.emit("local.get", param).emit("i32.const", low).emit("i32.lt_u")
        code.emit("local.get", param).emit("i32.const", high).emit("i32.gt_u").emit("i32.or")
        code.emit("if")
        report_error(code, fd_write, *layout.message_at[name])
        code.emit("i32.const", 1).emit("return").emit("end")
    for record in ctx.records:
        kind = record[0]
        if kind == "weight":
            code.emit("i32.const", layout.weights_base + record[1])
        elif kind == "arena":
            code.emit("i32.const", layout.arena_base + record[1])
        elif kind == "kernel":
            code.emit("call", kernel_index[record[1]])
        else:
            code.emit(*record)
    code.emit("i32.const", 0)
    return code


def add_data_and_metadata(builder: ModuleBuilder, ctx: LowerContext, layout: Layout,
                          producer: str, sidecar: str | None = None, **extra: object) -> None:
    """The message and weight data segments, and the metadata custom section. With
    ``sidecar`` (a file name), the weights are left out of the module and the metadata says
    where the runtime must place that file's bytes, with their size and SHA-256."""
    graph = ctx.graph
    if layout.messages:
        builder.add_data(SCRATCH_BYTES, layout.messages)
    if sidecar is not None:
        extra["sidecar"] = {"file": sidecar, "offset": layout.weights_base,
                            "bytes": len(ctx.weights),
                            "sha256": hashlib.sha256(ctx.weights).hexdigest()}
    elif ctx.weights:
        builder.add_data(layout.weights_base, bytes(ctx.weights))
    builder.add_custom(SECTION, encode_metadata(
        graph, producer=producer,
        input_offsets={n: layout.address(graph, v) for n, v in graph.inputs.items()},
        output_offsets={n: layout.address(graph, v) for n, v in graph.outputs.items()},
        weights_bytes=len(ctx.weights), memory_bytes=layout.memory_bytes, **extra))


def generate(graph: Graph, producer: str, sidecar: str | None = None) -> tuple[bytes, bytes]:
    """Encode ``graph`` (after ``passes.optimize``) as a model module that imports its
    memory, its kernels and (with symbolic dims) WASI ``fd_write``. Returns the module and
    its weight bytes (inside the module too, unless ``sidecar`` names the file for them).

    Raises:
        CompileError: an op cannot be lowered, naming the node and the user's source line.
    """
    ctx, layout = lower(graph)
    builder = ModuleBuilder()
    builder.import_memory("env", "memory", MemoryType(Limits(layout.pages)))
    fd_write = builder.import_func(WASI, "fd_write", FD_WRITE) if graph.dims else None
    kernel_index = {}
    for name in ctx.kernels:
        spec = abi.BY_NAME[name]
        kernel_index[name] = builder.import_func(abi.MODULE, name,
                                                 FuncType(spec.param_types, spec.results))
    builder.add_function(FuncType(("i32",) * len(graph.dims), ("i32",)),
                         run_function(ctx, layout, kernel_index, fd_write), export="run")
    builder.export("memory", "memory", 0)
    add_data_and_metadata(builder, ctx, layout, producer, sidecar)
    return builder.encode(), bytes(ctx.weights)
