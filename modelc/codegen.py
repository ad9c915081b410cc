"""Code generation: an optimised graph -> a model module (bytes).

The module imports ``env.memory``, the kernels it calls from the versioned kernel module,
and ``fd_write`` from WASI when it has symbolic dims (it reports an out-of-range dim on
stderr). It exports ``run(dims...) -> i32`` (0 on success) and re-exports ``memory``.

Memory layout: [0, 16) scratch for WASI calls, then error messages, then weights (data
segments), then the activation arena planned by ``plan_memory`` (``arena``: with symbolic
dims, its addresses are computed per call and memory grows to what the dims need). Each
op's ``lower`` records instructions into a ``LowerContext``; addresses are resolved once the
layout is known, and kernel calls once the imports are.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np

from wasm_kernels import abi
from wasm_kernels.wasm import Code, FuncType, Limits, MemoryType, ModuleBuilder, WasmTypeError

from . import ops
from .arena import LAYOUT_EXPORT, Layout, layout_function, make_layout
from .errors import CompileError
from .graph import Graph, Guard, Node, Shape, Value
from .metadata import SECTION, check_interface, encode_metadata

SCRATCH_BYTES = 16
PAGE = 65536
MAX_MEMORY_BYTES = 65536 * PAGE
"""What a wasm32 memory can hold (4 GiB): a model needing more could never load."""
MAX_DIM = (1 << 31) - 1
"""The largest dim value: ``run`` takes each dim as an ``i32``."""
ALIGN = 16
WASI = "wasi_snapshot_preview1"
MODULE_NAME = "wasmnn_model"
"""The module name in the ``name`` section: traps read ``wasmnn_model!run``."""
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
    """What an op's ``lower`` writes into: pushes of addresses and sizes, and kernel calls.

    Each is recorded for ``run_function`` (addresses and kernel indices are resolved once
    the layout and the imports are known) and at once checked against the value stack of
    ``check``, so an op that pushes too few or too many arguments fails while it is lowered.
    """

    def __init__(self, graph: Graph):
        self.graph = graph
        self.dim_params = {name: i for i, name in enumerate(graph.dims)}
        self.records: list[tuple[Any, ...]] = []
        self.weights = bytearray()
        self.kernels: list[str] = []
        self.locals = 0
        self._constant_offsets: dict[int, int] = {}
        self._placed: dict[tuple[int, bytes], int] = {}
        self._callees: list[tuple[str | None, FuncType]] = []
        self.check = Code(("i32",) * len(graph.dims), ("i32",), funcs=self._callees)

    def _add(self, op: str, *args: Any, record: tuple[Any, ...] | None = None) -> None:
        self.check.emit(op, *args)
        self.records.append(record or (op, *args))

    def push(self, number: int) -> None:
        """Push an i32 constant."""
        self._add("i32.const", number)

    def _place(self, array: np.ndarray) -> int:
        """The offset of ``array``'s bytes among the weights, placed once: bytes equal to
        ones already placed share them (an exporter's unrolled LSTM uses one weight at every
        step, each use packed alike)."""
        raw = np.ascontiguousarray(array).tobytes()
        key = (len(raw), hashlib.blake2b(raw, digest_size=16).digest())
        offset = self._placed.get(key)
        if offset is not None and self.weights[offset:offset + len(raw)] == raw:
            return offset
        offset = _aligned(len(self.weights))
        self.weights.extend(bytes(offset - len(self.weights)) + raw)
        self._placed[key] = offset
        return offset

    def constant(self, array: np.ndarray) -> None:
        """Place ``array`` (e.g. a weight packed for its kernel) among the weights and push
        its address."""
        self._add("i32.const", 0, record=("weight", self._place(array)))

    def scalar(self, number: float, dtype: str = "float32") -> None:
        """Place one element of ``dtype`` (float32 unless said) among the weights and push
        its address."""
        self.constant(np.array([number], storage(np.array([], dtype)).dtype))

    def push_f32(self, number: float) -> None:
        """Push an f32 constant."""
        self._add("f32.const", float(number))

    def address(self, value: Value) -> None:
        """Push the address of ``value``: a weight for constants, else its arena slot."""
        if value.data is not None:
            if id(value) not in self._constant_offsets:
                self._constant_offsets[id(value)] = self._place(storage(value.data))
            self._add("i32.const", 0, record=("weight", self._constant_offsets[id(value)]))
        else:
            self._add("i32.const", 0, record=("arena", self.graph.meta["slots"][id(value)],
                                              self.graph.meta["within"][id(value)]))

    def inside(self, inner: Value, outer: Value, offset: int) -> bool:
        """Whether ``plan_memory`` placed ``inner`` at byte ``offset`` of ``outer``'s bytes."""
        slots, within = self.graph.meta["slots"], self.graph.meta["within"]
        return (not inner.is_constant and slots[id(inner)] == slots[id(outer)]
                and within[id(inner)] == within[id(outer)] + offset)

    def within_scratch(self, node: Node, offset: int, index: int = 0) -> None:
        """Push the address of byte ``offset`` of ``node``'s scratch buffer ``index`` (a
        region the op lays out itself, such as a loop body's arena)."""
        self.scratch(node, index)
        if offset:
            self.push(offset)
            self._add("i32.add")

    def place(self, raw: bytes) -> int:
        """Append ``raw`` to the weights (aligned) and return its offset among them; a
        ``("weight", k)`` record of another context's weights placed there becomes
        ``("weight", offset + k)``."""
        return self._place(np.frombuffer(raw, np.uint8))

    def replay(self, op: str, *args: Any, record: tuple[Any, ...] | None = None) -> None:
        """Record one instruction with its own record (lowered into another context)."""
        self._add(op, *args, record=record)

    def numel(self, shape: Shape) -> None:
        """Push the element count of ``shape``, multiplying in symbolic dims at run time."""
        self.push(math.prod(d for d in shape if isinstance(d, int)))
        for dim in shape:
            if isinstance(dim, str):
                self._add("local.get", self.dim_params[dim])
                self._add("i32.mul")

    def advance(self, elements: Shape, itemsize: int = 4) -> None:
        """Add ``product(elements) * itemsize`` bytes to the address on top of the stack."""
        self.numel(elements)
        self.push(itemsize)
        self._add("i32.mul")
        self._add("i32.add")

    def trap_unless(self, condition: Value, expected: bool) -> None:
        """Trap (``unreachable``) unless the bool ``condition`` (one byte) is ``expected``."""
        self.address(condition)
        self.emit("i32.load8_u", 0)
        if expected:
            self.emit("i32.eqz")
        for op in ("if", "unreachable", "end"):
            self.emit(op)

    def emit(self, op: str, *args: object) -> None:
        """Record one plain instruction (control flow, locals) for ``run``."""
        self._add(op, *args)

    def local(self) -> int:
        """A new i32 local of ``run`` (e.g. a loop counter); returns its index."""
        self.locals += 1
        return self.check.local("i32")

    def scratch(self, node: Node, index: int = 0) -> None:
        """Push the address of ``node``'s scratch buffer ``index`` (``OpDef.scratch``)."""
        self._add("i32.const", 0,
                  record=("arena", self.graph.meta["slots"][(id(node), index)], 0))

    def call(self, kernel: str) -> None:
        """Call kernel ``kernel`` of the ABI with the arguments pushed so far."""
        if kernel not in abi.BY_NAME:
            raise CompileError(f"no kernel {kernel!r} in ABI v{abi.VERSION}; "
                               f"available: {sorted(abi.BY_NAME)}")
        if kernel not in self.kernels:
            spec = abi.BY_NAME[kernel]
            self.kernels.append(kernel)
            self._callees.append((kernel, FuncType(spec.param_types, spec.results)))
        self._add("call", self.kernels.index(kernel), record=("kernel", kernel))


