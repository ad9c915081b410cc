"""Fuzzing the untrusted-input paths: the metadata parser, the CLI's input parsing, and
byte mutations of a valid model run through ``wasmnn run``. Never a crash, a hang or a
traceback: only our documented errors and exit codes."""

import io
import json
import random
import subprocess
import sys

import numpy as np
import pytest
import wasmtime
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime import metadata as md
from runtime.cli import main
from runtime.commands.wasi import run_command
from runtime.compartment import Compartment, ResourceLimits
from runtime.errors import LimitExceeded, ModelFormatError, one_line
from runtime.tensor_io import read_arrays
from tests.runtime.wat_models import METADATA
from wasi_intrinsics.wasi import Preopen, WasiConfig, preview1
from wasi_intrinsics.wasi.errno import Errno
from wasm_kernels.wasm import FuncType

FUZZ = settings(max_examples=150, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
ALLOWED_EXITS = {0, 3, 4, 5, 6, 7}  # ok, bad model, link, trap, limit, bad input
HANG_GUARD = 300  # seconds for the subprocess batch; a hang fails instead of stalling

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=20)


@pytest.fixture(autouse=True)
def no_disk_cache(monkeypatch):
    monkeypatch.setenv("WASMNN_CACHE_DIR", "off")


def _parse_or_format_error(payload: bytes) -> None:
    try:
        meta = md.parse(payload)
    except ModelFormatError:
        return
    largest = meta.max_dims()
    for tensor in meta.inputs + meta.outputs:  # what parse promises when it accepts
        assert tensor.offset + tensor.nbytes(largest) <= meta.memory_bytes


@FUZZ
@given(json_values)
def test_metadata_parser_takes_any_json(value):
    _parse_or_format_error(json.dumps(value).encode())


@FUZZ
@given(st.data())
def test_metadata_parser_takes_any_field_replaced(data):
    meta = json.loads(json.dumps(METADATA))
    path = data.draw(st.sampled_from([
        ("format",), ("entry",), ("dims",), ("memory_bytes",), ("abi",), ("inputs",),
        ("dims", 0, "min"), ("dims", 0, "max"), ("dims", 0, "name"), ("inputs", 0, "shape"),
        ("inputs", 0, "offset"), ("inputs", 0, "dtype"), ("outputs", 0, "shape"),
        ("outputs", 0, "offset"), ("outputs", 0, "name"), ("inputs", 0, "shape", 1)]))
    target = meta
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = data.draw(json_values)
    _parse_or_format_error(json.dumps(meta).encode())


@FUZZ
@given(st.binary(max_size=64))
def test_metadata_parser_takes_any_bytes(payload):
    _parse_or_format_error(payload)


def _read_stdin(data: bytes) -> None:
    try:
        loaded = read_arrays("-", stdin=io.BytesIO(data))
    except ValueError:
        return
    arrays = loaded.values() if isinstance(loaded, dict) else [loaded]
    assert all(isinstance(a, np.ndarray) for a in arrays)


@FUZZ
@given(st.binary(max_size=200))
def test_input_parsing_takes_any_bytes(data):
    _read_stdin(data)


@FUZZ
@given(json_values)
def test_input_parsing_takes_any_json(value):
    _read_stdin(json.dumps(value).encode())


@FUZZ
@given(st.data())
def test_input_parsing_takes_mutated_npy(data):
    out = io.BytesIO()
    np.save(out, np.arange(12, dtype=np.float32).reshape(3, 4))
    raw = bytearray(out.getvalue())
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    _read_stdin(bytes(raw[:data.draw(st.integers(0, len(raw)))]))


