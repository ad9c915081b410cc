"""The linker: resolvers, import subtyping and the all-at-once link report (inline WAT)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import wasmtime

from runtime.compartment import Compartment
from runtime.errors import LinkError, Trap
from runtime.linker import (
    ChainResolver,
    NullResolver,
    RegistryResolver,
    StubResolver,
    current_type,
    instance_exports,
    link,
)
from wasi_intrinsics import HostContext, IntrinsicModule, f32, i32
from wasm_kernels.wasm import FuncType, GlobalType, Limits, MemoryType, TableType


def wasm(wat: str) -> bytes:
    return wasmtime.wat2wasm(wat)


def instantiate(compartment: Compartment, wat: str, resolver=None):
    module, info = compartment.compile(wasm(wat))
    instance = compartment.instantiate(module, info, resolver or NullResolver())
    return instance_exports(compartment.store, instance, info)


@pytest.fixture
def compartment() -> Compartment:
    return Compartment()


@pytest.fixture
def host(compartment: Compartment) -> RegistryResolver:
    env = IntrinsicModule("env")

    @env.function
    def div(ctx: HostContext, a: i32, b: i32) -> f32:
        return a / b

    env.define_global("g", GlobalType("i32", False), 7)
    env.define_global("counter", GlobalType("i64", True), 0)
    env.define_memory("memory", MemoryType(Limits(1, 4)))
    env.define_table("table", TableType("funcref", Limits(2, 10)))
    registry = RegistryResolver()
    registry.register("env", env.instantiate(compartment.store))
    return registry


def test_registry_resolves_every_kind_and_the_module_runs(compartment, host):
    exports = instantiate(compartment, """(module
        (import "env" "div" (func $div (param i32 i32) (result f32)))
        (import "env" "g" (global $g i32))
        (import "env" "counter" (global $c (mut i64)))
        (import "env" "memory" (memory 1))
        (import "env" "table" (table 1 funcref))
        (func (export "run") (result f32) (call $div (global.get $g) (i32.const 2))))""", host)
    assert exports["run"].type == FuncType((), ("f32",))
    assert compartment.call(exports["run"].extern, compartment.store) == 3.5


def test_link_report_lists_every_problem_at_once(compartment, host):
    module, info = compartment.compile(wasm("""(module
        (import "env" "div" (func (param i32 i32) (result i32)))
        (import "env" "nope" (func))
        (import "other" "x" (global i32))
        (import "env" "g" (global (mut i32)))
        (import "env" "memory" (func)))"""))
    result = link(info, host, compartment.store)
    assert not result.ok
    assert result.problems == [
        "env.div: expected (i32, i32) -> i32, got (i32, i32) -> f32",
        "env.nope: expected () -> (), got nothing (unknown import)",
        "other.x: expected global i32, got nothing (unknown import)",
        "env.g: expected global mut i32, got global i32",
        "env.memory: expected () -> (), got memory 1..4",
    ]
    with pytest.raises(LinkError, match=r"5 import\(s\) could not be linked: env\.div: "
                                        r"expected \(i32, i32\) -> i32, got"):
        compartment.instantiate(module, info, host)


@pytest.mark.parametrize("wat, ok", [
    ('(memory 1)', True), ('(memory 0 4)', True), ('(memory 1 8)', True),
    ('(memory 2)', False), ('(memory 1 3)', False),
    ('(table 2 funcref)', True), ('(table 1 10 funcref)', True),
    ('(table 3 funcref)', False), ('(table 2 9 funcref)', False),
    ('(table 2 externref)', False),
])
def test_memory_and_table_limits_follow_spec_subtyping(compartment, host, wat, ok):
    field = "memory" if "memory" in wat else "table"
    _, info = compartment.compile(wasm(f'(module (import "env" "{field}" {wat}))'))
    assert link(info, host, compartment.store).ok is ok


def test_a_grown_memory_matches_by_its_current_size(compartment, host):
    grower = instantiate(compartment, """(module (import "env" "memory" (memory 1))
        (func (export "grow") (result i32) (memory.grow (i32.const 1))))""", host)
    _, info = compartment.compile(wasm('(module (import "env" "memory" (memory 2)))'))
    assert not link(info, host, compartment.store).ok
    assert compartment.call(grower["grow"].extern, compartment.store) == 1
    assert link(info, host, compartment.store).ok
    memory = host.resolve("env", "memory", info.imports[0].type)
    assert current_type(compartment.store, memory) == MemoryType(Limits(2, 4))


def test_registered_instance_exports_link_into_another_module(compartment):
    registry = RegistryResolver()
    registry.register("M", instantiate(compartment, """(module
        (global (export "g") (mut i32) (i32.const 1))
        (func (export "inc") (global.set 0 (i32.add (global.get 0) (i32.const 1)))))"""))
    user = instantiate(compartment, """(module (import "M" "inc" (func $inc))
        (import "M" "g" (global $g (mut i32)))
        (func (export "twice") (result i32) (call $inc) (call $inc) (global.get $g)))""",
                       registry)
    assert compartment.call(user["twice"].extern, compartment.store) == 3
    assert "M" in registry and "N" not in registry


def test_register_rejects_anything_but_exports(compartment):
    with pytest.raises(TypeError, match=r"register\('M', \.\.\.\) expected an "
                                        r"IntrinsicInstance or a mapping"):
        RegistryResolver().register("M", {"f": object()})


def test_chain_takes_the_first_answer_even_if_mistyped(compartment, host):
    stubs = StubResolver(compartment.store)
    _, info = compartment.compile(wasm("""(module (import "env" "g" (global i64))
        (import "env" "missing" (func (param i32))))"""))
    result = link(info, ChainResolver(NullResolver(), host, stubs), compartment.store)
    assert result.problems == ["env.g: expected global i64, got global i32"]


def test_trap_stub_raises_a_trap_naming_the_import(compartment):
    exports = instantiate(compartment, """(module (import "env" "f" (func $f (param i32)))
        (func (export "run") (call $f (i32.const 1))))""", StubResolver(compartment.store))
    with pytest.raises(Trap, match=r"called the stub for unresolved import env\.f \(i32\) -> "
                                   r"\(\)") as info:
        compartment.call(exports["run"].extern, compartment.store)
    assert info.value.code == "unreachable"


def test_zero_stubs_for_every_kind(compartment):
    exports = instantiate(compartment, """(module
        (import "m" "f" (func $f (result i32 f64)))
        (import "m" "g" (global $g f32))
        (import "m" "r" (global $r funcref))
        (import "m" "mem" (memory 2 3))
        (import "m" "t" (table 4 externref))
        (func (export "run") (result i32 f64 f32 i32 i32)
            (call $f) (global.get $g) (memory.size) (table.size)))""",
                          StubResolver(compartment.store, mode="zero"))
    assert compartment.call(exports["run"].extern, compartment.store) == [0, 0.0, 0.0, 2, 4]


def test_stub_mode_is_checked(compartment):
    with pytest.raises(ValueError, match=r"unknown stub mode 'loud'; expected 'trap' or "
                                         r"'zero'"):
        StubResolver(compartment.store, mode="loud")


def test_v128_imports_are_reported_never_built(compartment):
    _, info = compartment.compile(wasm("""(module
        (import "env" "v" (func (param v128) (result v128)))
        (import "env" "vg" (global v128))
        (import "env" "s" (memory 1 1 shared)))"""))
    result = link(info, StubResolver(compartment.store), compartment.store)
    assert result.problems == [
        ("env.v: expected (v128) -> v128, got nothing (unknown import; the host cannot "
         "provide v128 externs)"),
        ("env.vg: expected global v128, got nothing (unknown import; the host cannot provide "
         "v128 externs)"),
        "env.s: expected memory 1..1 shared, got nothing (unknown import)",
    ]


def test_tags_link_exactly_and_are_never_stubbed(compartment):
    registry = RegistryResolver()
    registry.register("M", instantiate(compartment, '(module (tag (export "t") (param i32)))'))
    _, info = compartment.compile(wasm("""(module (import "M" "t" (tag (param i32)))
        (import "M" "t" (tag (param f32))) (import "N" "t" (tag)))"""))
    result = link(info, ChainResolver(registry, StubResolver(compartment.store)),
                  compartment.store)
    assert result.problems == ["M.t: expected tag (f32), got tag (i32)",
                               "N.t: expected tag (), got nothing (unknown import)"]


def test_v128_functions_link_between_modules_without_touching_wasmtime_types():
    # NOTE: in a subprocess, because a regression here aborts the interpreter.
    script = textwrap.dedent("""
        import wasmtime
        from runtime.compartment import Compartment
        from runtime.linker import RegistryResolver, instance_exports
        c = Compartment()
        def load(wat, resolver):
            module, info = c.compile(wasmtime.wat2wasm(wat))
            return instance_exports(c.store, c.instantiate(module, info, resolver), info)
        registry = RegistryResolver()
        registry.register("simd", load('(module (func (export "id") (param v128) '
                                       '(result v128) local.get 0))', registry))
        user = load('(module (import "simd" "id" (func $id (param v128) (result v128))) '
                    '(func (export "lane") (result i32) (i32x4.extract_lane 1 '
                    '(call $id (v128.const i32x4 1 2 3 4)))))', registry)
        print(c.call(user["lane"].extern, c.store))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, "2"), done.stderr
