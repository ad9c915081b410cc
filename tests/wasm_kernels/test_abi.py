"""Both kernel providers export exactly the ABI table: names and signatures."""

import pytest
import wasmtime

import wasm_kernels
from wasi_intrinsics.kernels import provider
from wasm_kernels import abi
from wasm_kernels.wasm import FuncType, read_module

EXPECTED = {k.name: FuncType(k.param_types, k.results) for k in abi.KERNELS}


def test_wasm_module_exports_exactly_the_table() -> None:
    for isa in wasm_kernels.ISA_NAMES:
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
    for isa in wasm_kernels.ISA_NAMES:
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


def test_dense_conv_depthwise_winograd_and_attention_kernels_ask_for_opt_level_none(
        ) -> None:
    levels = {name: wasm_kernels.opt_level(name) for name in abi.BY_NAME}
    assert set(levels.values()) == set(wasm_kernels.OPT_LEVELS)
    dense = {n for n, s in abi.BY_NAME.items() if s.family in (
        "linear", "gemm", "conv", "conv_gemm", "depthwise", "winograd", "attention")}
    assert {n for n, level in levels.items() if level == "none"} == dense


def test_opt_level_of_an_unknown_kernel_is_named() -> None:
    with pytest.raises(ValueError, match=rf"not a kernel of {abi.MODULE}: 'f32_nope'"):
        wasm_kernels.opt_level("f32_nope")


# The ABI row is the single source: every table keyed by op is derived from it or equal to
# it, and the compiler finds kernels by (family, op, epilogue, dtype), never by parsing names.

def test_each_kernel_is_found_by_family_op_epilogue_and_dtype() -> None:
    assert len(abi.BY_OP) == len(abi.KERNELS)
    for spec in abi.KERNELS:
        assert abi.find(spec.family, spec.op, spec.epilogue, spec.dtypes[0]) is spec


def test_an_unknown_epilogue_is_named_with_what_the_family_has() -> None:
    with pytest.raises(KeyError, match=r"no linear kernel for 'linear' with epilogue "
                                       r"\('bias', 'tanh'\).*\('bias', 'relu'\)"):
        abi.find("linear", "linear", ("bias", "tanh"))


def test_names_follow_the_fields() -> None:
    from wasm_kernels import abi_quantized
    from wasm_kernels.kernel_spec import ELEMENTS

    quantized = {spec.name for table in (abi_quantized.QRESCALE, abi_quantized.QUANTIZE,
                                         abi_quantized.QLINEARS, abi_quantized.QCONV)
                 for spec in table}
    quantized |= {spec.name for spec in abi.KERNELS
                  if spec.family == "depthwise" and spec.dtypes[0] != "float32"}
    for spec in abi.KERNELS:
        short = {d: s for d, (s, _) in ELEMENTS.items()}
        if spec.name in quantized:
            short.update({"uint8": "qu8", "int8": "qs8"})
        if spec.family == "cast":
            expected = f"{short[spec.dtypes[0]]}_to_{short[spec.dtypes[1]]}"
        else:
            prefix = short[spec.dtypes[0]] + {"compare": "_cmp_", "reduce": "_reduce_"}.get(
                spec.family, "_")
            expected = "_".join((prefix + spec.op,) + spec.epilogue)
        assert spec.name == expected
        assert len(spec.activations) <= 1
        assert set(spec.epilogue) - set(spec.activations) <= {
            "bias", "add", "requantize", "dequantize", "dynamic_quantize"}, spec.name


def test_every_fused_activation_fuses_in_every_gemm_like_family() -> None:
    for family in ("gemm", "linear", "conv", "conv_gemm"):
        assert abi.fusable(family) == {"add", *abi.FUSED_ACTIVATIONS}, family
    assert set(abi.FUSED_ACTIVATIONS) <= set(abi.UNARY_OPS)


def test_op_keyed_tables_of_the_templates_and_the_host_match_the_abi() -> None:
    from wasi_intrinsics import kernels as host
    from wasm_kernels.templates import cast, reduce, rowwise, vmath

    def ops(family: str) -> set[str]:
        return {k.op for k in abi.KERNELS if k.family == family}

    assert set(vmath.FUNCTIONS) == set(vmath.MAX_ERROR)
    assert set(vmath.FUNCTIONS) <= set(abi.UNARY_OPS)
    assert set(reduce.COMBINE) == ops("reduce") == set(abi.REDUCE_OPS)
    assert set(rowwise.ROWS) == set(host.ROWWISE) == ops("rowwise")
    assert {tuple(k.dtypes) for k in abi.KERNELS if k.family == "cast"} == {
        (s, t) for s in cast.ACCESS for t in cast.ACCESS if s != t}
    assert set(host.FAMILIES) == {k.family for k in abi.KERNELS}


def test_every_formula_evaluates_on_expressions_and_on_numpy() -> None:
    import numpy as np

    from wasi_intrinsics.kernel_math import NUMPY_FUNCTIONS
    from wasm_kernels import formula
    from wasm_kernels.templates import activations, vmath
    from wasm_kernels.templates.expr import Expr

    for spec in abi.KERNELS:
        if not spec.formula:
            continue
        names = ("x",) if spec.family == "unary" else ("a", "b")
        values = {n: np.linspace(-2, 2, 5) for n in names}
        with np.errstate(all="ignore"):  # log, sqrt and div of the negatives and 0
            assert formula.evaluate(spec.formula, values, NUMPY_FUNCTIONS).shape == (5,)
        if spec.family == "unary" and spec.op not in vmath.FUNCTIONS:
            assert isinstance(activations.unary(spec.op)(Expr.input(0)), Expr)
        elif spec.family == "binary":
            assert isinstance(activations.binary(spec.formula)(Expr.input(0), Expr.input(1)),
                              Expr)


@pytest.mark.parametrize("text, message", [
    ("x +", "does not parse"),
    ("os.system(x)", "calls 'os.system'"),
    ("x[0]", "outside the formula language"),
    ("0 < x < 1", "chains comparisons"),
])
def test_a_formula_outside_the_language_is_named(text: str, message: str) -> None:
    from wasm_kernels import formula

    with pytest.raises(ValueError, match=message):
        formula.parse(text)


def test_an_unbound_variable_or_missing_function_is_named() -> None:
    from wasm_kernels import formula

    with pytest.raises(ValueError, match=r"reads 'y'; bound: \['x'\]"):
        formula.evaluate("x + y", {"x": 1.0}, {})
    with pytest.raises(ValueError, match="calls 'exp', which this evaluator lacks"):
        formula.evaluate("exp(x)", {"x": object()}, {})


def test_constant_calls_fold() -> None:
    from wasm_kernels import formula

    assert formula.evaluate("x * sqrt(4)", {"x": 3.0}, {}) == 6.0
