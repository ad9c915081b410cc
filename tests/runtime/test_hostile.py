"""Hostile models and bad input: each ends with the documented error (Python) and exit code
(CLI), within its limit, and the process keeps serving other sessions afterwards."""

import json
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

import runtime
from runtime import LimitExceeded, LinkError, ModelFormatError, Trap
from runtime.cli import main
from tests.runtime.wat_models import METADATA, metadata, wat_model, with_section
from wasm_kernels import abi

X = np.ones((2, 4), np.float32)
LOOP = "(loop $l (br $l)) (i32.const 0)"
# Grows by 16 pages until memory.grow fails (-1 at the cap), then aborts as an allocator would.
GROW_BOMB = """(loop $l (br_if $l (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
               unreachable"""
HANG_GUARD = 120  # seconds, for subprocesses; a hang fails the test instead of the suite


def _imports_model() -> bytes:
    return wat_model(imports=f"""
        (import "{abi.MODULE}" "f32_no_such_kernel" (func (param i32)))
        (import "{abi.MODULE}" "f32_gemm" (func (param i32)))
        (import "wasi_snapshot_preview1" "fd_write" (func (param f64) (result i32)))
        (import "evil" "system" (func))""")


def _truncated() -> bytes:
    wasm = wat_model()
    return wasm[:len(wasm) * 2 // 3]


def _lying(**changes: Any) -> Callable[[], bytes]:
    return lambda: wat_model(meta=metadata(**changes))


def _tensor(**changes: Any) -> list[dict[str, Any]]:
    return [{**METADATA["outputs"][0], **changes}]


@dataclass(frozen=True)
class Case:
    """A hostile model or input: what Python raises (class, message) and the CLI exit code."""

    model: Callable[[], bytes]
    error: type[Exception] | None
    message: str
    exit_code: int
    limits: dict[str, Any] = field(default_factory=dict)
    inputs: Any = None  # the array for "x" (default ``X``), or a dict of arrays
    code: str | None = None  # the expected ``Trap.code``


CASES = {
    "infinite loop, timeout": Case(lambda: wat_model(LOOP), LimitExceeded,
                                   r"time limit of 0.2 s exceeded", 6, {"timeout": 0.2},
                                   code="timeout"),
    "infinite loop, fuel": Case(lambda: wat_model(LOOP), LimitExceeded,
                                r"fuel limit of 100000 exhausted", 6, {"fuel": 100_000},
                                code="fuel"),
    "infinite start function": Case(
        lambda: wat_model(extra="(func $s (loop $l (br $l))) (start $s)"), LimitExceeded,
        "time limit", 6, {"timeout": 0.2}, code="timeout"),
    "memory.grow bomb": Case(lambda: wat_model(GROW_BOMB), Trap, "unreachable", 5,
                             {"max_memory": "4MiB"}, code="unreachable"),
    "memory import over the cap": Case(
        lambda: with_section(__import__("wasmtime").wat2wasm(
            '(module (import "env" "memory" (memory 2000)) '
            '(func (export "run") (param i32) (result i32) (i32.const 0)))'), METADATA),
        LimitExceeded, "needs 131072000 bytes of memory, over the limit", 6,
        {"max_memory": "64MiB"}, code="memory"),
    "stack overflow": Case(lambda: wat_model("(call $f) (i32.const 0)",
                                             extra="(func $f (call $f))"),
                           Trap, "call stack exhausted", 5, code="stack_overflow"),
    "unreachable": Case(lambda: wat_model("unreachable"), Trap,
                        "`unreachable` instruction executed", 5, code="unreachable"),
    "out of bounds": Case(
        lambda: wat_model("(drop (i32.load (i32.const 0x7ffffff0))) (i32.const 0)"), Trap,
        "out of bounds memory access", 5, code="out_of_bounds"),
    "unknown and mistyped imports": Case(
        _imports_model, LinkError,
        r"(?s)4 import\(s\).*f32_no_such_kernel.*f32_gemm: expected \(i32\) -> \(\), got.*"
        r"fd_write: expected \(f64\) -> i32.*evil\.system", 4),
    "empty file": Case(lambda: b"", ModelFormatError, r"missing the '\\0asm' magic", 3),
    "garbage": Case(lambda: b"MZ\x90\x00 not wasm at all" * 10, ModelFormatError,
                    r"missing the '\\0asm' magic", 3),
    "truncated": Case(_truncated, ModelFormatError, "WebAssembly", 3),
    "plain wasm, not a model": Case(
        lambda: __import__("wasmtime").wat2wasm('(module (func (export "_start")))'),
        ModelFormatError, "not a wasmnn model: no 'wasmnn.model' custom section", 3),
    "metadata not JSON": Case(lambda: with_section(wat_model()[:8], b"{not json"),
                              ModelFormatError, "model metadata is not valid JSON", 3),
    "output offset outside memory": Case(
        _lying(outputs=_tensor(offset=65536 - 8)), ModelFormatError,
        r"tensor 'y' spans bytes \[65528, 65656\) but the model's memory has 65536", 3),
    "shape that does not fit": Case(
        _lying(outputs=_tensor(shape=["batch", 1 << 20])), ModelFormatError,
        "tensor 'y' spans bytes", 3),
    "offset beyond 32 bits": Case(_lying(outputs=_tensor(offset=1 << 40)), ModelFormatError,
                                  r"outputs\[0\]\.offset = 1099511627776 is out of range", 3),
    "memory claim over the cap": Case(_lying(memory_bytes=(1 << 32) - 1), LimitExceeded,
                                      "over the limit of 67108864 bytes", 6,
                                      {"max_memory": "64MiB"}, code="memory"),
    "entry with the wrong signature": Case(
        lambda: wat_model("(i32.const 0)", params="(param $batch i32) (param i32)"),
        ModelFormatError, r"'run' export should be a function \(i32\) -> i32 .*got func "
                          r"\(i32, i32\) -> i32", 3),
    "entry missing": Case(_lying(entry="main"), ModelFormatError,
                          "the model has no 'main' export", 3),
    "wrong dtype": Case(wat_model, TypeError,
                        "input 'x': expected dtype float32, got complex64 .no safe", 7,
                        inputs=X.astype(np.complex64)),
    "wrong shape": Case(wat_model, ValueError, "input 'x': axis 1 must be 4, got 5", 7,
                        inputs=np.ones((2, 5), np.float32)),
    "dim out of range": Case(wat_model, ValueError,
                             r"axis 0 \('batch'\) is 9, outside the model's range \[1, 8\]", 7,
                             inputs=np.ones((9, 4), np.float32)),
    "extra input": Case(wat_model, ValueError, r"missing \[\], unexpected \['z'\]", 7,
                        inputs={"x": X, "z": X}),
    "missing input": Case(wat_model, ValueError, r"missing \['x'\], unexpected \['w'\]", 7,
                          inputs={"w": X}),
    "metadata nested too deeply": Case(
        lambda: with_section(wat_model()[:8], b"[" * 100_000 + b"]" * 100_000),
        ModelFormatError, "model metadata is nested too deeply", 3),
    "limit value past 2^64": Case(wat_model, ValueError, r"fuel must be between 1 and "
                                  r"18446744073709551615 instructions", 7,
                                  {"fuel": 2**64}),
}


@pytest.fixture(scope="module")
def healthy(mlp_wasm, mlp_model):
    """A well-behaved model and session that must keep working after every hostile case."""
    x = np.random.default_rng(5).standard_normal((3, 6)).astype(np.float32)
    return mlp_wasm, runtime.load(mlp_wasm, instances=2), x, mlp_model(x)


@pytest.fixture(autouse=True)
def still_serving(healthy):
    yield
    wasm, session, x, expected = healthy
    for serving in (session, runtime.load(wasm)):
        np.testing.assert_allclose(serving.run(x)["output0"], expected, rtol=1e-5, atol=1e-6)


def _inputs(case: Case) -> dict[str, np.ndarray]:
    if isinstance(case.inputs, dict):
        return case.inputs
    return {"x": X if case.inputs is None else case.inputs}


@pytest.mark.parametrize("name", CASES)
def test_python_api_raises_the_documented_error(name):
    case = CASES[name]
    with pytest.raises(case.error, match=case.message) as info:
        runtime.load(case.model(), **case.limits).run(_inputs(case))
    if case.code is not None:
        assert info.value.code == case.code


@pytest.mark.parametrize("name", CASES)
def test_cli_exits_with_the_documented_code_and_one_line(name, tmp_path, capsys):
    case = CASES[name]
    model = tmp_path / "model.wasm"
    model.write_bytes(case.model())
    args = ["run", str(model)]
    for input_name, array in _inputs(case).items():
        np.save(tmp_path / f"{input_name}.npy", array)
        args += ["--input", f"{input_name}={tmp_path / f'{input_name}.npy'}"]
    for option, value in case.limits.items():
        args += [f"--{option.replace('_', '-')}", str(value)]
    assert main(args) == case.exit_code
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    assert first.startswith("wasmnn: error: ") and "Traceback" not in err
    assert __import__("re").search(case.message, err)


def test_the_memory_cap_holds_against_a_grow_bomb():
    ignores_failure = """(loop $l (br_if $l (i32.ne (memory.grow (i32.const 1)) (i32.const -1))))
                         (i32.const 0)"""
    session = runtime.load(wat_model(ignores_failure), max_memory="2MiB", instances=1)
    with session.lease() as lease:
        lease.run(X, copy=False)
        instance = lease._instance
        assert instance.memory.data_len(instance.compartment.store) == 2 * 1024 * 1024


def test_nan_and_inf_inputs_are_values_not_errors(tmp_path, capsys):
    x = np.array([[np.nan, np.inf, -np.inf, 1.0]], np.float32)
    np.testing.assert_array_equal(runtime.load(wat_model()).run(x)["y"], x)
    model = tmp_path / "id.wasm"
    model.write_bytes(wat_model())
    np.save(tmp_path / "x.npy", x)
    assert main(["run", str(model), "-i", f"x={tmp_path / 'x.npy'}", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["outputs"]["y"] == [["NaN", "Infinity", "-Infinity", 1.0]]


def test_debug_shows_the_traceback(tmp_path, capsys):
    model = tmp_path / "m.wasm"
    model.write_bytes(wat_model("unreachable"))
    np.save(tmp_path / "x.npy", X)
    assert main(["--debug", "run", str(model), "-i", f"x={tmp_path / 'x.npy'}"]) == 5
    err = capsys.readouterr().err
    assert "Traceback" in err and err.rstrip().splitlines()[-1].startswith("wasmnn: error:")


@pytest.mark.parametrize("flags, code, message", [
    (["--timeout", "0.3"], 6, "time limit of 0.3 s exceeded"),
    (["--fuel", "50000"], 6, "fuel limit of 50000 exhausted"),
])
def test_the_real_command_stops_an_infinite_loop(tmp_path, flags, code, message):
    model = tmp_path / "loop.wasm"
    model.write_bytes(wat_model(LOOP))
    np.save(tmp_path / "x.npy", X)
    done = subprocess.run([sys.executable, "-m", "runtime", "run", str(model), "-i",
                           f"x={tmp_path / 'x.npy'}", *flags], capture_output=True, text=True,
                          timeout=HANG_GUARD)
    assert done.returncode == code
    assert done.stderr.strip() == f"wasmnn: error: {message}"


WASI_LOOP = '(module (func (export "_start") (loop $l (br $l))))'
WASI_BOMB = """(module (memory 1)
  (func (export "_start")
    (loop $l (br_if $l (i32.ne (memory.grow (i32.const 16)) (i32.const -1)))) unreachable))"""
WASI_EXIT = """(module (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
  (func (export "_start") (call $exit (i32.const 42))))"""
# environ_sizes_get(count_ptr=0, size_ptr=4); exit with the count it reports.
WASI_ENV = """(module
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $sizes (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
  (memory (export "memory") 1)
  (func (export "_start") (drop (call $sizes (i32.const 0) (i32.const 4)))
    (call $exit (i32.load (i32.const 0)))))"""


@pytest.mark.parametrize("wat, flags, code, message", [
    (WASI_LOOP, ["--timeout", "0.2"], 6, "time limit of 0.2 s exceeded"),
    (WASI_LOOP, ["--fuel", "10000"], 6, "fuel limit of 10000 exhausted"),
    (WASI_BOMB, ["--max-memory", "2MiB"], 5, "unreachable"),
    (WASI_EXIT, [], 42, None),
    (WASI_ENV, [], 0, None),  # deny by default: no environment variables
    (WASI_ENV, ["--env", "A=1", "--env", "B=2"], 2, None),
])
def test_wasi_run_shares_the_limits_and_passes_exit_codes(wat, flags, code, message, tmp_path,
                                                          capsys):
    program = tmp_path / "prog.wasm"
    program.write_bytes(__import__("wasmtime").wat2wasm(wat))
    assert main(["wasi", "run", *flags, str(program)]) == code
    err = capsys.readouterr().err
    if message is not None:
        assert err.startswith("wasmnn: error: ") and message in err