OUT_OF_MEMORY = ""
"""The message key (no dim has an empty name) of the error ``run`` reports when memory
cannot grow to what the dims need."""


def _message_segment(graph: Graph, base: int) -> tuple[bytes, dict[str, tuple[int, int]]]:
    blob = bytearray()
    where = {}
    texts = {name: f"dim {name!r} must be in [{low}, {high}]"
             for name, (low, high) in graph.dims.items()}
    if graph.dims:
        texts[OUT_OF_MEMORY] = "memory cannot grow to what these dims need"
    for key, text in texts.items():
        encoded = f"wasmnn model: {text}\n".encode()
        where[key] = (base + len(blob), len(encoded))
        blob += encoded
    return bytes(blob), where


def _guards(graph: Graph) -> list[Guard]:
    """Each node's ``meta["guard"]`` where it is safe to skip the node when the guard fails:
    its conditions are still computed before it and live after it, and every user of its
    outputs is skipped too (a guard that extends it) or is the ``where`` that merges the
    branch on its last condition. Otherwise the node runs unconditionally, which changes
    no output (see ``Guard``)."""
    position = {id(node): i for i, node in enumerate(graph.nodes)}
    defined = {id(v) for v in graph.inputs.values()} | {id(v) for n in graph.nodes
                                                        for v in n.outputs}
    guards: dict[int, Guard] = {}
    for node in reversed(graph.nodes):
        guard: Guard = node.meta.get("guard", ())
        here = position[id(node)]
        if not all(id(cond) in defined and (cond.producer is None
                                            or position.get(id(cond.producer), here) < here)
                   and any(position.get(id(u), -1) > here for u in cond.users)
                   for cond, _ in guard):
            guard = ()
        for user in (u for v in node.outputs for u in v.users):
            theirs = guards.get(id(user), ())
            merges = (guard and user.op == "where" and user.inputs[0] is guard[-1][0]
                      and theirs == guard[:-1])
            if theirs[:len(guard)] != guard and not merges:
                guard = ()
        guards[id(node)] = guard
    return [guards[id(node)] for node in graph.nodes]


