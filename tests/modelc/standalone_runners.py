"""Running a standalone export: under wasmnn's WASI in this process, or under Node's WASI."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import numpy as np

from runtime.commands.wasi import run_command
from wasi_intrinsics.wasi import WasiConfig

NODE_RUNNER = Path(__file__).parents[2] / "examples" / "standalone" / "run_wasi.mjs"


def npy(array: np.ndarray) -> bytes:
    """``array`` as the bytes of a ``.npy`` file."""
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def run_wasi(wasm: bytes, stdin: bytes) -> tuple[int, bytes, str]:
    """(exit code, stdout, stderr) of ``wasm`` under ``wasmnn wasi run``'s machinery."""
    config = WasiConfig(args=["model.wasm"], stdin=io.BytesIO(stdin))
    code = run_command(wasm, config)
    return code, config.stdout.getvalue(), config.stderr.getvalue().decode()


RELAXED_SIMD = "--experimental-wasm-relaxed-simd"
"""The V8 flag Node 20 needs for a module of the ``relaxed`` ISA (later V8s ship it)."""


def run_node(path: Path, stdin: bytes, relaxed: bool = False) -> bytes:
    """stdout of the ``.wasm`` at ``path`` under Node's ``node:wasi`` (with relaxed SIMD on
    when ``relaxed``)."""
    flags = [RELAXED_SIMD] if relaxed else []
    return subprocess.run(["node", "--no-warnings", *flags, str(NODE_RUNNER), str(path)],
                          input=stdin, capture_output=True, check=True).stdout
