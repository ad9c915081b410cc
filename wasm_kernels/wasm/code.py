"""A function body under construction: an instruction list checked against the value stack
as it is built, and its binary encoding."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from .encode import instruction, uleb, vector
from .opcodes import F32, F64, MEMARG, OPCODES, ZERO1, ZERO2
from .types import VALUE_TYPES, GlobalType
from .validate import Callees, StackCheck

_ENCODED: dict[tuple[str, tuple], bytes] = {}
"""Encodings of the instructions emitted so far: kernels repeat a few thousand distinct ones
(``local.get 5``, ``i32.const 4``) hundreds of thousands of times."""
_UNCACHED = frozenset(name for name, row in OPCODES.items() if row.immediate in (F32, F64))
"""Float immediates are never looked up: ``0.0 == -0.0`` would find the other's bytes."""


def _renumbered(op: str, args: tuple, mapping: dict[int, int]) -> tuple:
    """``op``'s immediates ``args`` with its memory indices mapped by ``mapping``."""
    kind = OPCODES[op].immediate
    if kind == MEMARG:
        align, offset, memory = (tuple(args) + (0, 0, 0))[:3]
        return align, offset, mapping.get(memory, memory)
    if kind in (ZERO1, ZERO2):
        return tuple(mapping.get(m, m) for m in (args or (0,) * (1 if kind == ZERO1 else 2)))
    return args


def _encode_new(op: str, args: tuple) -> bytes:
    encoded = _ENCODED[op, args] = instruction(op, *args)
    return encoded


