"""Intrinsic modules: declarations, every extern kind, merging, the caller's memory, and
host exceptions, linked through the runtime with inline WAT."""

from __future__ import annotations

import numpy as np
import pytest
import wasmtime

from runtime.compartment import Compartment
from runtime.linker import RegistryResolver, Resolved, instance_exports
from wasi_intrinsics import HostContext, IntrinsicModule, f32, f64, i32, i64
from wasm_kernels.wasm import FuncType, GlobalType, Limits, MemoryType, TableType


def load(module: IntrinsicModule, wat: str, state=None, memory=None):
    """Instantiate ``module`` and a WAT module importing it; the WAT module's exports."""
    compartment = Compartment()
    registry = RegistryResolver()
    registry.register(module.name, module.instantiate(compartment.store, state, memory))
    compiled, info = compartment.compile(wasmtime.wat2wasm(wat))
    instance = compartment.instantiate(compiled, info, registry)
    exports = instance_exports(compartment.store, instance, info)
    return compartment, {name: found.extern for name, found in exports.items()}


def call(compartment: Compartment, fn, *args):
    return compartment.call(fn, compartment.store, *args)


def test_a_decorated_function_declares_its_signature():
    host = IntrinsicModule("host")

    @host.function
    def mix(ctx: HostContext, a: i32, b: i64, c: f32, d: f64) -> f64:
        return a + b + c + d

    @host.function(name="nothing")
    def _(ctx: HostContext) -> None:
        ctx.state.append("called")

    assert host.types == {"mix": FuncType(("i32", "i64", "f32", "f64"), ("f64",)),
                          "nothing": FuncType((), ())}
    state: list[str] = []
    compartment, exports = load(host, """(module
        (import "host" "mix" (func $mix (param i32 i64 f32 f64) (result f64)))
        (import "host" "nothing" (func $nothing))
        (func (export "run") (result f64) (call $nothing)
            (call $mix (i32.const 1) (i64.const 2) (f32.const 0.5) (f64.const 0.25))))""",
                                state=state)
    assert call(compartment, exports["run"]) == 3.75 and state == ["called"]


def test_annotations_are_checked():
    host = IntrinsicModule("host")
    with pytest.raises(TypeError, match=r"f: parameter 'x' needs a wasm type annotation "
                                        r"\(i32, i64, f32 or f64\), got <class 'int'>"):
        @host.function
        def f(ctx: HostContext, x: int) -> i32:
            return x

    with pytest.raises(TypeError, match=r"h: parameter 'y' needs a wasm type annotation "
                                        r"\(i32, i64, f32 or f64\), got 'none'"):
        @host.function
        def h(ctx: HostContext, y) -> None:
            pass

    with pytest.raises(TypeError, match=r"g: result must be annotated i32, i64, f32, f64 or "
                                        r"None, got <class 'str'>"):
        @host.function
        def g(ctx: HostContext) -> str:
            return ""


def test_define_function_refuses_v128_and_non_callables():
    host = IntrinsicModule("host")
    with pytest.raises(ValueError, match=r"host functions cannot use value type 'v128'; "
                                         r"supported: \['externref', 'f32'"):
        host.define_function("v", FuncType(("v128",), ()), lambda ctx, v: None)
    with pytest.raises(TypeError, match=r"host function 'f' must be callable, got 3"):
        host.define_function("f", FuncType((), ()), 3)  # type: ignore[arg-type]


def test_globals_of_every_type():
    host = IntrinsicModule("host")
    values = {"i32": -7, "i64": 1 << 40, "f32": 1.5, "f64": 0.1}
    for content, value in values.items():
        host.define_global(content, GlobalType(content, False), value)
    host.define_global("counter", GlobalType("i32", True), 0)
    host.define_global("ref", GlobalType("externref", False), None)
    compartment, exports = load(host, """(module
        (import "host" "i32" (global $a i32)) (import "host" "i64" (global $b i64))
        (import "host" "f32" (global $c f32)) (import "host" "f64" (global $d f64))
        (import "host" "counter" (global $n (mut i32)))
        (import "host" "ref" (global $r externref))
        (func (export "run") (result i32 i64 f32 f64 i32 i32)
            (global.set $n (i32.add (global.get $n) (i32.const 1)))
            (global.get $a) (global.get $b) (global.get $c) (global.get $d) (global.get $n)
            (ref.is_null (global.get $r))))""")
    assert call(compartment, exports["run"]) == [-7, 1 << 40, 1.5, 0.1, 1, 1]


@pytest.mark.parametrize("ty, value, error, message", [
    (GlobalType("i32", False), 1.5, TypeError, r"global 'g' of type i32 needs an int, got 1\.5"),
    (GlobalType("f64", False), "1", TypeError, r"global 'g' of type f64 needs a float, got '1'"),
    (GlobalType("i64", False), True, TypeError, r"global 'g' of type i64 needs an int, got True"),
    (GlobalType("v128", False), 0, ValueError, r"host globals cannot use value type 'v128'"),
])
def test_global_values_are_checked(ty, value, error, message):
    with pytest.raises(error, match=message):
        IntrinsicModule("host").define_global("g", ty, value)


