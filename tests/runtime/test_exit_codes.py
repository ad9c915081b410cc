"""Issue 18, items 8-10: every failure has one documented exit code (and the API raises only
documented exception types), outputs of any name are written, and every error is one line
with what came from the guest or the file escaped."""

import subprocess
import sys
import zipfile

import numpy as np
import pytest
import wasmtime

import modelc
import nn
import runtime
from modelc.errors import CompileError
from runtime import ModelFormatError, Trap
from runtime.cli import main
from runtime.commands.wasi import run_command
from runtime.tensor_io import write_arrays
from tests.runtime.wat_models import METADATA, metadata, wat_model, with_section
from wasi_intrinsics.wasi import Preopen, WasiConfig
from wasi_intrinsics.wasi.abi import FILE_RIGHTS
from wasi_intrinsics.wasi.errno import Errno

X = np.ones((1, 4), np.float32)


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "id.wasm"
    path.write_bytes(wat_model())
    np.save(tmp_path / "x.npy", X)
    return path


def _run(model_file, *more: str) -> list[str]:
    return ["run", str(model_file), "-i", f"x={model_file.parent / 'x.npy'}", *more]


def test_a_host_io_error_on_the_output_is_exit_9(model_file, tmp_path, capsys):
    (tmp_path / "dir.npz").mkdir()
    assert main(_run(model_file, "-o", str(tmp_path / "dir.npz"))) == 9
    assert capsys.readouterr().err.startswith("wasmnn: error: [Errno 21] Is a directory")


@pytest.mark.parametrize("redirect, message", [(">&-", "standard stdout is closed"),
                                               ("<&-", "standard stdin is closed")])
def test_a_closed_standard_stream_is_exit_9(model_file, redirect, message):
    source = "x=-" if redirect == "<&-" else f"x={model_file.parent / 'x.npy'}"
    done = subprocess.run(f"{sys.executable} -m runtime run {model_file} -i {source} "
                          f"{redirect}", shell=True, stderr=subprocess.PIPE,
                          stdout=subprocess.PIPE if redirect == "<&-" else None, timeout=120,
                          check=False)
    assert done.returncode == 9
    assert done.stderr.decode() == f"wasmnn: error: [Errno 9] {message}\n"


@pytest.mark.parametrize("source, message", [
    ("def make(:\n", r"failed to load: SyntaxError: invalid syntax"),
    ("def make():\n    raise RuntimeError('boom')\n", r"failed to load: RuntimeError: boom"),
    ("def make():\n    return make()\n", r"failed to load: RecursionError: maximum recursion"),
    (("import nn\nclass M(nn.Module):\n    def forward(self, x):\n        return x.nope\n"
      "def make():\n    return M()\n"), r"attribute 'nope' .*is not supported on a traced tensor"),
])
def test_an_export_of_a_failing_model_file_is_exit_7(source, message, tmp_path, capsys):
    (tmp_path / "m.py").write_text(source)
    args = ["export", f"{tmp_path / 'm.py'}:make", "-o", str(tmp_path / "o.wasm"),
            "--input", "input0=1x4"]
    assert main(args) == 7
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and pytest.importorskip("re").search(message, err)


@pytest.mark.parametrize("content", [b"", b"\x08\x07garbage\xff\xff" * 9])
def test_an_export_of_a_garbage_onnx_file_is_exit_7(content, tmp_path, capsys):
    pytest.importorskip("onnx")
    (tmp_path / "g.onnx").write_bytes(content)
    assert main(["export", str(tmp_path / "g.onnx"), "-o", str(tmp_path / "o.wasm")]) == 7
    assert capsys.readouterr().err.startswith("wasmnn: error: ")


def test_wast_on_a_binary_file_is_a_bad_model_file(tmp_path, capsys):
    pytest.importorskip("shutil").which("wast2json") or pytest.skip("needs wabt")
    (tmp_path / "garbage.wasm").write_bytes(bytes(range(256)))
    assert main(["wast", str(tmp_path / "garbage.wasm")]) == 3
    assert "wast2json could not convert garbage.wasm" in capsys.readouterr().err