class Code:
    """A function body under construction: typed locals and an instruction list, checked
    against the value stack as each instruction is added (``validate.StackCheck``).

    Locals and parameters may have names (``local("i32", "row")``, ``names=``), which
    ``get``/``set``/``tee`` accept instead of indices. ``block``, ``loop`` and ``if_`` are
    context managers that close what they open.

    Args:
        params: the parameter types.
        results: the result types the body must leave on the stack.
        names: names of the first parameters, in order.
        funcs: the function index space ``call`` may use (``ModuleBuilder.code`` passes it).
        globals_: the globals ``global.get``/``global.set`` may use.
    """

    def __init__(self, params: tuple[str, ...], results: tuple[str, ...] = (), *,
                 names: Sequence[str] = (), funcs: Callees | None = None,
                 globals_: Sequence[GlobalType] = ()):
        self.params = tuple(params)
        self.results = tuple(results)
        self.instructions: list[tuple[str, tuple]] = []
        self._locals: list[str] = []
        self._types = list(self.params)
        self.names: dict[str, int] = {name: i for i, name in enumerate(names)}
        self._body = bytearray()
        self._check = StackCheck(self._types, self.results, funcs, globals_)

    @property
    def stack(self) -> tuple[str | None, ...]:
        """The value types on the stack of the innermost open block (``None``: unknown)."""
        frames = self._check.frames
        return tuple(self._check.values[frames[-1].height:]) if frames else ()

    @property
    def locals(self) -> tuple[str, ...]:
        """The declared locals' types (after the parameters)."""
        return tuple(self._locals)

    def local(self, valtype: str, name: str | None = None) -> int:
        """Declare a new local of ``valtype`` (called ``name``, if given) and return its index.

        Raises:
            ValueError: an unknown value type, or a name already taken.
        """
        if valtype not in VALUE_TYPES:
            raise ValueError(f"unknown value type {valtype!r}")
        self._locals.append(valtype)
        self._types.append(valtype)
        if name is not None:
            self.name(len(self._types) - 1, name)
        return len(self._types) - 1

    def name(self, index: int, name: str) -> None:
        """Name parameter or local ``index`` (for ``get``/``set``/``tee`` and the name section).

        Raises:
            ValueError: no such local, or the name is taken.
        """
        if not 0 <= index < len(self._types):
            raise ValueError(f"no local {index}; the function has {len(self._types)}")
        if name in self.names:
            raise ValueError(f"local {name!r} is already declared (index {self.names[name]})")
        self.names[name] = index

    def emit(self, op: str, *args: object) -> Code:
        """Append instruction ``op`` with immediates ``args``, e.g. ``emit("v128.load", 2, 16)``.

        Raises:
            ValueError: an unknown instruction or a malformed immediate.
            WasmTypeError: the instruction does not fit the stack (naming what it expected
                and what was found), or names a missing local, global, function or label.
        """
        try:
            encoded = (instruction(op, *args) if op in _UNCACHED
                       else _ENCODED.get((op, args)) or _encode_new(op, args))
        except TypeError:  # an unhashable immediate, e.g. a v128 given as a bytearray
            encoded = instruction(op, *args)
        self._check.step(op, args)
        self.instructions.append((op, args))
        self._body += encoded
        return self

    def _index(self, local: str | int) -> int:
        if isinstance(local, int):
            return local
        try:
            return self.names[local]
        except KeyError:
            raise ValueError(f"no local called {local!r}; named: {sorted(self.names)}") from None

    def get(self, *locals_: str | int) -> Code:
        """Push each local or parameter, by name or index."""
        for local in locals_:
            self.emit("local.get", self._index(local))
        return self

    def set(self, local: str | int) -> Code:
        """Pop into a local, by name or index."""
        return self.emit("local.set", self._index(local))

    def tee(self, local: str | int) -> Code:
        """Store the top of the stack in a local, by name or index, keeping it."""
        return self.emit("local.tee", self._index(local))

    @contextmanager
    def block(self, result: str | None = None) -> Iterator[Code]:
        """``block ... end``."""
        self.emit("block", *(() if result is None else (result,)))
        yield self
        self.emit("end")

    @contextmanager
    def loop(self) -> Iterator[Code]:
        """``block { loop { body; br 0 } }``: ``br 1`` breaks out, ``br 0`` continues."""
        self.emit("block").emit("loop")
        yield self
        self.emit("br", 0).emit("end").emit("end")

    @contextmanager
    def if_(self, result: str | None = None) -> Iterator[Code]:
        """``if ... end`` on the i32 on top of the stack."""
        self.emit("if", *(() if result is None else (result,)))
        yield self
        self.emit("end")

    def close(self) -> None:
        """Check that the body ends with exactly its results on the stack and every block
        closed; nothing can be added after. Encoding closes the body implicitly.

        Raises:
            WasmTypeError: a block is still open, or the stack does not hold the results.
        """
        if not self._check.closed:
            self._check.finish()

    def renumber_memories(self, mapping: dict[int, int]) -> None:
        """Re-encode the body with each memory index ``i`` its instructions name (in a memarg,
        or ``memory.size`` / ``grow`` / ``fill`` / ``copy``) replaced by ``mapping[i]`` (an
        index missing from ``mapping`` stays): how a body written for memory 0 runs in a
        module where that memory has another index."""
        self._body = bytearray(b"".join(
            instruction(op, *_renumbered(op, args, mapping)) for op, args in self.instructions))
        self.instructions = [(op, _renumbered(op, args, mapping))
                             for op, args in self.instructions]

    def expression(self) -> bytes:
        """The body as a constant expression (no locals, no size prefix).

        Raises:
            WasmTypeError: the stack does not hold exactly the results.
        """
        self.close()
        return bytes(self._body) + instruction("end")

    def encode(self) -> bytes:
        """The body as the code section holds it: size, locals, instructions, ``end``.

        Raises:
            WasmTypeError: a block is still open, or the stack does not hold the results.
        """
        self.close()
        groups: list[bytes] = []
        for valtype in self._locals:
            groups.append(uleb(1) + bytes([VALUE_TYPES[valtype]]))
        body = vector(groups) + bytes(self._body) + instruction("end")
        return uleb(len(body)) + body