def _enter(ctx: LowerContext, current: Guard, guard: Guard) -> Guard:
    """Close the wasm ``if`` blocks of ``current`` that ``guard`` does not share and open
    one per further condition of ``guard``: ``if (cond byte != 0)`` (``== 0`` for else)."""
    shared = 0
    while (shared < min(len(current), len(guard)) and current[shared][0] is guard[shared][0]
           and current[shared][1] == guard[shared][1]):
        shared += 1
    for _ in range(len(current) - shared):
        ctx.emit("end")
    for cond, truth in guard[shared:]:
        ctx.address(cond)
        ctx.emit("i32.load8_u", 0)
        if not truth:
            ctx.emit("i32.eqz")
        ctx.emit("if")
    return guard


def lower_nodes(ctx: LowerContext) -> None:
    """Lower every node of ``ctx.graph`` into ``ctx``, guarded nodes inside wasm ``if``s.

    Raises:
        CompileError: as ``lower``.
    """
    open_guard: Guard = ()
    for node, guard in zip(ctx.graph.nodes, _guards(ctx.graph)):
        open_guard = _enter(ctx, open_guard, guard)
        try:
            ops.get(node.op).lower(node, ctx)
            if ctx.check.stack:
                raise CompileError(f"the lowering leaves [{' '.join(map(str, ctx.check.stack))}] "
                                   "on the stack after its kernel calls")
        except (CompileError, WasmTypeError) as err:
            raise CompileError(f"while lowering {node.describe()}: {err}") from None
    _enter(ctx, open_guard, ())


def lower(graph: Graph, reserve: int = 0) -> tuple[LowerContext, Layout]:
    """Lower every node (after ``passes.optimize``) and lay out memory, keeping ``reserve``
    bytes at ``Layout.reserved_at`` before the weights for the caller.

    Raises:
        CompileError: an op cannot be lowered, or its lowering pushes arguments that do not
            fit its kernel calls, naming the node and the user's source line; or a dim's
            upper bound makes the model need more memory than wasm32 has; or the model has
            no input, or an input or output of a dtype the runtime does not take.
    """
    _check_dim_bounds(graph)
    check_interface(graph)
    ctx = LowerContext(graph)
    lower_nodes(ctx)
    messages, message_at = _message_segment(graph, SCRATCH_BYTES)
    layout = make_layout(graph, messages, message_at, SCRATCH_BYTES + len(messages), reserve,
                         len(ctx.weights))
    if layout.memory_bytes_max >= MAX_MEMORY_BYTES:
        bounds = ", ".join(f"{name!r} up to {high}" for name, (_, high) in graph.dims.items())
        raise CompileError(f"the model needs {layout.memory_bytes_max} bytes of memory"
                           f"{f' with dims {bounds}' if bounds else ''}, more than "
                           f"WebAssembly's {MAX_MEMORY_BYTES} (65536 pages): it could never "
                           "load; lower the dims' upper bounds")
    return ctx, layout


def _check_dim_bounds(graph: Graph) -> None:
    for name, (_, high) in graph.dims.items():
        if high > MAX_DIM:
            raise CompileError(f"dim {name!r} has upper bound {high}, over {MAX_DIM} (the "
                               "model takes each dim as an i32): lower it")