def test_memories_and_tables():
    host = IntrinsicModule("host")
    host.define_memory("memory", MemoryType(Limits(1, 3)))
    host.define_table("funcs", TableType("funcref", Limits(2, None)))
    host.define_table("refs", TableType("externref", Limits(1, 1)))
    compartment, exports = load(host, """(module
        (import "host" "memory" (memory 1 3)) (import "host" "funcs" (table 2 funcref))
        (import "host" "refs" (table 1 1 externref))
        (func (export "run") (result i32 i32 i32 i32)
            (memory.grow (i32.const 2)) (memory.grow (i32.const 1))
            (table.size 0) (table.size 1)))""")
    assert call(compartment, exports["run"]) == [1, -1, 2, 1]


@pytest.mark.parametrize("define, message", [
    (lambda m: m.define_memory("m", MemoryType(Limits(1, 1), shared=True)),
     r"memory 'm': shared memories cannot be declared as intrinsics"),
    (lambda m: m.define_table("t", TableType("i32", Limits(1))),
     r"table 't': element type must be funcref or externref, got 'i32'"),
])
def test_unsupported_memories_and_tables_are_refused(define, message):
    with pytest.raises(ValueError, match=message):
        define(IntrinsicModule("host"))


def test_merging_and_duplicate_names():
    clocks, fd = IntrinsicModule("clocks"), IntrinsicModule("fd")
    clocks.define_global("now", GlobalType("i64", False), 5)
    fd.define_function("write", FuncType(("i32",), ("i32",)), lambda ctx, x: x + 1)
    with pytest.raises(ValueError, match=r"intrinsic module 'fd' already declares 'write'; "
                                         r"every export name must be unique"):
        fd.define_function("write", FuncType((), ()), lambda ctx: None)
    merged = IntrinsicModule.merged("wasi", clocks, fd)
    assert merged.types == {"now": GlobalType("i64", False),
                            "write": FuncType(("i32",), ("i32",))}
    compartment, exports = load(merged, """(module (import "wasi" "write" (func $w
        (param i32) (result i32))) (import "wasi" "now" (global $now i64))
        (func (export "run") (result i32) (call $w (i32.wrap_i64 (global.get $now)))))""")
    assert call(compartment, exports["run"]) == 6
    again = IntrinsicModule("again")
    again.define_global("now", GlobalType("i32", False), 0)
    with pytest.raises(ValueError, match=r"cannot merge 'again' into 'wasi': 'now' is already "
                                         r"declared by 'clocks'"):
        IntrinsicModule.merged("wasi", clocks, fd, again)


def _memory_host() -> IntrinsicModule:
    host = IntrinsicModule("host")

    @host.function
    def fill(ctx: HostContext, ptr: i32, n: i32) -> i32:
        view = ctx.memory
        view[ptr:ptr + n] = np.arange(1, n + 1, dtype=np.uint8)  # writes guest memory
        return int(view[ptr:ptr + n].sum())

    return host


def test_the_callers_memory_is_a_zero_copy_view():
    compartment, exports = load(_memory_host(), """(module
        (import "host" "fill" (func $fill (param i32 i32) (result i32)))
        (memory (export "memory") 1)
        (func (export "run") (result i32 i32)
            (i32.store8 (i32.const 99) (i32.const 200))
            (call $fill (i32.const 100) (i32.const 4))
            (i32.load (i32.const 100))))""")
    assert call(compartment, exports["run"]) == [10, 0x04030201]


def test_a_bound_memory_serves_callers_that_export_none():
    compartment = Compartment()
    bound = wasmtime.Memory(compartment.store, wasmtime.MemoryType(wasmtime.Limits(1, None)))
    registry = RegistryResolver()
    registry.register("host", _memory_host().instantiate(compartment.store, memory=bound))
    registry.register("env", {"memory": Resolved(bound, MemoryType(Limits(1)))})
    compiled, info = compartment.compile(wasmtime.wat2wasm("""(module
        (import "host" "fill" (func $fill (param i32 i32) (result i32)))
        (import "env" "memory" (memory 1))
        (func (export "run") (result i32) (call $fill (i32.const 8) (i32.const 3))))"""))
    instance = compartment.instantiate(compiled, info, registry)
    assert call(compartment, instance.exports(compartment.store)["run"]) == 6
    assert bytes(bound.read(compartment.store, 8, 11)) == b"\x01\x02\x03"


def test_no_memory_is_a_lookup_error_that_surfaces_as_itself():
    compartment, exports = load(_memory_host(), """(module
        (import "host" "fill" (func $fill (param i32 i32) (result i32)))
        (func (export "run") (result i32) (call $fill (i32.const 0) (i32.const 1))))""")
    with pytest.raises(LookupError, match=r"the calling module exports no 'memory'"):
        call(compartment, exports["run"])


def test_a_host_exception_surfaces_as_itself_and_the_store_stays_usable():
    host = IntrinsicModule("host")

    @host.function
    def check(ctx: HostContext, x: i32) -> i32:
        if x < 0:
            raise ValueError(f"negative input {x}")
        return x * 2

    compartment, exports = load(host, """(module
        (import "host" "check" (func $check (param i32) (result i32)))
        (func (export "run") (param i32) (result i32) (call $check (local.get 0))))""")
    with pytest.raises(ValueError, match=r"negative input -3"):
        call(compartment, exports["run"], -3)
    assert call(compartment, exports["run"], 4) == 8
