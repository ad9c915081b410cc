"""The stack-typed check a function body gets as it is built, one instruction at a time.

It follows the validation algorithm of the WebAssembly spec's appendix: a stack of value
types and a stack of control frames (the function, then each open ``block``/``loop``/``if``).
Instructions with a fixed signature take it from ``opcodes.OPCODES``; the others
(control, ``drop``, ``select``, ``local.*``, ``global.*``, ``call``) have a rule here.
After ``unreachable``, ``br`` or ``return`` the rest of the block is stack-polymorphic:
missing operands are of unknown type (``None``) and match anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .opcodes import OPCODES
from .types import FuncType, GlobalType

SHOWN = 8
"""How many values of the stack an error message shows (the top ones)."""

_FIXED = {name: (list(op.pops), list(op.pushes), len(op.pops))
          for name, op in OPCODES.items() if op.pops is not None and op.pushes is not None}
"""The table's fixed signatures as lists, the form the hot path compares the stack with."""


class WasmTypeError(ValueError):
    """An instruction does not fit the value stack or its context: wrong operand count or
    types, a bad local, global, function or label index, or unbalanced blocks."""


Callees = Sequence[tuple[str | None, FuncType]]
"""The function index space a body may ``call``: each function's name (if any) and type."""


@dataclass
class _Frame:
    kind: str
    """``function``, ``block``, ``loop``, ``if`` or ``else``."""
    results: tuple[str, ...]
    height: int
    unreachable: bool = False

    @property
    def label(self) -> tuple[str, ...]:
        """What a branch to this frame carries: nothing to a loop (no block parameters)."""
        return () if self.kind == "loop" else self.results


def _types(types: Sequence[str | None]) -> str:
    return " ".join("?" if t is None else t for t in types)


class StackCheck:
    """The value and control stacks of one function body under construction.

    Args:
        locals_: the types of the parameters then the declared locals; the caller appends
            to it as locals are declared.
        results: the function's result types.
        funcs: the functions ``call`` may name, or ``None`` when the body may not call.
        globals_: the globals ``global.get``/``global.set`` may name.
    """

    def __init__(self, locals_: list[str], results: tuple[str, ...],
                 funcs: Callees | None = None, globals_: Sequence[GlobalType] = ()):
        self.locals = locals_
        self.funcs = funcs
        self.globals = globals_
        self.values: list[str | None] = []
        self.frames = [_Frame("function", results, 0)]

    @property
    def closed(self) -> bool:
        return not self.frames

    def step(self, name: str, args: tuple) -> None:
        """Apply instruction ``name`` (a row of ``OPCODES``) with immediates ``args``.

        Raises:
            WasmTypeError: naming the instruction, the types it expected and those found.
        """
        fixed = _FIXED.get(name)
        if fixed is None or not self.frames:
            if not self.frames:
                raise WasmTypeError(f"{name}: the function body is already closed")
            _RULES[name](self, name, args)
            return
        pops, pushes, n = fixed
        values = self.values
        if n:
            if len(values) - n >= self.frames[-1].height and values[-n:] == pops:
                del values[-n:]
            else:
                self.pop(name, args, pops)
        values += pushes

    def error(self, name: str, args: tuple, expected: Sequence[str | None]) -> WasmTypeError:
        frame = self.frames[-1]
        found = self.values[frame.height:]
        shown = ("... " if len(found) > SHOWN else "") + _types(found[-SHOWN:])
        if frame.unreachable:
            shown = f"(unreachable) {shown}".strip()
        return WasmTypeError(f"{describe(name, args, self.funcs)}: expected [{_types(expected)}] "
                             f"on the stack, found [{shown}]")

    def pop(self, name: str, args: tuple, expected: Sequence[str | None]
            ) -> list[str | None]:
        """Pop ``expected`` (bottom first; ``None`` matches any type) and return what was
        there (``None`` where unknown).

        Raises:
            WasmTypeError: too few values above the current block's base, or other types.
        """
        frame = self.frames[-1]
        available = len(self.values) - frame.height
        take = min(len(expected), available)
        top = self.values[len(self.values) - take:] if take else []
        missing = len(expected) - take
        if missing and not frame.unreachable:
            raise self.error(name, args, expected)
        for want, got in zip(expected[missing:], top):
            if want is not None and got is not None and want != got:
                raise self.error(name, args, expected)
        if take:
            del self.values[-take:]
        return [None] * missing + top

    def pop_exactly(self, name: str, args: tuple, expected: tuple[str, ...]) -> None:
        """Pop ``expected`` and require the current block's stack to be empty after it."""
        if len(self.values) - self.frames[-1].height > len(expected):
            raise self.error(name, args, expected)
        self.pop(name, args, expected)

    def finish(self) -> None:
        """The function's own ``end``: every block closed, exactly the results left.

        Raises:
            WasmTypeError: a block is still open, or the stack does not hold the results.
        """
        if len(self.frames) > 1:
            open_ = [frame.kind for frame in self.frames[1:]]
            raise WasmTypeError(f"end of function: {len(open_)} block(s) still open: {open_}")
        self.pop_exactly("end", (), self.frames[0].results)
        self.frames.pop()

    def unreachable(self) -> None:
        frame = self.frames[-1]
        del self.values[frame.height:]
        frame.unreachable = True

    def label(self, name: str, args: tuple) -> tuple[str, ...]:
        depth = args[0] if args else 0
        if not isinstance(depth, int) or not 0 <= depth < len(self.frames):
            raise WasmTypeError(f"{name} {depth}: no enclosing block at depth {depth} "
                                f"(there are {len(self.frames)})")
        return self.frames[-1 - depth].label

    def local(self, name: str, args: tuple) -> str:
        index = args[0] if args else None
        if type(index) is not int or not 0 <= index < len(self.locals):
            raise WasmTypeError(f"{name} {index}: no such local; the function has "
                                f"{len(self.locals)} parameters and locals")
        return self.locals[index]

    def global_(self, name: str, args: tuple) -> GlobalType:
        index = args[0] if args else None
        if not isinstance(index, int) or not 0 <= index < len(self.globals):
            raise WasmTypeError(f"{name} {index}: no such global; the module has "
                                f"{len(self.globals)}")
        return self.globals[index]

    def callee(self, name: str, args: tuple) -> FuncType:
        index = args[0] if args else None
        if self.funcs is None:
            raise WasmTypeError(f"{name} {index}: this body was built without the module's "
                                "functions (build it with ModuleBuilder.code)")
        if not isinstance(index, int) or not 0 <= index < len(self.funcs):
            raise WasmTypeError(f"{name} {index}: no such function; the module has "
                                f"{len(self.funcs)}")
        return self.funcs[index][1]