def _mutate(wasm: bytes, rng: random.Random) -> bytes:
    raw = bytearray(wasm)
    kind = rng.choice(["flip", "byte", "cut", "insert", "header"])
    if kind == "flip":
        for _ in range(rng.randint(1, 8)):
            raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
    elif kind == "byte":
        raw[rng.randrange(len(raw))] = rng.randrange(256)
    elif kind == "cut":
        del raw[rng.randrange(len(raw)):]
    elif kind == "insert":
        at = rng.randrange(len(raw))
        raw[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    else:  # NOTE: the section headers and metadata come first, where a byte matters most.
        raw[rng.randrange(min(len(raw), 200))] = rng.randrange(256)
    return bytes(raw)


@FUZZ
@given(seed=st.integers(0, 2**32 - 1))
def test_mutated_models_through_wasmnn_run(seed, mlp_wasm, tmp_path_factory, capsys):
    directory = tmp_path_factory.mktemp("mutant")
    model, x = directory / "m.wasm", directory / "x.npy"
    model.write_bytes(_mutate(mlp_wasm, random.Random(seed)))
    np.save(x, np.ones((2, 6), np.float32))
    code = main(["run", str(model), "-i", f"x={x}", "--timeout", "5", "--max-memory", "64MiB"])
    err = capsys.readouterr().err
    assert code in ALLOWED_EXITS, err
    assert "Traceback" not in err
    assert code == 0 or (err.startswith("wasmnn: error: ") and len(err.strip().splitlines()) == 1
                         or "import(s) could not be linked" in err)


def test_mutated_models_never_crash_the_real_process(mlp_wasm, tmp_path):
    """The same mutations in a separate process: a crash in the engine would kill it, which
    pytest in-process could not report."""
    rng = random.Random(7)
    paths = []
    for i in range(40):
        path = tmp_path / f"m{i}.wasm"
        path.write_bytes(_mutate(mlp_wasm, rng))
        paths.append(str(path))
    np.save(tmp_path / "x.npy", np.ones((2, 6), np.float32))
    child = (
        "import contextlib, io, sys\n"
        "from runtime.cli import main\n"
        "codes = []\n"
        "for path in sys.argv[2:]:\n"
        "    with contextlib.redirect_stdout(io.StringIO()), "
        "contextlib.redirect_stderr(io.StringIO()):\n"
        "        codes.append(main(['run', path, '-i', 'x=' + sys.argv[1], '--timeout', '5']))\n"
        "print(codes)\n")
    done = subprocess.run([sys.executable, "-c", child, str(tmp_path / "x.npy"), *paths],
                          capture_output=True, text=True, timeout=HANG_GUARD,
                          env={**__import__("os").environ, "WASMNN_CACHE_DIR": "off"})
    assert done.returncode == 0, done.stderr[-2000:]
    codes = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(codes) == 40 and set(codes) <= ALLOWED_EXITS


_WASI_CALLS = sorted((name, ty) for name, ty in preview1().types.items()
                     if isinstance(ty, FuncType) and name != "proc_exit")
_EDGES = [0, 1, 8, 4096, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1, 2**63 - 1, 2**63,
          2**64 - 1]


def _wasi_value(data: st.DataObject, kind: str) -> int:
    width = 32 if kind == "i32" else 64
    value = data.draw(st.sampled_from(_EDGES) | st.integers(0, 2**width - 1))
    return value & ((1 << width) - 1)


@settings(max_examples=120, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_wasi_call_with_any_arguments_gives_an_errno_or_a_limit(data, tmp_path_factory):
    """A WASI call with hostile arguments (pointers past memory, counts near 2^32, offsets
    past 2^63) returns an errno to the guest or hits a limit: never another exception."""
    name, ty = data.draw(st.sampled_from(_WASI_CALLS))
    args = [_wasi_value(data, kind) for kind in ty.params]
    consts = " ".join(f"({kind}.const {value})" for kind, value in zip(ty.params, args))
    wat = f"""(module
      (import "wasi_snapshot_preview1" "{name}" (func $call (param {' '.join(ty.params)})
                                                    (result i32)))
      (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
      (memory (export "memory") 2)
      (func (export "_start") (call $exit (call $call {consts}))))"""
    directory = tmp_path_factory.mktemp("wasi")
    config = WasiConfig(stdin=io.BytesIO(b"x" * 100), preopens=[Preopen(str(directory), "/")])
    try:
        errno = run_command(wasmtime.wat2wasm(wat), config,
                            ResourceLimits(max_memory=4 << 20, timeout=0.5))
    except LimitExceeded as limit:
        assert limit.code == "timeout", limit
        return
    assert errno in set(Errno), (name, args, errno)


@FUZZ
@given(st.dictionaries(st.sampled_from(["max_memory", "timeout", "fuel", "max_instances"]),
                       st.none() | st.booleans() | st.integers(-2**70, 2**70)
                       | st.floats() | st.text(max_size=4), max_size=4))
def test_limit_values_are_accepted_or_refused_with_type_or_value_error(kwargs):
    try:
        limits = ResourceLimits(**{k: v for k, v in kwargs.items()
                           if v is not None or k in ("timeout", "fuel")})
    except (TypeError, ValueError):
        return
    Compartment(limits)  # an accepted value reaches wasmtime without wrapping or raising


@FUZZ
@given(st.text())
def test_one_line_leaves_no_control_character(text):
    line = one_line(text)
    assert line.isprintable() and "\n" not in line and "\x1b" not in line
