"""Hand-written "models" for runtime tests: a few lines of WAT plus a ``wasmnn.model``
metadata section, so a test can make a model do anything (loop, grow, trap, lie)."""

from __future__ import annotations

import copy
import json
from typing import Any

import wasmtime

from wasm_kernels import abi
from wasm_kernels.wasm.encode import name as encode_name
from wasm_kernels.wasm.encode import uleb

# y = x for x: float32[batch, 4] at byte 0 and y: float32[batch, 4] at byte 1024 (16 B a row).
IDENTITY = """(memory.copy (i32.const 1024) (i32.const 0)
                           (i32.mul (local.get $batch) (i32.const 16)))
              (i32.const 0)"""

METADATA: dict[str, Any] = {
    "format": 1, "producer": "tests", "abi": {"module": abi.MODULE, "version": abi.VERSION},
    "entry": "run", "dims": [{"name": "batch", "min": 1, "max": 8}],
    "inputs": [{"name": "x", "dtype": "float32", "shape": ["batch", 4], "offset": 0}],
    "outputs": [{"name": "y", "dtype": "float32", "shape": ["batch", 4], "offset": 1024}],
    "ops": [], "arena_bytes": 0, "weights_bytes": 0, "memory_bytes": 65536}


def metadata(**changes: Any) -> dict[str, Any]:
    """A deep copy of ``METADATA`` with top-level ``changes``."""
    meta = copy.deepcopy(METADATA)
    meta.update(changes)
    return meta


def with_section(wasm: bytes, meta: dict[str, Any] | bytes) -> bytes:
    """``wasm`` with a ``wasmnn.model`` custom section appended (JSON, or raw bytes)."""
    body = meta if isinstance(meta, bytes) else json.dumps(meta).encode()
    payload = encode_name("wasmnn.model") + body
    return wasm + b"\x00" + uleb(len(payload)) + payload


def wat_model(body: str = IDENTITY, *, meta: dict[str, Any] | None = None,
              extra: str = "", imports: str = "", params: str = "(param $batch i32)") -> bytes:
    """A model whose ``run`` executes ``body``; ``extra`` adds module fields (functions,
    start), ``imports`` adds import fields after ``env.memory``."""
    wat = f"""(module
      (import "env" "memory" (memory 1))
      {imports}
      (func (export "run") {params} (result i32) {body})
      {extra})"""
    return with_section(wasmtime.wat2wasm(wat), meta or METADATA)