def describe(name: str, args: tuple, funcs: Callees | None = None) -> str:
    """An instruction as an error message names it: ``call 3 (f32_gather)``, ``local.get 5``."""
    if name == "call" and args and funcs is not None and 0 <= args[0] < len(funcs):
        callee = funcs[args[0]][0]
        return f"call {args[0]}" + (f" ({callee})" if callee else "")
    if name == "v128.const" or not args:
        return name
    return f"{name} {' '.join(str(a) for a in args)}"


def _block_results(args: tuple) -> tuple[str, ...]:
    return () if not args or args[0] is None else (args[0],)


def _block(s: StackCheck, name: str, args: tuple) -> None:
    if name == "if":
        s.pop(name, args, ("i32",))
    s.frames.append(_Frame(name, _block_results(args), len(s.values)))


def _else(s: StackCheck, name: str, args: tuple) -> None:
    frame = s.frames[-1]
    if frame.kind != "if":
        raise WasmTypeError(f"else: not inside an if (inside a {frame.kind})")
    s.pop_exactly(name, args, frame.results)
    s.frames[-1] = _Frame("else", frame.results, frame.height)


def _end(s: StackCheck, name: str, args: tuple) -> None:
    frame = s.frames[-1]
    if frame.kind == "function":
        raise WasmTypeError("end: no open block to end (the function's own end is added "
                            "when the body is closed)")
    s.pop_exactly(name, args, frame.results)
    if frame.kind == "if" and frame.results:
        raise WasmTypeError(f"end: an if without else cannot produce [{_types(frame.results)}]")
    s.frames.pop()
    s.values.extend(frame.results)


def _unreachable(s: StackCheck, name: str, args: tuple) -> None:
    s.unreachable()


def _br(s: StackCheck, name: str, args: tuple) -> None:
    s.pop(name, args, s.label(name, args))
    s.unreachable()


def _br_if(s: StackCheck, name: str, args: tuple) -> None:
    label = s.label(name, args)
    s.pop(name, args, (*label, "i32"))
    s.values.extend(label)


def _return(s: StackCheck, name: str, args: tuple) -> None:
    s.pop(name, args, s.frames[0].results)
    s.unreachable()


def _call(s: StackCheck, name: str, args: tuple) -> None:
    ty = s.callee(name, args)
    s.pop(name, args, ty.params)
    s.values.extend(ty.results)


def _drop(s: StackCheck, name: str, args: tuple) -> None:
    s.pop(name, args, (None,))


def _select(s: StackCheck, name: str, args: tuple) -> None:
    first, second, condition = s.pop(name, args, (None, None, "i32"))
    if first is not None and second is not None and first != second:
        s.values.extend((first, second, condition))
        raise s.error(name, args, ("t", "t", "i32"))
    s.values.append(first if first is not None else second)


def _local_get(s: StackCheck, name: str, args: tuple) -> None:
    index = args[0] if args else None
    s.values.append(s.locals[index] if type(index) is int and 0 <= index < len(s.locals)
                    else s.local(name, args))


def _local_set(s: StackCheck, name: str, args: tuple) -> None:
    ty, values = s.local(name, args), s.values
    if len(values) > s.frames[-1].height and values[-1] == ty:
        values.pop()
    else:
        s.pop(name, args, (ty,))


def _local_tee(s: StackCheck, name: str, args: tuple) -> None:
    ty, values = s.local(name, args), s.values
    if not (len(values) > s.frames[-1].height and values[-1] == ty):
        s.pop(name, args, (ty,))
        values.append(ty)


def _global_get(s: StackCheck, name: str, args: tuple) -> None:
    s.values.append(s.global_(name, args).content)


def _global_set(s: StackCheck, name: str, args: tuple) -> None:
    ty = s.global_(name, args)
    if not ty.mutable:
        raise WasmTypeError(f"{name} {args[0]}: the global is immutable")
    s.pop(name, args, (ty.content,))


_RULES: dict[str, Callable[[StackCheck, str, tuple], None]] = {
    "unreachable": _unreachable, "block": _block, "loop": _block, "if": _block, "else": _else,
    "end": _end, "br": _br, "br_if": _br_if, "return": _return, "call": _call, "drop": _drop,
    "select": _select, "local.get": _local_get, "local.set": _local_set,
    "local.tee": _local_tee, "global.get": _global_get, "global.set": _global_set,
}
"""The instructions whose effect on the stack is a rule rather than a table row."""