def test_metadata_nested_too_deeply_is_a_model_format_error():
    deep = with_section(wat_model()[:8], b"[" * 100_000 + b"]" * 100_000)
    with pytest.raises(ModelFormatError, match="model metadata is nested too deeply"):
        runtime.load(deep)


def _file_call(call: str, types: str, *args: str) -> str:
    """A program that creates file 'f' in preopen fd 3, calls ``call`` on it and exits with
    the errno."""
    return f"""(module
      (import "wasi_snapshot_preview1" "path_open" (func $open (param i32 i32 i32 i32 i32 i64
                                                                  i64 i32 i32) (result i32)))
      (import "wasi_snapshot_preview1" "{call}" (func $call (param {types}) (result i32)))
      (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
      (memory (export "memory") 1) (data (i32.const 0) "f")
      (func (export "_start")
        (drop (call $open (i32.const 3) (i32.const 0) (i32.const 0) (i32.const 1)
                          (i32.const 1) (i64.const {int(FILE_RIGHTS)}) (i64.const 0) (i32.const 0)
                          (i32.const 100)))
        (call $exit (call $call (i32.load (i32.const 100)) {" ".join(args)}))))"""


HUGE = "(i64.const -1)"  # 2^64 - 1 as an unsigned WASI offset or size


@pytest.mark.parametrize("call, types, args", [
    ("fd_pwrite", "i32 i32 i32 i64 i32", ("(i32.const 0)", "(i32.const 0)", HUGE,
                                          "(i32.const 200)")),
    ("fd_pread", "i32 i32 i32 i64 i32", ("(i32.const 0)", "(i32.const 0)", HUGE,
                                         "(i32.const 200)")),
    ("fd_advise", "i32 i64 i64 i32", (HUGE, HUGE, "(i32.const 0)")),
    ("fd_allocate", "i32 i64 i64", (HUGE, HUGE)),
    ("fd_filestat_set_size", "i32 i64", (HUGE,)),
])
def test_wasi_offsets_past_2_63_are_an_errno_not_a_crash(call, types, args, tmp_path):
    wasm = wasmtime.wat2wasm(_file_call(call, types, *args))
    config = WasiConfig(preopens=[Preopen(str(tmp_path), "/")])
    assert run_command(wasm, config) == Errno.EINVAL


@pytest.mark.parametrize("names", [["allow_pickle"], ["file"], ["file", "allow_pickle", "y"]])
def test_outputs_of_any_name_are_written_to_npz(names, tmp_path):
    arrays = {name: np.full((2,), i, np.float32) for i, name in enumerate(names)}
    write_arrays(tmp_path / "out.npz", arrays)
    with np.load(tmp_path / "out.npz") as loaded:
        assert sorted(loaded.files) == sorted(names)
        for name, array in arrays.items():
            np.testing.assert_array_equal(loaded[name], array)
    assert zipfile.is_zipfile(tmp_path / "out.npz")


def test_a_model_output_named_allow_pickle_reaches_the_file(tmp_path, capsys):
    meta = metadata(outputs=[{**METADATA["outputs"][0], "name": "allow_pickle"}])
    model = tmp_path / "m.wasm"
    model.write_bytes(wat_model(meta=meta))
    np.save(tmp_path / "x.npy", X)
    assert main(["run", str(model), "-i", f"x={tmp_path / 'x.npy'}", "-o",
                 str(tmp_path / "y.npz")]) == 0
    with np.load(tmp_path / "y.npz") as loaded:
        np.testing.assert_array_equal(loaded["allow_pickle"], X)


HOSTILE_TEXT = "line one\nline two\0\x1b[31mred\x1b[0m"