def report_error(code: Code, fd_write: int, pointer: int, length: int) -> None:
    """Emit: write the message at ``pointer`` to stderr (iovec in the scratch bytes)."""
    code.emit("i32.const", 0).emit("i32.const", pointer).emit("i32.store", 2)
    code.emit("i32.const", 4).emit("i32.const", length).emit("i32.store", 2)
    code.emit("i32.const", 2).emit("i32.const", 0).emit("i32.const", 1)
    code.emit("i32.const", 8).emit("call", fd_write).emit("drop")


def emit_records(code: Code, records: list[tuple[Any, ...]], layout: Layout,
                 kernel_index: dict[str, int]) -> None:
    """Emit lowered ``records`` with their addresses and kernel indices resolved."""
    for record in records:
        kind = record[0]
        if kind == "weight":
            code.emit("i32.const", layout.weights_base + record[1])
        elif kind == "arena":
            layout.push(code, record[1], record[2])
        elif kind == "kernel":
            code.emit("call", kernel_index[record[1]])
        else:
            code.emit(*record)


def run_function(builder: ModuleBuilder, ctx: LowerContext, layout: Layout,
                 kernel_index: dict[str, int], fd_write: int | None,
                 layout_index: int | None) -> int:
    """Add ``run(dims...) -> i32``, exported: check each dim's range (reporting on stderr,
    returning 1), lay out the arena for the dims (calling ``layout_index``, the function
    ``arena.layout_function`` added; reporting and returning 2 when memory cannot grow to
    it), then make the kernel calls and return 0. Returns its function index."""
    graph = ctx.graph
    ty = FuncType(("i32",) * len(graph.dims), ("i32",))
    code = builder.code(ty)
    for _ in range(ctx.locals):
        code.local("i32")
    for param, (name, (low, high)) in enumerate(graph.dims.items()):
        assert fd_write is not None
        code.emit("local.get", param).emit("i32.const", low).emit("i32.lt_u")
        code.emit("local.get", param).emit("i32.const", high).emit("i32.gt_u").emit("i32.or")
        code.emit("if")
        report_error(code, fd_write, *layout.message_at[name])
        code.emit("i32.const", 1).emit("return").emit("end")
    if layout_index is not None:
        assert fd_write is not None
        code.get(*range(len(graph.dims))).emit("call", layout_index)
        with code.if_():
            report_error(code, fd_write, *layout.message_at[OUT_OF_MEMORY])
            code.emit("i32.const", 2).emit("return")
    emit_records(code, ctx.records, layout, kernel_index)
    code.emit("i32.const", 0)
    return builder.add_function(ty, code, export="run")


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
    if graph.dims:
        extra["layout"] = {"entry": LAYOUT_EXPORT, "need_at": layout.need_at}
    tensors = {**graph.inputs, **graph.outputs}
    builder.add_custom(SECTION, encode_metadata(
        graph, producer=producer,
        offsets={n: (layout.address(graph, v), layout.offset_at(graph, v))
                 for n, v in tensors.items()},
        weights_bytes=len(ctx.weights), memory_bytes=layout.memory_bytes,
        memory_bytes_max=layout.memory_bytes_max, **extra))


def generate(graph: Graph, producer: str, sidecar: str | None = None) -> tuple[bytes, bytes]:
    """Encode ``graph`` (after ``passes.optimize``) as a model module that imports its
    memory, its kernels and (with symbolic dims) WASI ``fd_write``. Returns the module and
    its weight bytes (inside the module too, unless ``sidecar`` names the file for them).

    Raises:
        CompileError: an op cannot be lowered, naming the node and the user's source line.
    """
    ctx, layout = lower(graph)
    builder = ModuleBuilder(MODULE_NAME)
    builder.import_memory("env", "memory", MemoryType(Limits(layout.pages)))
    fd_write = builder.import_func(WASI, "fd_write", FD_WRITE) if graph.dims else None
    kernel_index = {}
    for name in ctx.kernels:
        spec = abi.BY_NAME[name]
        kernel_index[name] = builder.import_func(abi.MODULE, name,
                                                 FuncType(spec.param_types, spec.results))
    run_function(builder, ctx, layout, kernel_index, fd_write,
                 layout_function(builder, graph, layout) if graph.dims else None)
    builder.export("memory", "memory", 0)
    add_data_and_metadata(builder, ctx, layout, producer, sidecar)
    return builder.encode(), bytes(ctx.weights)
