"""Issue 18's limit promises: each test is named after the promise it keeps, and tries to
break it the way a hostile guest would."""

import numpy as np
import wasmtime

import runtime
from runtime.commands.wasi import run_command
from runtime.compartment import TABLE_ELEMENT_BYTES, Limits
from tests.runtime.wat_models import metadata, with_section
from wasi_intrinsics.wasi import WasiConfig

PAGE = 65536
MEMORIES = 8


def _grow_all(memories: range) -> str:
    """Grow each memory one page at a time until it refuses; leave the total pages in $n."""
    return "".join(f"""
      (block $done{m} (loop $grow{m}
        (br_if $done{m} (i32.eq (memory.grow {m} (i32.const 1)) (i32.const -1)))
        (br $grow{m})))
      (local.set $n (i32.add (local.get $n) (memory.size {m})))""" for m in memories)


def test_max_memory_caps_the_sum_of_all_memories_of_a_wasi_program():
    own = "".join(f"(memory $m{m} 0)" for m in range(MEMORIES))
    wat = f"""(module (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
      {own}
      (func (export "_start") (local $n i32) {_grow_all(range(MEMORIES))}
        (call $exit (local.get $n))))"""
    pages = run_command(wasmtime.wat2wasm(wat), WasiConfig(), Limits(max_memory=8 << 20))
    assert 8 * PAGE < pages * PAGE <= 8 << 20  # every memory grew, the sum stayed under


def test_max_memory_caps_the_sum_of_all_memories_of_a_model():
    own = "".join(f"(memory $m{m} 0)" for m in range(1, MEMORIES + 1))
    body = f"""{_grow_all(range(MEMORIES + 1))}
      (f32.store (i32.const 1024) (f32.convert_i32_u (local.get $n))) (i32.const 0)"""
    wat = f"""(module (import "env" "memory" (memory 1)) {own}
      (func (export "run") (param $batch i32) (result i32) (local $n i32) {body}))"""
    model = with_section(wasmtime.wat2wasm(wat), metadata())
    session = runtime.load(model, max_memory="8MiB", instances=1)
    pages = session.run(np.zeros((1, 4), np.float32))["y"][0, 0]
    assert MEMORIES + 1 < pages and pages * PAGE <= 8 << 20


def test_max_memory_counts_table_elements_too():
    own = "".join(f"(table $t{t} 0 funcref)" for t in range(MEMORIES))
    grow = "".join(f"""
      (block $done{t} (loop $grow{t}
        (br_if $done{t} (i32.eq (table.grow {t} (ref.null func) (i32.const 1024))
                                (i32.const -1)))
        (br $grow{t})))
      (local.set $n (i32.add (local.get $n) (table.size {t})))""" for t in range(MEMORIES))
    wat = f"""(module (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
      {own} (func (export "_start") (local $n i32) {grow} (call $exit (local.get $n))))"""
    elements = run_command(wasmtime.wat2wasm(wat), WasiConfig(), Limits(max_memory=1 << 20))
    assert MEMORIES * 1024 <= elements and elements * TABLE_ELEMENT_BYTES <= 1 << 20
