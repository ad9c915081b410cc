"""Fixtures for the WASI tests: C programs compiled once per session, and a runner."""

from __future__ import annotations

import io
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from runtime.commands.wasi import run_command
from wasi_intrinsics.wasi import WasiConfig

PROGRAMS = Path(__file__).parent / "programs"
CLANG = ["clang", "--target=wasm32-wasi", "-O2", "-Wall", "-Werror"]
TOOLCHAIN = "Debian's clang, lld, wasi-libc and libclang-rt-14-dev-wasm32 (make wasi-toolchain)"


@dataclass
class Outcome:
    """What a WASI program did: exit code and the bytes it wrote to each stream."""

    code: int
    stdout: str
    stderr: str


def _probe(directory: Path) -> str | None:
    """Why C programs cannot be built for wasm32-wasi here, or None when they can."""
    if shutil.which("clang") is None:
        return f"clang not found; the WASI C tests need {TOOLCHAIN}"
    source = directory / "probe.c"
    source.write_text("int main(void) { return 0; }\n")
    done = subprocess.run([*CLANG, str(source), "-o", str(directory / "probe.wasm")],
                          capture_output=True, text=True)
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["?"])[0]
        return f"clang cannot target wasm32-wasi ({first}); the tests need {TOOLCHAIN}"
    return None


@pytest.fixture(scope="session")
def wasi_program(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], bytes]:
    """``wasi_program("stdio")`` -> the wasm bytes of ``programs/stdio.c`` (built once)."""
    directory = tmp_path_factory.mktemp("wasi-programs")
    reason = _probe(directory)
    built: dict[str, bytes] = {}

    def build(name: str) -> bytes:
        if reason:
            pytest.skip(reason)
        if name not in built:
            output = directory / f"{name}.wasm"
            subprocess.run([*CLANG, str(PROGRAMS / f"{name}.c"), "-o", str(output)], check=True)
            built[name] = output.read_bytes()
        return built[name]

    return build


def _run(wasm: bytes, *args: str, stdin: bytes = b"", **config: Any) -> Outcome:
    stdout, stderr = io.BytesIO(), io.BytesIO()
    code = run_command(wasm, WasiConfig(args=["prog.wasm", *args], stdin=io.BytesIO(stdin),
                                        stdout=stdout, stderr=stderr, **config))
    return Outcome(code, stdout.getvalue().decode(), stderr.getvalue().decode())


@pytest.fixture
def run_wasi() -> Callable[..., Outcome]:
    """``run_wasi(wasm, *args, stdin=b"", **WasiConfig fields)`` -> ``Outcome``; argv[0] is
    ``prog.wasm``, and stdout and stderr are captured."""
    return _run
