"""Both kernel providers export exactly the ABI table: names and signatures."""

import pytest
import wasmtime

import wasm_kernels
from wasi_intrinsics.kernels import provider
from wasm_kernels import abi
from wasm_kernels.wasm import FuncType, read_module

EXPECTED = {k.name: FuncType(k.param_types, k.results) for k in abi.KERNELS}


def test_wasm_module_exports_exactly_the_table() -> None:
    for isa in wasm_kernels.ISAS:
        info = read_module(wasm_kernels.build(isa))
        exported = {e.name: e.type for e in info.exports}
        assert exported == EXPECTED, isa
        assert [(i.module, i.name) for i in info.imports] == [("env", "memory")]


def test_host_provider_declares_exactly_the_table() -> None:
    assert provider().types == EXPECTED
    assert provider().name == abi.MODULE


def test_every_variant_compiles_with_relaxed_simd() -> None:
    config = wasmtime.Config()
    config.wasm_relaxed_simd = True
    engine = wasmtime.Engine(config)
    for isa in wasm_kernels.ISAS:
        wasmtime.Module.validate(engine, wasm_kernels.build(isa))


def test_unknown_isa_is_named() -> None:

    with pytest.raises(ValueError, match="unknown kernel ISA 'avx'"):
        wasm_kernels.build("avx")


def test_a_subset_module_exports_only_the_kernels_asked_for() -> None:
    names = frozenset({"f32_linear", "f32_softmax"})
    info = read_module(wasm_kernels.build("simd128", names))
    assert {e.name: e.type for e in info.exports} == {n: EXPECTED[n] for n in names}


def test_a_subset_with_an_unknown_kernel_is_named() -> None:
    with pytest.raises(ValueError, match=rf"not kernels of {abi.MODULE}: \['f32_nope'\]"):
        wasm_kernels.build("simd128", frozenset({"f32_linear", "f32_nope"}))


def test_dense_kernels_ask_for_opt_level_none_and_the_rest_for_speed() -> None:
    levels = {name: wasm_kernels.opt_level(name) for name in abi.BY_NAME}
    assert set(levels.values()) == set(wasm_kernels.OPT_LEVELS)
    dense = {n for n, s in abi.BY_NAME.items() if s.family in ("linear", "gemm")}
    assert {n for n, level in levels.items() if level == "none"} == dense


def test_opt_level_of_an_unknown_kernel_is_named() -> None:
    with pytest.raises(ValueError, match=rf"not a kernel of {abi.MODULE}: 'f32_nope'"):
        wasm_kernels.opt_level("f32_nope")
