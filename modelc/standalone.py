"""The standalone flavour: one ``.wasm`` that needs only WASI, for any WASI engine.

It defines and exports its own memory, contains the bodies of the kernels it calls (and
only those; the portable ``simd128`` variant unless told otherwise), and its ``_start``:

1. reads all of stdin (growing memory as needed) to the end of the arena at the dims'
   smallest values;
2. parses one ``.npy`` array per model input, concatenated in the metadata's input order
   (version 1-3 headers, each in its input's dtype as numpy writes it: ``'<f4'``,
   ``'<i8'``, ``'|u1'``, ``'|b1'``...; C order), checking shapes against the model and
   binding the symbolic dims;
3. lays out the arena for those dims (``layout``: memory grows to what they need), moves
   the stdin bytes above it when it reaches them, and copies the inputs in;
4. calls ``run`` (which checks symbolic dims against their ranges);
5. writes one ``.npy`` array per output to stdout, concatenated in output order.

Errors are one line on stderr and exit code 1. ``numpy.load`` called repeatedly on the
output stream reads the results back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wasm_kernels import abi
from wasm_kernels.build import generate as generate_kernel
from wasm_kernels.wasm import Code, FuncType, GlobalType, Limits, MemoryType, ModuleBuilder

from .arena import ALIGN, Layout, layout_function
from .codegen import (
    FD_WRITE,
    MODULE_NAME,
    PAGE,
    WASI,
    add_data_and_metadata,
    lower,
    run_function,
)
from .errors import CompileError
from .graph import Graph, Value
from .standalone_io import I32, helpers

CHUNK = 1 << 16
NPY_MAGIC = 0x4D554E93  # b"\x93NUM" as a little-endian i32
NPY_MAGIC_TAIL = 0x5950  # b"PY"
HEADER_BYTES = 512
STRINGS_BYTES = 4096


class _Strings:
    """Constant byte strings placed after the model's memory."""

    def __init__(self, base: int):
        self.base = base
        self.blob = bytearray()
        self.where: dict[bytes, tuple[int, int]] = {}

    def __call__(self, text: bytes) -> tuple[int, int]:
        if text not in self.where:
            self.where[text] = (self.base + len(self.blob), len(text))
            self.blob += text
        return self.where[text]


@dataclass
class _Start:
    """The ``_start`` function under construction: its code (locals named), the locals of
    the symbolic dims, the message strings, the helper functions and the cursor global."""

    c: Code
    dims: dict[str, int]
    strings: _Strings
    fn: dict[str, int]
    cursor: int
    layout: Layout

    def dim(self, dim: int | str) -> None:
        """Push a dim: a constant, or the local a symbolic dim is bound to."""
        if isinstance(dim, str):
            self.c.get(self.dims[dim])
        else:
            self.c.emit("i32.const", dim)

    def fail(self, message: bytes) -> None:
        pointer, size = self.strings(b"wasmnn model: " + message + b"\n")
        self.c.emit("i32.const", pointer).emit("i32.const", size).emit("call", self.fn["fail"])

    def find(self, needle: bytes) -> None:
        """Push the address after ``needle`` between q and p, or -1."""
        pointer, size = self.strings(needle)
        self.c.get("q", "p").emit("i32.const", pointer).emit("i32.const", size)
        self.c.emit("call", self.fn["find"])


def _emit_numel(s: _Start, value: Value) -> None:
    s.c.emit("i32.const", 1)
    for d in value.shape:
        s.dim(d)
        s.c.emit("i32.mul")