def _rejecting_model() -> bytes:
    text = "".join(f"\\{b:02x}" for b in HOSTILE_TEXT.encode())
    wat = f"""(module (import "env" "memory" (memory 1))
      (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
      (data (i32.const 4096) "{text}")
      (func (export "run") (param $batch i32) (result i32)
        (i32.store (i32.const 2048) (i32.const 4096))
        (i32.store (i32.const 2052) (i32.const {len(HOSTILE_TEXT.encode())}))
        (drop (call $w (i32.const 2) (i32.const 2048) (i32.const 1) (i32.const 2056)))
        (i32.const 1)))"""
    return with_section(wasmtime.wat2wasm(wat), metadata())


def test_a_reject_message_from_the_guest_is_one_escaped_line(tmp_path, capsys):
    escaped = r"line one\nline two\x00\x1b[31mred\x1b[0m"
    with pytest.raises(Trap, match=pytest.importorskip("re").escape(escaped)):
        runtime.load(_rejecting_model()).run(X)
    (tmp_path / "m.wasm").write_bytes(_rejecting_model())
    np.save(tmp_path / "x.npy", X)
    assert main(["run", str(tmp_path / "m.wasm"), "-i", f"x={tmp_path / 'x.npy'}"]) == 5
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and "\0" not in err and escaped in err


def test_a_link_error_is_one_line(tmp_path, capsys):
    (tmp_path / "m.wasm").write_bytes(wat_model(imports='(import "a" "b" (func)) '
                                                       '(import "c" "d" (func))'))
    np.save(tmp_path / "x.npy", X)
    assert main(["run", str(tmp_path / "m.wasm"), "-i", f"x={tmp_path / 'x.npy'}"]) == 4
    assert capsys.readouterr().err == (
        "wasmnn: error: 2 import(s) could not be linked: a.b: expected () -> (), got nothing "
        "(unknown import); c.d: expected () -> (), got nothing (unknown import)\n")


def test_inspect_escapes_names_from_the_file(tmp_path, capsys):
    wat = '(module (func (export "evil\\1b[2J\\0a name")))'
    (tmp_path / "m.wasm").write_bytes(wasmtime.wat2wasm(wat))
    assert main(["inspect", str(tmp_path / "m.wasm")]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and r"evil\x1b[2J\n name: () -> ()" in out


@pytest.mark.parametrize("high, message", [
    (2**31, (r"dim 'batch' has upper bound 2147483648, over 2147483647 \(the model takes each "
             r"dim as an i32\)")),
    (2**31 - 1, (r"needs \d{12} bytes of memory with dims 'batch' up to 2147483647, more "
                 r"than WebAssembly's 4294967296 \(65536 pages\): it could never load")),
])
def test_export_refuses_a_module_that_could_never_load(high, message, tmp_path, capsys):
    (tmp_path / "m.py").write_text("import nn\ndef make():\n    return nn.Linear(4, 4)\n")
    args = ["export", f"{tmp_path / 'm.py'}:make", "-o", str(tmp_path / "o.wasm"),
            "--input", "input0=1x4", "--dynamic", f"input0:0=batch:1:{high}"]
    assert main(args) == 7
    assert pytest.importorskip("re").search(message, capsys.readouterr().err)
    assert not (tmp_path / "o.wasm").exists()
    with pytest.raises(CompileError, match=message):
        modelc.export(nn.Linear(4, 4), (np.zeros((1, 4), np.float32),),
                      dynamic={"input0": {0: ("batch", 1, high)}})


def test_run_escapes_output_names_from_the_file(tmp_path, capsys):
    meta = metadata(outputs=[{**METADATA["outputs"][0], "name": "y\x1b[2J\nfake line"}])
    (tmp_path / "m.wasm").write_bytes(wat_model(meta=meta))
    np.save(tmp_path / "x.npy", X)
    assert main(["run", str(tmp_path / "m.wasm"), "-i", f"x={tmp_path / 'x.npy'}"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and r"y\x1b[2J\nfake line: float32[1, 4]" in out
