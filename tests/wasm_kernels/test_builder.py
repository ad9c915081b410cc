"""The wasm builder's stack-typed check: it accepts and rejects what wabt's validator does,
and its errors name the instruction, the expected and the found stack types."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import wasmtime

from wasm_kernels import abi
from wasm_kernels.build import ISA_NAMES, build, generate
from wasm_kernels.templates.isa import Isa
from wasm_kernels.wasm import Code, FuncType, Limits, MemoryType, ModuleBuilder, WasmTypeError

wabt = pytest.mark.skipif(shutil.which("wat2wasm") is None, reason="wabt is not installed")

Body = list[tuple[object, ...]]

CASES: dict[str, Body] = {
    "one result": [("local.get", 0)],
    "arity slip": [("local.get", 0), ("i32.add",)],
    "type slip": [("local.get", 1), ("i32.eqz",)],
    "a value too many": [("local.get", 0), ("local.get", 0)],
    "no result": [],
    "after unreachable anything goes": [("unreachable",), ("i32.add",)],
    "after br the block is polymorphic": [("block", "i32"), ("i32.const", 1), ("br", 0),
                                          ("f32.add",), ("drop",), ("end",)],
    "a known type still counts after br": [("block", "i32"), ("br", 0), ("f32.const", 1.0),
                                           ("end",)],
    "block result of the wrong type": [("block", "i32"), ("f32.const", 1.0), ("end",)],
    "if with a result needs else": [("local.get", 0), ("if", "i32"), ("i32.const", 1),
                                    ("end",)],
    "if else": [("local.get", 0), ("if", "i32"), ("i32.const", 1), ("else",),
                ("i32.const", 2), ("end",)],
    "br_if carries the label's value": [("block", "i32"), ("i32.const", 7), ("local.get", 0),
                                        ("br_if", 0), ("end",)],
    "br_if without the label's value": [("block", "i32"), ("local.get", 0), ("br_if", 0),
                                        ("i32.const", 1), ("end",)],
    "select of one type": [("i32.const", 1), ("i32.const", 2), ("local.get", 0), ("select",)],
    "select of two types": [("i32.const", 1), ("f32.const", 1.0), ("local.get", 0),
                            ("select",), ("drop",), ("i32.const", 0)],
    "local.set of the wrong type": [("i32.const", 1), ("local.set", 1), ("i32.const", 0)],
    "local.tee keeps the value": [("f32.const", 2.0), ("local.tee", 1), ("drop",),
                                  ("i32.const", 0)],
    "return then a wrong type": [("i32.const", 1), ("return",), ("f32.const", 0.0)],
    "return": [("i32.const", 1), ("return",)],
    "a branch to a loop carries nothing": [("loop", "i32"), ("i32.const", 1), ("br", 0),
                                           ("end",)],
    "drop of nothing": [("drop",), ("i32.const", 0)],
    "values below a block are out of reach": [("i32.const", 1), ("block",), ("drop",),
                                              ("end",)],
    "v128 arithmetic": [("v128.const", bytes(16)), ("f32x4.splat",)],
    "simd": [("v128.const", bytes(16)), ("f32.const", 1.0), ("f32x4.splat",),
             ("f32x4.add",), ("v128.any_true",)],
}


def _wat(body: Body) -> str:
    lines = []
    for op, *args in body:
        if op in ("block", "loop", "if") and args:
            lines.append(f"{op} (result {args[0]})")
        elif op == "v128.const":
            lines.append("v128.const i32x4 0 0 0 0")
        else:
            lines.append(" ".join([str(op), *map(str, args)]))
    return ("(module (func (param i32) (result i32) (local f32)\n  " + "\n  ".join(lines)
            + "))")


def _build(body: Body) -> None:
    c = Code(("i32",), ("i32",))
    c.local("f32")
    for op, *args in body:
        c.emit(str(op), *args)
    c.close()


def _wabt_accepts(body: Body, tmp_path: Path) -> bool:
    wat, wasm = tmp_path / "case.wat", tmp_path / "case.wasm"
    wat.write_text(_wat(body))
    subprocess.run(["wat2wasm", "--no-check", str(wat), "-o", str(wasm)], check=True,
                   capture_output=True)
    result = subprocess.run(["wasm-validate", str(wasm)], check=False, capture_output=True)
    return result.returncode == 0


@wabt
@pytest.mark.parametrize("case", CASES)
def test_the_stack_check_agrees_with_wabt(case: str, tmp_path: Path) -> None:
    try:
        _build(CASES[case])
        ours = True
    except WasmTypeError:
        ours = False
    assert ours == _wabt_accepts(CASES[case], tmp_path)


@pytest.mark.parametrize("case, message", [
    ("arity slip", r"^i32\.add: expected \[i32 i32\] on the stack, found \[i32\]$"),
    ("type slip", r"^i32\.eqz: expected \[i32\] on the stack, found \[f32\]$"),
    ("a value too many", r"^end: expected \[i32\] on the stack, found \[i32 i32\]$"),
    ("block result of the wrong type", r"^end: expected \[i32\] on the stack, found \[f32\]$"),
    ("if with a result needs else", r"an if without else cannot produce \[i32\]"),
    ("select of two types", r"^select: expected \[t t i32\] on the stack, found \[i32 f32 i32\]"),
    ("return then a wrong type",
     r"^end: expected \[i32\] on the stack, found \[\(unreachable\) f32\]$"),
    ("values below a block are out of reach", r"^drop: expected \[\?\] on the stack, found \[\]$"),
])
def test_errors_name_the_instruction_and_both_stacks(case: str, message: str) -> None:
    with pytest.raises(WasmTypeError, match=message):
        _build(CASES[case])


@pytest.mark.parametrize("body, message", [
    ([("local.get", 5)], r"local\.get 5: no such local; the function has 2 parameters"),
    ([("br", 3)], r"br 3: no enclosing block at depth 3 \(there are 1\)"),
    ([("global.get", 0)], r"global\.get 0: no such global; the module has 0"),
    ([("call", 0)], r"call 0: this body was built without the module's functions"),
    ([("else",)], r"else: not inside an if \(inside a function\)"),
    ([("block",), ("i32.const", 0)], r"end of function: 1 block\(s\) still open: \['block'\]"),
    ([("i32.const", 0), ("end",)], r"end: no open block to end \(the function's own end is "
                                   r"added when the body is closed\)"),
    ([("i32.bogus",)], r"unknown instruction 'i32\.bogus'"),
])
def test_bad_indices_and_structure_are_named(body: Body, message: str) -> None:
    with pytest.raises((WasmTypeError, ValueError), match=message):
        _build(body)


def test_a_call_is_checked_against_the_callee_and_named() -> None:
    b = ModuleBuilder("m")
    gather = b.import_func(abi.MODULE, "f32_gather", FuncType(("i32",) * 6, ()))
    c = b.code(FuncType((), ()))
    c.emit("i32.const", 0).emit("i32.const", 0)
    with pytest.raises(WasmTypeError, match=r"^call 0 \(f32_gather\): expected "
                                            r"\[i32 i32 i32 i32 i32 i32\] on the stack, "
                                            r"found \[i32 i32\]$"):
        c.emit("call", gather)


def test_named_locals() -> None:
    c = Code(("i32",), ("i32",), names=("x",))
    c.local("i32", "y")
    c.get("x").set("y").get("y")
    assert c.instructions == [("local.get", (0,)), ("local.set", (1,)), ("local.get", (1,))]
    with pytest.raises(ValueError, match=r"no local called 'z'; named: \['x', 'y'\]"):
        c.get("z")
    with pytest.raises(ValueError, match=r"local 'y' is already declared \(index 1\)"):
        c.local("f32", "y")


def test_a_closed_body_takes_no_more_instructions() -> None:
    c = Code((), ())
    c.close()
    with pytest.raises(WasmTypeError, match=r"nop: the function body is already closed"):
        c.emit("nop")


def test_a_body_must_match_its_function_type() -> None:
    with pytest.raises(WasmTypeError, match=r"function f of type \(i32\) -> i32 has a body "
                                            r"built for \(i32\) -> \(\)"):
        ModuleBuilder().add_function(FuncType(("i32",), ("i32",)), Code(("i32",)), export="f")


def test_a_template_slip_names_the_kernel_and_isa(monkeypatch: pytest.MonkeyPatch) -> None:
    def forgets_the_accumulator(self: Isa, c: Code, acc: int) -> None:
        c.emit("f32x4.relaxed_madd").emit("local.set", acc)

    monkeypatch.setattr(Isa, "madd_into", forgets_the_accumulator)
    with pytest.raises(WasmTypeError, match=r"^while generating f32_linear \(relaxed\): "
                                            r"f32x4\.relaxed_madd: expected \[v128 v128 v128\] "
                                            r"on the stack, found \[v128 v128\]$"):
        generate(abi.BY_NAME["f32_linear"], "relaxed")


@wabt
@pytest.mark.parametrize("isa", ISA_NAMES)
def test_every_kernel_of_the_abi_passes_wasm_validate(isa: str, tmp_path: Path) -> None:
    path = tmp_path / f"kernels_{isa}.wasm"
    path.write_bytes(build(isa))
    subprocess.run(["wasm-validate", "--enable-relaxed-simd", str(path)], check=True)


def test_renumbered_memories_move_every_access_to_the_other_memory() -> None:
    """A body written for memory 0 (loads, stores, size, grow, fill, copy), renumbered
    0 <-> 1, touches only memory 1 in a module of two memories; wasmtime runs it."""
    b = ModuleBuilder("m")
    for i in range(2):
        b.export(f"mem{i}", "memory", b.add_memory(MemoryType(Limits(1, 4))))
    c = b.code(FuncType((), ("i32",)))
    c.emit("i32.const", 8).emit("i32.const", 7).emit("i32.store", 2, 0)
    c.emit("i32.const", 16).emit("i32.const", 5).emit("i32.const", 4).emit("memory.fill")
    c.emit("i32.const", 24).emit("i32.const", 8).emit("i32.const", 4).emit("memory.copy")
    c.emit("i32.const", 1).emit("memory.grow").emit("drop")
    c.emit("i32.const", 8).emit("i32.load", 2, 0).emit("memory.size").emit("i32.add")
    c.renumber_memories({0: 1, 1: 0})
    b.add_function(FuncType((), ("i32",)), c, export="run")
    store = wasmtime.Store(wasmtime.Engine())
    exports = wasmtime.Instance(store, wasmtime.Module(store.engine, b.encode()), []).exports(store)
    assert exports["run"](store) == 7 + 2
    untouched, moved = (exports[f"mem{i}"] for i in (0, 1))
    assert (untouched.size(store), moved.size(store)) == (1, 2)
    assert untouched.read(store, 0, 32) == bytes(32)
    assert moved.read(store, 8, 28) == bytes([7, 0, 0, 0]) + bytes(4) + bytes([5] * 4) + bytes(
        4) + bytes([7, 0, 0, 0])
