"""The parallel-dispatch module (``wasm_kernels.parallel``) and the binary rewrite threads
need (``wasm.rewrite``); its behaviour on threads is tested in tests/runtime/test_threads.py."""

import pytest
import wasmtime

from wasm_kernels import MAX_PAGES, abi, parallel
from wasm_kernels.templates import gemm, linear
from wasm_kernels.wasm import Limits, MemoryType, WasmFormatError, read_module
from wasm_kernels.wasm.rewrite import share_memory_import
from wasm_kernels.wasm.text import module_text


def _threads_engine() -> wasmtime.Engine:
    config = wasmtime.Config()
    config.wasm_threads = True
    config.shared_memory = True
    return wasmtime.Engine(config)


@pytest.mark.parametrize("isa", ["relaxed", "simd128", "scalar"])
def test_every_kernel_that_splits_has_a_valid_worker_module(isa):
    names = frozenset(parallel.splits(isa))
    families = {abi.BY_NAME[n].family for n in names}
    assert {"linear", "gemm", "conv", "rowwise", "unary"} <= families
    wasm = parallel.build_worker(isa, names)
    wasmtime.Module(_threads_engine(), wasm)  # NOTE: raises when invalid
    info = read_module(wasm)
    assert {e.name for e in info.exports} == set(parallel.EXPORTS.values())
    memories = [(i.module, i.name, i.type) for i in info.imports]
    assert memories == [("env", "memory", MemoryType(Limits(1, MAX_PAGES), shared=True)),
                        (*parallel.CONTROL, parallel.CONTROL_TYPE)]
    text = module_text(wasm)
    assert "memory.atomic.wait32 1" in text and "i64.atomic.rmw.cmpxchg 1" in text


@pytest.mark.parametrize("isa", ["relaxed", "simd128", "scalar"])
def test_parts_start_at_multiples_of_the_dense_tiles(isa):
    for name, tile in (("f32_linear", linear.MR[isa]), ("f32_gemm", gemm.TILES[isa][0])):
        assert parallel.splits(isa)[name].grain % tile == 0
        assert set(parallel.splits(isa)[name].advance) >= {"a", "wa", "c", "r"}
    assert parallel.splits("relaxed")["f32_conv2d"].only == {"n": 1, "groups": 1}


def test_a_kernel_that_does_not_split_is_refused():
    with pytest.raises(ValueError, match=r"kernels that do not split: \['f32_add'\]"):
        parallel.build_worker("relaxed", frozenset({"f32_add", "f32_softmax"}))


MODEL = wasmtime.wat2wasm("""(module
  (import "a" "f" (func (param i32)))
  (import "a" "t" (table 1 funcref))
  (import "a" "g" (global i32))
  (import "env" "memory" (memory 3))
  (import "a" "h" (func))
  (func (export "run") (result i32) (i32.load (i32.const 0))))""")


def test_the_memory_import_is_rewritten_shared_and_the_rest_kept():
    shared = share_memory_import(MODEL, "env", "memory", 100)
    before, after = read_module(MODEL), read_module(shared)
    memory = next(i.type for i in after.imports if i.name == "memory")
    assert memory.shared and (memory.limits.min, memory.limits.max) == (3, 100)
    assert [(i.module, i.name) for i in after.imports] == [
        (i.module, i.name) for i in before.imports]
    assert [i.type for i in after.imports if i.name != "memory"] == [
        i.type for i in before.imports if i.name != "memory"]
    wasmtime.Module(_threads_engine(), shared)


@pytest.mark.parametrize("wasm, match", [
    (b"\0asm\x02\0\0\0", r"not a WebAssembly 1\.0 module"),
    (wasmtime.wat2wasm("(module (memory 1))"), r"imports no memory env\.memory"),
    (MODEL[:40], r"unexpected end of data \(wanted 42 bytes\) at byte offset 24"),
])
def test_a_malformed_module_or_one_without_the_import_is_refused(wasm, match):
    with pytest.raises(WasmFormatError, match=match):
        share_memory_import(wasm, "env", "memory", 100)
