"""The binary-format layer against wabt (an independent encoder/decoder)."""

import shutil
import subprocess

import pytest

from wasm_kernels.wasm import (
    OPCODES,
    Code,
    FuncType,
    GlobalType,
    Limits,
    MemoryType,
    ModuleBuilder,
    WasmFormatError,
    read_module,
)
from wasm_kernels.wasm.encode import sleb, uleb

wabt = pytest.mark.skipif(shutil.which("wasm2wat") is None, reason="wabt is not installed")


@pytest.mark.parametrize("value, encoded", [(0, b"\x00"), (127, b"\x7f"), (128, b"\x80\x01"),
                                            (624485, b"\xe5\x8e\x26")])
def test_uleb(value, encoded):
    assert uleb(value) == encoded


@pytest.mark.parametrize("value, encoded", [(0, b"\x00"), (-1, b"\x7f"), (63, b"\x3f"),
                                            (64, b"\xc0\x00"), (-123456, b"\xc0\xbb\x78")])
def test_sleb(value, encoded):
    assert sleb(value) == encoded


def _module() -> bytes:
    b = ModuleBuilder()
    b.import_memory("env", "memory", MemoryType(Limits(1, 4)))
    b.import_func("host", "log", FuncType(("i32", "f32"), ()))
    b.add_global(GlobalType("i32", True), Code((), ("i32",)).emit("i32.const", -7))
    c = b.code(FuncType(("i32",), ("i32",)))
    v = c.local("v128")
    c.emit("local.get", 0).emit("v128.load", 4, 16).emit("local.set", v)
    c.emit("local.get", 0).emit("local.get", v).emit("local.get", v).emit("f32x4.mul")
    c.emit("v128.store", 4, 0)
    c.emit("local.get", 0).emit("f32.const", 1.5).emit("call", 0)
    c.emit("i32.const", 0xFFFFFFFF)
    b.add_function(FuncType(("i32",), ("i32",)), c, export="f")
    b.add_data(64, b"hello")
    b.add_custom("note", b"\x01\x02")
    return b.encode()


def test_reader_round_trips_the_interface():
    info = read_module(_module())
    assert [(i.module, i.name, i.type) for i in info.imports] == [
        ("env", "memory", MemoryType(Limits(1, 4))),
        ("host", "log", FuncType(("i32", "f32"), ()))]
    assert [(e.name, e.kind, e.type) for e in info.exports] == [
        ("f", "func", FuncType(("i32",), ("i32",)))]
    assert info.custom("note") == b"\x01\x02"
    assert info.custom("missing") is None


@wabt
def test_wabt_validates_and_prints_what_we_encode(tmp_path):
    path = tmp_path / "m.wasm"
    path.write_bytes(_module())
    subprocess.run(["wasm-validate", str(path)], check=True)
    text = subprocess.run(["wasm2wat", str(path)], check=True, capture_output=True,
                          text=True).stdout
    for fragment in ("v128.load offset=16", "f32x4.mul", "f32.const 0x1.8p+0", "i32.const -1",
                     '(data (;0;) (i32.const 64) "hello")', "(global (;0;) (mut i32)"):
        assert fragment in text


ZEROS = {"i32": ("i32.const", 0), "i64": ("i64.const", 0), "f32": ("f32.const", 0.0),
         "f64": ("f64.const", 0.0), "v128": ("v128.const", bytes(16))}
"""An instruction that pushes a value of each type."""

RULED = {"unreachable": [], "br": [], "return": [], "br_if": [("i32.const", 0)],
         "drop": [("i32.const", 0)], "select": [("i32.const", 0)] * 3, "local.get": [],
         "local.set": [("i32.const", 0)], "local.tee": [("i32.const", 0)], "global.get": [],
         "global.set": [("i32.const", 0)]}
"""What the instructions without a fixed signature need on the stack, alone in a body."""


def _alone(b: ModuleBuilder, name: str) -> None:
    """A function whose body is ``name`` with its operands pushed and its results dropped."""
    immediates = {"u32": (0,), "memarg": (0, 0), "i32": (1,), "i64": (1,), "f32": (1.0,),
                  "f64": (1.0,), "v128": (bytes(16),), "lane": (0,)}
    row = OPCODES[name]
    if row.prefix == 0xFE:  # an atomic access must state its natural alignment
        immediates["memarg"] = (3 if name.startswith("i64.") else 2, 0)
    c = b.code(FuncType((), ()))
    c.local("i32")
    for setup in RULED[name] if row.pops is None else [ZEROS[t] for t in row.pops]:
        c.emit(*setup)
    c.emit(name, *immediates.get(row.immediate, ()))
    for _ in row.pushes or (("i32",) if name in ("select", "local.get", "local.tee",
                                                  "global.get") else ()):
        c.emit("drop")
    b.add_function(FuncType((), ()), c)


# Debian's wabt prints the relaxed dot under its pre-standard name.
WABT_NAMES = {"i32x4.relaxed_dot_i8x16_i7x16_add_s": "i32x4.dot_i8x16_i7x16_add_s"}


@wabt
def test_every_opcode_row_encodes_to_what_wabt_decodes(tmp_path):
    # Each instruction alone in a function body, checked by wasm2wat's disassembly.
    b = ModuleBuilder()
    b.import_memory("env", "memory", MemoryType(Limits(1, 1), shared=True))  # for atomics
    b.add_global(GlobalType("i32", True), Code((), ("i32",)).emit("i32.const", 0))
    names = sorted(n for n in OPCODES if n not in ("block", "loop", "if", "else", "end", "call"))
    for name in names:
        _alone(b, name)
    path = tmp_path / "ops.wasm"
    path.write_bytes(b.encode())
    features = ["--enable-relaxed-simd", "--enable-threads"]
    subprocess.run(["wasm-validate", *features, str(path)], check=True)
    text = subprocess.run(["wasm2wat", *features, str(path)],
                          check=True, capture_output=True, text=True).stdout
    bodies = text.split("(func (;")[1:]
    assert len(bodies) == len(names)
    for name, body in zip(names, bodies):
        printed = (name, WABT_NAMES.get(name, name))
        assert any(f"\n    {p}" in body for p in printed), f"{name} decoded as {body.strip()}"


@pytest.mark.parametrize("data, message", [
    (b"\0asm\x01\0\0\0\x01", "unexpected end of data"),
    (b"\0asm\x01\0\0\0\x01\x05\x01\x60\x01\x55\x00", "invalid value type 0x55"),
    (b"\0asm\x01\0\0\0\x0e\x00", "unknown section id 14"),
    (b"\0asm\x01\0\0\0\x07\x05\x01\x01f\x00\x03", "names func 3, but the module has 0"),
    (b"\0asm\x01\0\0\0\x00\x03\x02\xff\xfe", "malformed UTF-8"),
])
def test_malformed_binaries_name_the_problem(data, message):
    with pytest.raises(WasmFormatError, match=message):
        read_module(data)
