"""The standalone flavour: one ``.wasm`` that needs only WASI, for any WASI engine.

It defines and exports its own memory, contains the bodies of the kernels it calls (and
only those; the portable ``simd128`` variant unless told otherwise), and its ``_start``:

1. reads all of stdin (growing memory as needed);
2. parses one ``.npy`` array per model input, concatenated in the metadata's input order
   (version 1-3 headers, ``'<f4'``, C order), checking shapes against the model;
3. calls ``run`` (which checks symbolic dims against their ranges);
4. writes one ``.npy`` array per output to stdout, concatenated in output order.

Errors are one line on stderr and exit code 1. ``numpy.load`` called repeatedly on the
output stream reads the results back.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from wasm_kernels import abi
from wasm_kernels.build import generate as generate_kernel
from wasm_kernels.wasm import Code, FuncType, GlobalType, Limits, MemoryType, ModuleBuilder

from .codegen import FD_WRITE, PAGE, WASI, Layout, add_data_and_metadata, lower, run_function
from .errors import CompileError
from .graph import Graph, Value

CHUNK = 1 << 16
NPY_MAGIC = 0x4D554E93  # b"\x93NUM" as a little-endian i32
NPY_MAGIC_TAIL = 0x5950  # b"PY"
HEADER_BYTES = 512
STRINGS_BYTES = 4096
I32 = ("i32",)


class Asm:
    """``Code`` with named locals and structured ``block``/``loop``/``if`` helpers."""

    def __init__(self, params: tuple[str, ...] = ()):
        self.code = Code(params)

    def __call__(self, op: str, *args: object) -> Asm:
        self.code.emit(op, *args)
        return self

    def local(self) -> int:
        return self.code.local("i32")

    def const(self, value: int) -> Asm:
        return self("i32.const", value)

    @contextmanager
    def if_(self) -> Iterator[None]:
        self("if")
        yield
        self("end")

    @contextmanager
    def loop(self) -> Iterator[None]:
        """``block { loop { body } }``: ``br 1`` breaks out, ``br 0`` continues."""
        self("block")("loop")
        yield
        self("br", 0)("end")("end")


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


def _helpers(builder: ModuleBuilder, fd_write: int, proc_exit: int, cursor: int
             ) -> dict[str, int]:
    """Functions shared by every input and output: fail, skip_spaces, read_uint, find,
    write_uint, write_all. Returns their indices."""
    index: dict[str, int] = {}

    fail = Asm(("i32", "i32"))
    fail.const(0)("local.get", 0)("i32.store", 2).const(4)("local.get", 1)("i32.store", 2)
    fail.const(2).const(0).const(1).const(8)("call", fd_write)("drop")
    fail.const(1)("call", proc_exit)("unreachable")
    index["fail"] = builder.add_function(FuncType(("i32", "i32"), ()), fail.code)

    skip = Asm(I32)
    with skip.loop():
        skip("local.get", 0)("i32.load8_u", 0).const(32)("i32.ne")("br_if", 1)
        skip("local.get", 0).const(1)("i32.add")("local.set", 0)
    skip("local.get", 0)
    index["skip_spaces"] = builder.add_function(FuncType(I32, I32), skip.code)

    # read_uint(p) -> value; global cursor = end of the digits; -1 when there are none.
    read = Asm(I32)
    value, digit, start = read.local(), read.local(), read.local()
    read("local.get", 0)("call", index["skip_spaces"])("local.tee", 0)("local.set", start)
    with read.loop():
        read("local.get", 0)("i32.load8_u", 0).const(48)("i32.sub")("local.tee", digit)
        read.const(9)("i32.gt_u")("br_if", 1)
        read("local.get", value).const(10)("i32.mul")("local.get", digit)("i32.add")
        read("local.set", value)("local.get", 0).const(1)("i32.add")("local.set", 0)
    read("local.get", 0)("global.set", cursor)
    read("local.get", 0)("local.get", start)("i32.eq")
    with read.if_():
        read.const(-1)("return")
    read("local.get", value)
    index["read_uint"] = builder.add_function(FuncType(I32, I32), read.code)

    # find(start, end, needle, needle_len) -> address just after the match, or -1.
    find = Asm(("i32",) * 4)
    j = find.local()
    with find.loop():
        find("local.get", 0)("local.get", 3)("i32.add")("local.get", 1)("i32.gt_u")("br_if", 1)
        find.const(0)("local.set", j)
        with find.loop():
            find("local.get", j)("local.get", 3)("i32.ge_u")
            with find.if_():
                find("local.get", 0)("local.get", 3)("i32.add")("return")
            find("local.get", 0)("local.get", j)("i32.add")("i32.load8_u", 0)
            find("local.get", 2)("local.get", j)("i32.add")("i32.load8_u", 0)("i32.ne")
            find("br_if", 1)
            find("local.get", j).const(1)("i32.add")("local.set", j)
        find("local.get", 0).const(1)("i32.add")("local.set", 0)
    find.const(-1)
    index["find"] = builder.add_function(FuncType(("i32",) * 4, I32), find.code)

    # write_uint(dst, value) -> dst after the decimal digits.
    write = Asm(("i32", "i32"))
    digits, rest = write.local(), write.local()
    write("local.get", 1)("local.set", rest)
    with write.loop():
        write("local.get", digits).const(1)("i32.add")("local.set", digits)
        write("local.get", rest).const(10)("i32.div_u")("local.tee", rest)("i32.eqz")
        write("br_if", 1)
    write("local.get", 0)("local.get", digits)("i32.add")("local.tee", 0)("local.set", rest)
    with write.loop():
        write("local.get", rest).const(1)("i32.sub")("local.tee", rest)
        write("local.get", 1).const(10)("i32.rem_u").const(48)("i32.add")("i32.store8", 0)
        write("local.get", 1).const(10)("i32.div_u")("local.tee", 1)("i32.eqz")("br_if", 1)
    write("local.get", 0)
    index["write_uint"] = builder.add_function(FuncType(("i32", "i32"), I32), write.code)

    # write_all(fd, ptr, len) -> errno: fd_write until every byte is out.
    out = Asm(("i32",) * 3)
    errno, written = out.local(), out.local()
    with out.loop():
        out("local.get", 2)("i32.eqz")("br_if", 1)
        out.const(0)("local.get", 1)("i32.store", 2).const(4)("local.get", 2)("i32.store", 2)
        out("local.get", 0).const(0).const(1).const(8)("call", fd_write)("local.tee", errno)
        with out.if_():
            out("local.get", errno)("return")
        out.const(8)("i32.load", 2)("local.tee", written)("i32.eqz")
        with out.if_():
            out.const(29)("return")  # EIO: the stream made no progress
        out("local.get", 1)("local.get", written)("i32.add")("local.set", 1)
        out("local.get", 2)("local.get", written)("i32.sub")("local.set", 2)
    out.const(0)
    index["write_all"] = builder.add_function(FuncType(("i32",) * 3, I32), out.code)
    return index


def _emit_numel(a: Asm, value: Value, dims: dict[str, int]) -> None:
    a.const(1)
    for d in value.shape:
        a("local.get", dims[d]) if isinstance(d, str) else a.const(d)
        a("i32.mul")


def _start_function(graph: Graph, layout: Layout, strings: _Strings, fn: dict[str, int],
                    fd_read: int, cursor: int, in_base: int, header: int) -> Code:
    a = Asm()
    length, got, p, end, q, value = (a.local() for _ in range(6))
    dims = {name: a.local() for name in graph.dims}

    def fail(message: bytes) -> None:
        pointer, size = strings(b"wasmnn model: " + message + b"\n")
        a.const(pointer).const(size)("call", fn["fail"])

    # 1. stdin -> memory at in_base, growing memory a chunk at a time.
    with a.loop():
        a.const(in_base)("local.get", length)("i32.add").const(CHUNK)("i32.add")
        a("memory.size").const(16)("i32.shl")("i32.gt_u")
        with a.if_():
            a.const(CHUNK // PAGE)("memory.grow").const(-1)("i32.eq")
            with a.if_():
                fail(b"stdin does not fit in memory")
        a.const(0).const(in_base)("local.get", length)("i32.add")("i32.store", 2)
        a.const(4).const(CHUNK)("i32.store", 2)
        a.const(0).const(0).const(1).const(8)("call", fd_read)
        with a.if_():
            fail(b"cannot read stdin")
        a.const(8)("i32.load", 2)("local.tee", got)("i32.eqz")("br_if", 1)
        a("local.get", length)("local.get", got)("i32.add")("local.set", length)
    a.const(in_base)("local.set", p)
    a.const(in_base)("local.get", length)("i32.add")("local.set", end)

    # 2. one .npy per input.
    for name, value_ in graph.inputs.items():
        shape_text = ", ".join(str(d) for d in value_.shape).encode()
        bad_shape = b"input '%s' must have shape (%s)" % (name.encode(), shape_text)
        a("local.get", p).const(10)("i32.add")("local.get", end)("i32.gt_u")
        a("local.get", p)("i32.load", 0).const(NPY_MAGIC)("i32.ne")("i32.or")
        a("local.get", p)("i32.load16_u", 0, 4).const(NPY_MAGIC_TAIL)("i32.ne")("i32.or")
        with a.if_():
            fail(b"expected a .npy array on stdin for input '%s'" % name.encode())
        # q = header start, value = header length (u16 in version 1, u32 after).
        a("local.get", p)("i32.load8_u", 0, 6).const(1)("i32.eq")
        a("if")
        a("local.get", p)("i32.load16_u", 0, 8)("local.set", value)
        a("local.get", p).const(10)("i32.add")("local.set", q)
        a("else")
        a("local.get", p)("i32.load", 0, 8)("local.set", value)
        a("local.get", p).const(12)("i32.add")("local.set", q)
        a("end")
        a("local.get", q)("local.get", value)("i32.add")("local.tee", p)  # p = data start
        a("local.get", end)("i32.gt_u")
        with a.if_():
            fail(b"truncated .npy header for input '%s'" % name.encode())
        for needle, problem in ((b"'descr': '<f4'", b"must be float32 ('<f4')"),
                                (b"'fortran_order': False", b"must be in C order")):
            pointer, size = strings(needle)
            a("local.get", q)("local.get", p).const(pointer).const(size)("call", fn["find"])
            a.const(-1)("i32.eq")
            with a.if_():
                fail(b"input '%s' %s" % (name.encode(), problem))
        pointer, size = strings(b"'shape': (")
        a("local.get", q)("local.get", p).const(pointer).const(size)("call", fn["find"])
        a("local.tee", q).const(-1)("i32.eq")
        with a.if_():
            fail(bad_shape)
        for dim in value_.shape:
            a("local.get", q)("call", fn["read_uint"])("local.set", value)
            a("global.get", cursor)("call", fn["skip_spaces"])("local.tee", q)
            a("i32.load8_u", 0).const(ord(","))("i32.eq")
            with a.if_():
                a("local.get", q).const(1)("i32.add")("local.set", q)
            if isinstance(dim, int):
                a("local.get", value).const(dim)("i32.ne")
                with a.if_():
                    fail(bad_shape)
                continue
            # A symbolic dim is range-checked before any copy, bound at its first use,
            # and must agree at later uses.
            low, high = graph.dims[dim]
            a("local.get", value).const(low)("i32.lt_u")
            a("local.get", value).const(high)("i32.gt_u")("i32.or")
            with a.if_():
                fail(b"dim '%s' must be in [%d, %d]" % (dim.encode(), low, high))
            a("local.get", dims[dim])("i32.eqz")
            with a.if_():
                a("local.get", value)("local.set", dims[dim])
            a("local.get", dims[dim])("local.get", value)("i32.ne")
            with a.if_():
                fail(bad_shape)
        a("local.get", q)("call", fn["skip_spaces"])("i32.load8_u", 0).const(ord(")"))("i32.ne")
        with a.if_():
            fail(bad_shape)
        _emit_numel(a, value_, dims)
        a.const(4)("i32.mul")("local.set", value)
        a("local.get", p)("local.get", value)("i32.add")("local.get", end)("i32.gt_u")
        with a.if_():
            fail(b"input '%s' has fewer data bytes than its shape needs" % name.encode())
        a.const(layout.address(graph, value_))("local.get", p)("local.get", value)
        a("memory.copy")
        a("local.get", p)("local.get", value)("i32.add")("local.set", p)

    # 3. run (it checks dim ranges and reports on stderr).
    for name in graph.dims:
        a("local.get", dims[name])
    a("call", fn["run"])
    with a.if_():
        a.const(1)("call", fn["proc_exit"])

    # 4. one .npy per output: header built at `header`, then the data.
    prefix = b"\x93NUMPY\x01\x00\x00\x00{'descr': '<f4', 'fortran_order': False, 'shape': ("
    for value_ in graph.outputs.values():
        pointer, size = strings(prefix)
        a.const(header).const(pointer).const(size)("memory.copy")
        a.const(header + size)("local.set", q)
        for dim in value_.shape:
            a("local.get", q)
            a("local.get", dims[dim]) if isinstance(dim, str) else a.const(dim)
            a("call", fn["write_uint"])("local.tee", q).const(ord(","))("i32.store8", 0)
            a("local.get", q).const(1)("i32.add")("local.set", q)
            if len(value_.shape) > 1:
                a("local.get", q).const(ord(" "))("i32.store8", 0)
                a("local.get", q).const(1)("i32.add")("local.set", q)
        pointer, size = strings(b"), }")
        a("local.get", q).const(pointer).const(size)("memory.copy")
        a("local.get", q).const(size)("i32.add")("local.set", q)
        # Pad with spaces so the data starts 64-byte aligned, then end with a newline.
        a("local.get", q).const(ord(" ")).const(header + 63)("local.get", q)("i32.sub")
        a.const(63)("i32.and")("local.tee", value)("memory.fill")
        a("local.get", q)("local.get", value)("i32.add")("local.tee", q).const(ord("\n"))
        a("i32.store8", 0)
        a.const(header)("local.get", q).const(header + 9)("i32.sub")("i32.store16", 0, 8)
        a.const(1).const(header)("local.get", q).const(header - 1)("i32.sub")
        a("call", fn["write_all"])("drop")
        a.const(1).const(layout.address(graph, value_))
        _emit_numel(a, value_, dims)
        a.const(4)("i32.mul")("call", fn["write_all"])
        with a.if_():
            fail(b"cannot write stdout")
    return a.code


def generate_standalone(graph: Graph, producer: str, isa: str = "simd128") -> bytes:
    """Encode ``graph`` (after ``passes.optimize``) as a WASI command needing nothing else.

    Raises:
        CompileError: an op cannot be lowered.
        ValueError: ``isa`` is not a kernel ISA.
    """
    ctx, layout = lower(graph)
    strings = _Strings(-(-layout.memory_bytes // 16) * 16)
    header = strings.base + STRINGS_BYTES
    in_base = header + HEADER_BYTES
    builder = ModuleBuilder()
    fd_read = builder.import_func(WASI, "fd_read", FD_WRITE)  # the same iovec signature
    fd_write = builder.import_func(WASI, "fd_write", FD_WRITE)
    proc_exit = builder.import_func(WASI, "proc_exit", FuncType(I32, ()))
    builder.add_memory(MemoryType(Limits(-(-(in_base + CHUNK) // PAGE))))
    builder.export("memory", "memory", 0)
    cursor = builder.add_global(GlobalType("i32", True), Code(()).emit("i32.const", 0))
    fn = _helpers(builder, fd_write, proc_exit, cursor)
    fn["proc_exit"] = proc_exit
    kernel_index = {}
    for name in ctx.kernels:
        ty, body = generate_kernel(abi.BY_NAME[name], isa)
        kernel_index[name] = builder.add_function(ty, body)
    fn["run"] = builder.add_function(FuncType(("i32",) * len(graph.dims), I32),
                                     run_function(ctx, layout, kernel_index, fd_write),
                                     export="run")
    start = _start_function(graph, layout, strings, fn, fd_read, cursor, in_base, header)
    if len(strings.blob) > STRINGS_BYTES:
        raise CompileError(f"the standalone module's messages need {len(strings.blob)} bytes, "
                           f"over the {STRINGS_BYTES} reserved (very long input names?)")
    builder.add_function(FuncType((), ()), start, export="_start")
    builder.add_data(strings.base, bytes(strings.blob))
    add_data_and_metadata(builder, ctx, layout, producer, standalone=True, isa=isa)
    return builder.encode()
