"""The text printer against wabt: what it prints, wat2wasm turns back into the same module;
and the decoder reads back exactly the instructions the builder recorded."""

from __future__ import annotations

import dataclasses
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from wasm_kernels import abi
from wasm_kernels.build import build, generate
from wasm_kernels.show import main as show
from wasm_kernels.wasm import Limits, MemoryType, ModuleBuilder, WasmFormatError
from wasm_kernels.wasm.disassemble import Instruction, Module, disassemble
from wasm_kernels.wasm.opcodes import MEMARG, OPCODES
from wasm_kernels.wasm.text import module_text

wabt = pytest.mark.skipif(shutil.which("wat2wasm") is None, reason="wabt is not installed")

KERNELS = [("f32_linear", "relaxed"), ("f32_gather", "simd128"), ("f32_log", "scalar"),
           ("f32_conv2d", "simd128"), ("f32_softmax", "relaxed"), ("f32_where", "simd128")]


def _normal(instructions: list[Instruction]) -> list[tuple[str, tuple]]:
    """Immediates as the binary holds them: floats by their bits (NaN payloads), a memarg
    with its offset, a block without a result as no immediate."""
    out = []
    for op, args in instructions:
        kind = OPCODES[op].immediate
        if kind == MEMARG:
            args = (tuple(args) + (0, 0))[:2]
        elif kind in ("f32", "f64"):
            args = (struct.pack("<f" if kind == "f32" else "<d", args[0]),)
        elif kind == "block" and args == (None,):
            args = ()
        out.append((op, tuple(bytes(a) if isinstance(a, bytes) else a for a in args)))
    return out


def _contents(module: Module) -> dict[str, object]:
    """What the binary says apart from names and custom sections."""
    fields = dataclasses.asdict(module)
    for key in ("customs", "name", "function_names", "local_names"):
        fields.pop(key)
    fields["functions"] = [(f.type_index, f.locals, _normal(f.instructions))
                           for f in module.functions]
    return fields


def _wat2wasm(text: str, tmp_path: Path) -> bytes:
    wat, wasm = tmp_path / "m.wat", tmp_path / "m.wasm"
    wat.write_text(text)
    subprocess.run(["wat2wasm", "--enable-relaxed-simd", str(wat), "-o", str(wasm)],
                   check=True)
    return wasm.read_bytes()


@wabt
@pytest.mark.parametrize("kernel, isa", KERNELS)
def test_a_printed_kernel_round_trips_through_wat2wasm(kernel: str, isa: str,
                                                       tmp_path: Path) -> None:
    wasm = build(isa, frozenset({kernel}))
    text = module_text(wasm)
    assert f"(module ${abi.MODULE}" in text and f"(func ${kernel} (;0;)" in text
    assert _contents(disassemble(_wat2wasm(text, tmp_path))) == _contents(disassemble(wasm))


@pytest.mark.parametrize("kernel, isa", KERNELS)
def test_the_decoder_reads_back_the_builders_instructions(kernel: str, isa: str) -> None:
    _, code = generate(abi.BY_NAME[kernel], isa)
    (function,) = disassemble(build(isa, frozenset({kernel}))).functions
    assert function.locals == list(code.locals)
    assert _normal(function.instructions) == _normal(code.instructions)


@wabt
def test_a_standalone_model_round_trips_and_shows_its_names(tmp_path: Path) -> None:
    import modelc
    import nn
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU()).eval()
    wasm = modelc.export(model, (np.zeros((2, 4), np.float32),), standalone=True,
                         dynamic={"input0": {0: ("batch", 1, 8)}})
    text = module_text(wasm)
    fd_read = '(import "wasi_snapshot_preview1" "fd_read" (func $fd_read (;0;)'
    for fragment in ("(module $wasmnn_model", fd_read, "(func $read_uint (;5;)", "local.tee 0 (;p;)",
                     "(func $_start", "(global (;0;) (mut i32) (i32.const 0))",
                     ";; custom section 'wasmnn.model'"):
        assert fragment in text
    assert _contents(disassemble(_wat2wasm(text, tmp_path))) == _contents(disassemble(wasm))
    path = tmp_path / "standalone.wasm"
    path.write_bytes(wasm)
    subprocess.run(["wasm-validate", str(path)], check=True)


@wabt
def test_data_of_every_byte_round_trips_short_and_long(tmp_path: Path) -> None:
    b = ModuleBuilder("data")
    b.add_memory(MemoryType(Limits(2)))
    b.add_data(0, b'say "hi"\\\n' + bytes(range(256)))
    b.add_data(1024, bytes(range(256)) * 300)  # longer than READABLE_BYTES
    wasm = b.encode()
    text = module_text(wasm)
    assert '(data (;0;) (i32.const 0) "say \\22hi\\22\\5c\\0a\\00\\01' in text
    assert _contents(disassemble(_wat2wasm(text, tmp_path))) == _contents(disassemble(wasm))


def test_show_prints_a_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    assert show(["f32_linear", "--isa", "relaxed"]) == 0
    text = capsys.readouterr().out
    params = abi.BY_NAME["f32_linear"].params
    assert f"(func $f32_linear (;0;) (type 0) (param{' i32' * len(params)})" in text
    assert "f32x4.relaxed_madd" in text and f"local.get {params.index('k')} (;k;)" in text


def test_show_names_an_unknown_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        show(["f32_nope"])
    assert info.value.code == 2
    assert "unknown kernel 'f32_nope'; available: ['bool_" in capsys.readouterr().err


def test_the_printer_names_what_it_cannot_show() -> None:
    wasm = b"\0asm\x01\0\0\0" + b"\x01\x04\x01\x60\x00\x00" + b"\x03\x02\x01\x00" + \
        b"\x0a\x06\x01\x04\x00\xfd\xff\x0f"  # one body: an opcode outside the table
    with pytest.raises(WasmFormatError, match=r"unsupported opcode 0xfd 2047 at byte offset"):
        module_text(wasm)
