"""The parallel-dispatch module (``wasm_kernels.parallel``); its behaviour on threads is
tested in tests/runtime/test_threads.py."""

import pytest
import wasmtime

from wasm_kernels import abi, parallel
from wasm_kernels.templates import gemm, linear
from wasm_kernels.wasm import read_module
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
    assert {e.name for e in info.exports} == {*parallel.EXPORTS.values(),
                                              parallel.MEMORY_EXPORTS["memory"]}
    assert [(i.module, i.name, i.type) for i in info.imports] == [
        (*parallel.CONTROL, parallel.CONTROL_TYPE)]
    assert info.memories == [parallel.MEMORY_TYPE]
    # the control memory is memory 0 here, the linear memory 1: every body is renumbered
    text = module_text(wasm)
    assert "memory.atomic.wait32 align" in text and "i64.atomic.rmw.cmpxchg offset" in text
    assert "memory.atomic.wait32 1" not in text and "i64.atomic.rmw.cmpxchg 1" not in text
    assert ".load 1 " in text and ".store 1 " in text


@pytest.mark.parametrize("isa", ["relaxed", "simd128", "scalar"])
def test_parts_start_at_multiples_of_the_dense_tiles(isa):
    for name, tile in (("f32_linear", linear.MR[isa]), ("f32_gemm", gemm.TILES[isa][0])):
        assert parallel.splits(isa)[name].grain % tile == 0
        assert set(parallel.splits(isa)[name].advance) >= {"a", "wa", "c", "r"}
    assert parallel.splits("relaxed")["f32_conv2d"].only == {"n": 1, "groups": 1}


def test_a_kernel_that_does_not_split_is_refused():
    with pytest.raises(ValueError, match=r"kernels that do not split: \['f32_add'\]"):
        parallel.build_worker("relaxed", frozenset({"f32_add", "f32_softmax"}))