def _read_stdin(s: _Start, fd_read: int, in_base: int) -> None:
    """stdin -> memory at in_base, growing memory a chunk at a time; p, end = its bounds."""
    c = s.c
    with c.loop():
        c.emit("i32.const", in_base).get("length").emit("i32.add")
        c.emit("i32.const", CHUNK).emit("i32.add")
        c.emit("memory.size").emit("i32.const", 16).emit("i32.shl").emit("i32.gt_u")
        with c.if_():
            c.emit("i32.const", CHUNK // PAGE).emit("memory.grow")
            c.emit("i32.const", -1).emit("i32.eq")
            with c.if_():
                s.fail(b"stdin does not fit in memory")
        c.emit("i32.const", 0).emit("i32.const", in_base).get("length").emit("i32.add")
        c.emit("i32.store", 2)
        c.emit("i32.const", 4).emit("i32.const", CHUNK).emit("i32.store", 2)
        for iovec_argument in (0, 0, 1, 8):
            c.emit("i32.const", iovec_argument)
        c.emit("call", fd_read)
        with c.if_():
            s.fail(b"cannot read stdin")
        c.emit("i32.const", 8).emit("i32.load", 2).tee("got").emit("i32.eqz").emit("br_if", 1)
        c.get("length", "got").emit("i32.add").set("length")
    c.emit("i32.const", in_base).set("p")
    c.emit("i32.const", in_base).get("length").emit("i32.add").set("end")


def _read_header(s: _Start, name: bytes) -> None:
    """Check the .npy magic at p; q = the header's start, p = the data's start."""
    c = s.c
    c.get("p").emit("i32.const", 10).emit("i32.add").get("end").emit("i32.gt_u")
    c.get("p").emit("i32.load", 0).emit("i32.const", NPY_MAGIC).emit("i32.ne").emit("i32.or")
    c.get("p").emit("i32.load16_u", 0, 4).emit("i32.const", NPY_MAGIC_TAIL).emit("i32.ne")
    c.emit("i32.or")
    with c.if_():
        s.fail(b"expected a .npy array on stdin for input '%s'" % name)
    # q = header start, value = header length (u16 in version 1, u32 after).
    c.get("p").emit("i32.load8_u", 0, 6).emit("i32.const", 1).emit("i32.eq")
    c.emit("if")
    c.get("p").emit("i32.load16_u", 0, 8).set("value")
    c.get("p").emit("i32.const", 10).emit("i32.add").set("q")
    c.emit("else")
    c.get("p").emit("i32.load", 0, 8).set("value")
    c.get("p").emit("i32.const", 12).emit("i32.add").set("q")
    c.emit("end")
    c.get("q", "value").emit("i32.add").tee("p")  # p = data start
    c.get("end").emit("i32.gt_u")
    with c.if_():
        s.fail(b"truncated .npy header for input '%s'" % name)


def _read_dim(s: _Start, graph: Graph, dim: int | str, bad_shape: bytes) -> None:
    """Parse one dim of the header's shape at q and check it (binding a symbolic dim)."""
    c = s.c
    c.get("q").emit("call", s.fn["read_uint"]).set("value")
    c.emit("global.get", s.cursor).emit("call", s.fn["skip_spaces"]).tee("q")
    c.emit("i32.load8_u", 0).emit("i32.const", ord(",")).emit("i32.eq")
    with c.if_():
        c.get("q").emit("i32.const", 1).emit("i32.add").set("q")
    if isinstance(dim, int):
        c.get("value").emit("i32.const", dim).emit("i32.ne")
        with c.if_():
            s.fail(bad_shape)
        return
    # A symbolic dim is range-checked before any copy, bound at its first use, and must
    # agree at later uses.
    low, high = graph.dims[dim]
    c.get("value").emit("i32.const", low).emit("i32.lt_u")
    c.get("value").emit("i32.const", high).emit("i32.gt_u").emit("i32.or")
    with c.if_():
        s.fail(b"dim '%s' must be in [%d, %d]" % (dim.encode(), low, high))
    c.get(s.dims[dim]).emit("i32.eqz")
    with c.if_():
        c.get("value").set(s.dims[dim])
    c.get(s.dims[dim], "value").emit("i32.ne")
    with c.if_():
        s.fail(bad_shape)


def _descr(value: Value) -> bytes:
    """The ``.npy`` header's ``descr`` of ``value``'s dtype, as numpy writes it."""
    return np.dtype(value.dtype).str.encode()


def _itemsize(value: Value) -> int:
    return np.dtype(value.dtype).itemsize


def _read_input(s: _Start, graph: Graph, name: str, value: Value, data: int) -> None:
    """Parse one .npy at p, check its dtype, order and shape; local ``data`` = where its
    data starts."""
    c, encoded = s.c, name.encode()
    shape_text = ", ".join(str(d) for d in value.shape).encode()
    bad_shape = b"input '%s' must have shape (%s)" % (encoded, shape_text)
    _read_header(s, encoded)
    descr = _descr(value)
    for needle, problem in ((b"'descr': '%s'" % descr,
                             b"must be %s ('%s')" % (value.dtype.encode(), descr)),
                            (b"'fortran_order': False", b"must be in C order")):
        s.find(needle)
        c.emit("i32.const", -1).emit("i32.eq")
        with c.if_():
            s.fail(b"input '%s' %s" % (encoded, problem))
    s.find(b"'shape': (")
    c.tee("q").emit("i32.const", -1).emit("i32.eq")
    with c.if_():
        s.fail(bad_shape)
    for dim in value.shape:
        _read_dim(s, graph, dim, bad_shape)
    c.get("q").emit("call", s.fn["skip_spaces"]).emit("i32.load8_u", 0)
    c.emit("i32.const", ord(")")).emit("i32.ne")
    with c.if_():
        s.fail(bad_shape)
    _emit_numel(s, value)
    c.emit("i32.const", _itemsize(value)).emit("i32.mul").set("value")
    c.get("p", "value").emit("i32.add").get("end").emit("i32.gt_u")
    with c.if_():
        s.fail(b"input '%s' has fewer data bytes than its shape needs" % encoded)
    c.get("p").set(data)
    c.get("p", "value").emit("i32.add").set("p")


def _grow_to(s: _Start, end_local: str, message: bytes) -> None:
    """Grow memory to hold the bytes below the address in local ``end_local``."""
    c = s.c
    c.get(end_local).emit("i32.const", PAGE - 1).emit("i32.add").emit("i32.const", 16)
    c.emit("i32.shr_u").emit("memory.size").emit("i32.sub").tee("value")
    c.emit("i32.const", 0).emit("i32.gt_s")
    with c.if_():
        c.get("value").emit("memory.grow").emit("i32.const", -1).emit("i32.eq")
        with c.if_():
            s.fail(message)


def _place_inputs(s: _Start, graph: Graph, layout: Layout, in_base: int, data: list[int]
                  ) -> None:
    """Lay out the arena for the bound dims, move stdin's bytes (at in_base, up to end)
    above it if it reaches them, and copy each input in from its ``data`` local."""
    c = s.c
    if graph.dims:
        c.get(*s.dims.values()).emit("call", s.fn["layout"])
        with c.if_():
            s.fail(b"memory cannot grow to what these dims need")
        c.emit("i32.const", layout.need_at).emit("i32.load", 2)
        c.emit("i32.const", ALIGN - 1).emit("i32.add").emit("i32.const", -ALIGN)
        c.emit("i32.and").tee("q").emit("i32.const", in_base).emit("i32.gt_u")
        with c.if_():
            # q = the new base; p = how far the bytes move; end = their new end.
            c.get("q").emit("i32.const", in_base).emit("i32.sub").set("p")
            c.get("end", "p").emit("i32.add").set("end")
            _grow_to(s, "end", b"stdin does not fit in memory above the arena")
            c.get("q").emit("i32.const", in_base).get("length").emit("memory.copy")
            for local in data:
                c.get(local, "p").emit("i32.add").set(local)
    for value, local in zip(graph.inputs.values(), data):
        s.layout.push_value(c, graph, value)
        c.get(local)
        _emit_numel(s, value)
        c.emit("i32.const", _itemsize(value)).emit("i32.mul").emit("memory.copy")


def _push(c: Code, *values: int) -> None:
    for value in values:
        c.emit("i32.const", value)


def _write_output(s: _Start, graph: Graph, layout: Layout, value: Value, header: int) -> None:
    """Build the .npy header at ``header`` and write it, then the output's data."""
    c = s.c
    pointer, size = s.strings(b"\x93NUMPY\x01\x00\x00\x00{'descr': '%s', "
                              b"'fortran_order': False, 'shape': (" % _descr(value))
    _push(c, header, pointer, size)
    c.emit("memory.copy")
    c.emit("i32.const", header + size).set("q")
    for dim in value.shape:
        c.get("q")
        s.dim(dim)
        c.emit("call", s.fn["write_uint"]).tee("q").emit("i32.const", ord(","))
        c.emit("i32.store8", 0)
        c.get("q").emit("i32.const", 1).emit("i32.add").set("q")
        if len(value.shape) > 1:
            c.get("q").emit("i32.const", ord(" ")).emit("i32.store8", 0)
            c.get("q").emit("i32.const", 1).emit("i32.add").set("q")
    pointer, size = s.strings(b"), }")
    c.get("q").emit("i32.const", pointer).emit("i32.const", size).emit("memory.copy")
    c.get("q").emit("i32.const", size).emit("i32.add").set("q")
    # Pad with spaces so the data starts 64-byte aligned, then end with a newline.
    c.get("q").emit("i32.const", ord(" ")).emit("i32.const", header + 63).get("q")
    c.emit("i32.sub").emit("i32.const", 63).emit("i32.and").tee("value").emit("memory.fill")
    c.get("q", "value").emit("i32.add").tee("q").emit("i32.const", ord("\n"))
    c.emit("i32.store8", 0)
    c.emit("i32.const", header).get("q").emit("i32.const", header + 9).emit("i32.sub")
    c.emit("i32.store16", 0, 8)
    _push(c, 1, header)
    c.get("q").emit("i32.const", header - 1).emit("i32.sub")
    c.emit("call", s.fn["write_all"]).emit("drop")
    c.emit("i32.const", 1)
    layout.push_value(c, graph, value)
    _emit_numel(s, value)
    c.emit("i32.const", _itemsize(value)).emit("i32.mul").emit("call", s.fn["write_all"])
    with c.if_():
        s.fail(b"cannot write stdout")


def _start_function(builder: ModuleBuilder, graph: Graph, layout: Layout, strings: _Strings,
                    fn: dict[str, int], fd_read: int, cursor: int, in_base: int,
                    header: int) -> int:
    """Add ``_start``: read stdin, parse the inputs, call run, write the outputs.

    Raises:
        CompileError: the messages overflow the space reserved for them.
    """
    c = builder.code(FuncType((), ()))
    for local in ("length", "got", "p", "end", "q", "value"):
        c.local("i32", local)
    dims = {name: c.local("i32", f"dim_{name}") for name in graph.dims}
    data = [c.local("i32") for _ in graph.inputs]
    s = _Start(c, dims, strings, fn, cursor, layout)
    _read_stdin(s, fd_read, in_base)
    for (name, value), where in zip(graph.inputs.items(), data):
        _read_input(s, graph, name, value, where)
    _place_inputs(s, graph, layout, in_base, data)
    # run checks dim ranges and reports on stderr.
    c.get(*dims.values()).emit("call", fn["run"])
    with c.if_():
        c.emit("i32.const", 1).emit("call", fn["proc_exit"])
    for value in graph.outputs.values():
        _write_output(s, graph, layout, value, header)
    if len(strings.blob) > STRINGS_BYTES:
        raise CompileError(f"the standalone module's messages need {len(strings.blob)} bytes, "
                           f"over the {STRINGS_BYTES} reserved (very long input names?)")
    return builder.add_function(FuncType((), ()), c, export="_start")


def generate_standalone(graph: Graph, producer: str, isa: str = "simd128") -> bytes:
    """Encode ``graph`` (after ``passes.optimize``) as a WASI command needing nothing else.

    Raises:
        CompileError: an op cannot be lowered.
        ValueError: ``isa`` is not a kernel ISA.
    """
    ctx, layout = lower(graph, reserve=STRINGS_BYTES + HEADER_BYTES)
    strings = _Strings(layout.reserved_at)
    header = strings.base + STRINGS_BYTES
    in_base = -(-layout.memory_bytes // ALIGN) * ALIGN
    builder = ModuleBuilder(MODULE_NAME)
    fd_read = builder.import_func(WASI, "fd_read", FD_WRITE)  # the same iovec signature
    fd_write = builder.import_func(WASI, "fd_write", FD_WRITE)
    proc_exit = builder.import_func(WASI, "proc_exit", FuncType(I32, ()))
    builder.add_memory(MemoryType(Limits(-(-(in_base + CHUNK) // PAGE))))
    builder.export("memory", "memory", 0)
    cursor = builder.add_global(GlobalType("i32", True),
                                Code((), I32).emit("i32.const", 0))
    fn = helpers(builder, fd_write, proc_exit, cursor)
    kernel_index = {}
    for name in ctx.kernels:
        ty, body = generate_kernel(abi.BY_NAME[name], isa)
        kernel_index[name] = builder.add_function(ty, body, name=name)
    if graph.dims:
        fn["layout"] = layout_function(builder, graph, layout)
    fn["run"] = run_function(builder, ctx, layout, kernel_index, fd_write, fn.get("layout"))
    _start_function(builder, graph, layout, strings, fn, fd_read, cursor, in_base, header)
    builder.add_data(strings.base, bytes(strings.blob))
    add_data_and_metadata(builder, ctx, layout, producer, standalone=True, isa=isa)
    return builder.encode()
