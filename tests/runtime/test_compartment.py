"""Compartments: limits, fuel, epochs and the trap taxonomy, with inline WAT. Every case
also checks that the process (and a fresh compartment) keeps working afterwards."""

from __future__ import annotations

import pytest
import wasmtime

from runtime.compartment import MAX_TIMEOUT, Compartment, ResourceLimits, parse_size, translate
from runtime.errors import TRAP_CODES, ExitTrap, LimitExceeded, ModelFormatError, Trap
from runtime.linker import NullResolver, RegistryResolver, instance_exports
from wasi_intrinsics import IntrinsicModule
from wasi_intrinsics.wasi import WasiState, preview1
from wasm_kernels.wasm import FuncType

PAGE = 65536


def load(compartment: Compartment, wat: str, resolver=None):
    module, info = compartment.compile(wasmtime.wat2wasm(wat))
    instance = compartment.instantiate(module, info, resolver or NullResolver())
    return {n: r.extern for n, r in instance_exports(compartment.store, instance, info).items()}


def run(compartment: Compartment, wat: str, *args):
    return compartment.call(load(compartment, wat)["run"], compartment.store, *args)


LOOP = '(module (func (export "run") (loop (br 0))))'


@pytest.fixture(autouse=True)
def still_works_afterwards():
    yield
    answer = '(module (func (export "run") (result i32) (i32.const 42)))'
    assert run(Compartment(), answer) == 42


@pytest.mark.parametrize("body, code, message", [
    ("(unreachable)", "unreachable", r"wasm `unreachable` instruction executed"),
    ("(drop (i32.load (i32.const 65536)))", "out_of_bounds",
     r"out of bounds memory access \(memory fault at wasm address 0x10000"),
    ("(drop (i32.div_u (i32.const 1) (i32.const 0)))", "division", r"integer divide by zero"),
    ("(drop (i32.div_s (i32.const 0x80000000) (i32.const -1)))", "division",
     r"integer overflow"),
    ("(drop (i32.trunc_f32_s (f32.const nan)))", "conversion",
     r"invalid conversion to integer"),
    ("(call_indirect (i32.const 5))", "out_of_bounds", r"undefined element"),
    ("(call_indirect (i32.const 0))", "indirect_call", r"uninitialized element"),
    ("(call $run)", "stack_overflow", r"call stack exhausted"),
])
def test_traps_map_to_the_taxonomy(body, code, message):
    wat = f'(module (table 1 funcref) (memory 1) (func $run (export "run") {body}))'
    with pytest.raises(Trap, match=message) as info:
        run(Compartment(), wat)
    assert info.value.code == code and code in TRAP_CODES
    assert info.value.frames and "+0x" in info.value.frames[0]


def test_a_trap_message_names_the_innermost_function():
    wat = '''(module $outer (func $inner unreachable)
             (func (export "run") (call $inner)))'''
    with pytest.raises(Trap, match=r"^unreachable in outer!inner: wasm trap: ") as info:
        run(Compartment(), wat)
    assert [frame.split("+")[0] for frame in info.value.frames] == ["outer!inner",
                                                                    "outer!func[1]"]


def test_an_uncaught_exception_is_a_trap():
    wat = '(module (tag $t (param i32)) (func (export "run") (throw $t (i32.const 7))))'
    with pytest.raises(Trap, match=r"uncaught wasm exception") as info:
        run(Compartment(), wat)
    assert info.value.code == "exception"


def test_an_infinite_loop_is_stopped_by_the_timeout():
    compartment = Compartment(ResourceLimits(timeout=0.05))
    with pytest.raises(LimitExceeded, match=r"time limit of 0\.05 s exceeded") as info:
        run(compartment, LOOP)
    assert info.value.code == "timeout"
    # the deadline is re-armed per call, so the same compartment runs again
    assert run(compartment, '(module (func (export "run") (result i32) (i32.const 1)))') == 1


def test_an_infinite_loop_is_stopped_by_fuel():
    compartment = Compartment(ResourceLimits(fuel=10_000))
    with pytest.raises(LimitExceeded, match=r"fuel limit of 10000 exhausted") as info:
        run(compartment, LOOP)
    assert info.value.code == "fuel"


def test_memory_grow_past_the_cap_returns_minus_one():
    compartment = Compartment(ResourceLimits(max_memory=2 * PAGE))
    grow = '(module (memory 1) (func (export "run") (param i32) (result i32) ' \
           '(memory.grow (local.get 0))))'
    exports = load(compartment, grow)
    assert compartment.call(exports["run"], compartment.store, 1) == 1
    assert compartment.call(exports["run"], compartment.store, 1) == -1


def test_initial_memory_over_the_cap_is_a_memory_limit():
    with pytest.raises(LimitExceeded, match=r"memory limit of 131072 bytes exceeded: memory "
                                            r"minimum size of 3 pages") as info:
        load(Compartment(ResourceLimits(max_memory=2 * PAGE)), "(module (memory 3))")
    assert info.value.code == "memory"


def test_table_and_instance_caps_are_limits():
    with pytest.raises(LimitExceeded, match=r"tables limit of 16 tables of at most 10 "
                                            r"elements exceeded") as table:
        load(Compartment(ResourceLimits(max_table_elements=10)), "(module (table 11 funcref))")
    compartment = Compartment(ResourceLimits(max_instances=1))
    load(compartment, "(module)")
    with pytest.raises(LimitExceeded, match=r"instances limit of 1 instances exceeded"
                       ) as instances:
        load(compartment, "(module)")
    assert (table.value.code, instances.value.code) == ("tables", "instances")


def test_proc_exit_is_an_exit_trap():
    compartment = Compartment()
    registry = RegistryResolver()
    registry.register("wasi_snapshot_preview1",
                      preview1().instantiate(compartment.store, WasiState()))
    wat = '''(module (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
             (func (export "run") (call $exit (i32.const 3)) (unreachable)))'''
    with pytest.raises(ExitTrap, match="the program exited with code 3") as info:
        compartment.call(load(compartment, wat, registry)["run"], compartment.store)
    assert (info.value.code, info.value.exit_code) == ("exit", 3)


def test_a_host_exception_surfaces_as_itself():
    class Refused(Exception):
        pass

    def refuse(ctx) -> None:
        raise Refused("no")

    compartment = Compartment()
    host = IntrinsicModule("host")
    host.define_function("refuse", FuncType((), ()), refuse)
    registry = RegistryResolver()
    registry.register("host", host.instantiate(compartment.store))
    wat = '''(module (import "host" "refuse" (func $r))
             (func (export "run") (call $r)))'''
    with pytest.raises(Refused, match="no"):
        compartment.call(load(compartment, wat, registry)["run"], compartment.store)


def test_a_trapping_start_function_fails_instantiation():
    with pytest.raises(Trap, match="unreachable") as info:
        load(Compartment(), "(module (func $s unreachable) (start $s))")
    assert info.value.code == "unreachable"


@pytest.mark.parametrize("data, message", [
    (b"\0asm\x02\0\0\0", r"malformed WebAssembly: unsupported WebAssembly version 02000000"),
    (b"nope", r"malformed WebAssembly: not a WebAssembly binary"),
    (wasmtime.wat2wasm("(module (func (result i32)))"),
     r"invalid WebAssembly: Invalid input WebAssembly code at offset 24: type mismatch"),
])
def test_bad_binaries_are_model_format_errors(data, message):
    with pytest.raises(ModelFormatError, match=message):
        Compartment().compile(data)


def test_other_exceptions_pass_through_translate():
    error = KeyError("x")
    assert translate(error, ResourceLimits()) is error


@pytest.mark.parametrize("kwargs, error, message", [
    ({"max_memory": 0}, ValueError, (r"max_memory must be between 1 and 9223372036854775807 "
                                     r"bytes, got 0")),
    ({"max_memory": 2**64 + 1000}, ValueError, r"max_memory must be between 1 and"),
    ({"max_memory": 1.5}, TypeError, r"max_memory must be an integer number of bytes, got 1.5"),
    ({"timeout": -1}, ValueError, (r"timeout must be more than 0 and at most 9.22e\+16 "
                                   r"seconds, got -1")),
    ({"timeout": float("inf")}, ValueError, r"timeout must be .*, got inf"),
    ({"timeout": float("nan")}, ValueError, r"timeout must be .*, got nan"),
    ({"timeout": 1e300}, ValueError, r"timeout must be .*, got 1e\+300"),
    ({"timeout": True}, TypeError, r"timeout must be a number of seconds, got True"),
    ({"fuel": 0}, ValueError, r"fuel must be between 1 and 18446744073709551615 instructions"),
    ({"fuel": 2**64}, ValueError, r"fuel must be between 1 and .*, got 18446744073709551616"),
    ({"fuel": 1.5}, TypeError, r"fuel must be an integer number of instructions, got 1.5"),
    ({"max_instances": 0}, ValueError, r"max_instances must be between 1 and"),
])
def test_limit_values_out_of_range_are_refused_with_a_clear_message(kwargs, error, message):
    with pytest.raises(error, match=message):
        ResourceLimits(**kwargs)


def test_the_largest_limits_are_enforced_without_wrapping():
    limits = ResourceLimits(max_memory=(1 << 63) - 1, timeout=MAX_TIMEOUT, fuel=(1 << 64) - 1)
    grow = """(module (memory 1) (func (export "run") (result i32)
        (memory.grow (i32.const 2)))) """
    assert run(Compartment(limits), grow) == 1  # a huge cap is no cap, not a wrapped one


def test_parse_size():
    assert parse_size("64MiB") == 64 << 20 and parse_size("1kb") == 1000 and parse_size(7) == 7
    with pytest.raises(ValueError, match=r"invalid size 'lots'; expected e\.g\. '64MiB'"):
        parse_size("lots")


def test_wasm_features_can_be_switched_off():
    two_memories = wasmtime.wat2wasm("(module (memory 1) (memory 1))")
    Compartment().compile(two_memories)
    with pytest.raises(ModelFormatError, match=r"invalid WebAssembly: .*multiple memories"):
        Compartment(features=(("multi_memory", False),)).compile(two_memories)
    with pytest.raises(ValueError, match=r"unknown wasm feature 'telepathy'; available: "
                                         r"\[.*'multi_memory'"):
        Compartment(features=(("telepathy", True),))
