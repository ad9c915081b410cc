"""The recurrent family: one time step of an LSTM, GRU or RNN layer's gate math over the
batch (``abi.RECURRENT_CELLS``), one register of hidden units at a time, then a scalar tail.

For each batch row the kernel finds the row's length and time index, points one local at
each gate's slice of ``x`` (this step's input projection) and of ``hw`` (this step's
recurrent product), and maps them elementwise to the new state(s), written in place and to
``y``. A row past its end only gets zeros in ``y``.

``f32_lstm_step[_dynamic_quantize]`` is the same LSTM math for one step of an unrolled
recurrence whose product already holds the projected input: every row, into new c and h
buffers, then (``_dynamic_quantize``) h quantized as ``f32_dynamic_quantize_linear``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from .. import abi
from ..abi import KernelSpec
from ..wasm import Code, FuncType
from . import activations, expr, vmath
from .expr import Expr
from .isa import ISAS, Isa, NamedFrame
from .loops import strided_loop
from .quantize import dynamic_quantize
from .rows import with_tail

Load = Callable[[str], Expr]
Keep = Callable[[Expr], Expr]
Store = Callable[[str, Expr], None]


def _lstm_update(gates: list[Expr], c: Expr, keep: Keep) -> tuple[Expr, Expr]:
    """The new (c, h) of an LSTM from its pre-activations i, f, g, o and the old c."""
    i, f, g, o = gates
    c = keep(vmath.sigmoid(f) * c + vmath.sigmoid(i) * vmath.tanh(g))
    return c, keep(vmath.sigmoid(o) * vmath.tanh(c))


def _lstm(load: Load, keep: Keep, store: Store) -> None:
    c, h = _lstm_update([load(f"x{k}") + load(f"r{k}") for k in range(4)], load("c_row"), keep)
    store("c_row", c)
    store("h_row", h)
    store("y_row", h)


def _lstm_step(load: Load, keep: Keep, store: Store) -> None:
    c, h = _lstm_update([load(f"x{k}") for k in range(4)], load("c_row"), keep)
    store("c_out_row", c)
    store("h_row", h)


def _gru(load: Load, keep: Keep, store: Store) -> None:
    r = vmath.sigmoid(load("x0") + load("r0"))
    z = vmath.sigmoid(load("x1") + load("r1"))
    n = keep(vmath.tanh(load("r2").madd(r, load("x2"))))
    h = keep((load("h_row") - n).madd(z, n))  # (1 - z) n + z h
    store("h_row", h)
    store("y_row", h)


def _gru_reset(load: Load, keep: Keep, store: Store) -> None:
    store("rh_row", vmath.sigmoid(load("x0") + load("r0")) * load("h_row"))


def _gru_update(load: Load, keep: Keep, store: Store) -> None:
    z = vmath.sigmoid(load("x1") + load("r1"))
    n = keep(vmath.tanh(load("x2") + load("hn_row")))
    h = keep((load("h_row") - n).madd(z, n))  # (1 - z) n + z h
    store("h_row", h)
    store("y_row", h)


def _rnn(activation: str) -> Callable[[Load, Keep, Store], None]:
    def cell(load: Load, keep: Keep, store: Store) -> None:
        h = keep(activations.unary(activation)(load("x0") + load("r0")))
        store("h_row", h)
        store("y_row", h)

    return cell


CELLS: dict[str, Callable[[Load, Keep, Store], None]] = {
    "lstm_cell": _lstm, "gru_cell": _gru, "gru_reset": _gru_reset, "gru_update": _gru_update}
"""The gate math of each cell op but ``rnn_cell``, whose activation is its epilogue."""


def _pointer(f: NamedFrame, name: str, base: str, *factors: str | int) -> None:
    """``name = base + 4 * product(factors)`` (a float's address)."""
    f.get(base)
    for k, term in enumerate(factors + (4,)):
        if isinstance(term, int):
            f.c.emit("i32.const", term)
        else:
            f.get(term)
        if k:
            f.c.emit("i32.mul")
    f.c.emit("i32.add")
    f.set(name)


def _elements(f: NamedFrame, body: Callable[[Isa, dict[int, int]], None]) -> None:
    """``body(isa, inputs)`` for each register of hidden units ``j``, then the tail."""
    f.c.emit("i32.const", 0)
    f.set("j")
    for each in with_tail(f.isa):
        strided_loop(f.c, f.v["j"], each.lanes, f.arg["hidden"], partial(body, each, {}))


def _at_j(f: NamedFrame, pointer: str) -> None:
    f.get(pointer, "j")
    f.c.emit("i32.const", 2).emit("i32.shl").emit("i32.add")


def _step_row(f: NamedFrame, spec: KernelSpec) -> None:
    """The live row's update: gate and row pointers, then the cell's elementwise map."""
    operands, x_gates, hw_gates, _ = abi.RECURRENT_CELLS[spec.op]
    c = f.c
    f.get("t", "batch")
    c.emit("i32.mul")
    f.get("b")
    c.emit("i32.add")
    f.set("row")
    for prefix, base, row, gates in (("x", "x", "row", x_gates), ("r", "hw", "b", hw_gates)):
        for k in range(gates):
            _pointer(f, f"{prefix}{k}", base, row, "hidden", gates)
            if k:
                f.add(f"{prefix}{k}", k * 4, "hidden")
    for name in operands:
        _pointer(f, f"{name}_row", name, "row" if name == "y" else "b", "hidden")

    _map(f, CELLS[spec.op] if spec.op in CELLS else _rnn(spec.activations[0]))


def _map(f: NamedFrame, cell: Callable[[Load, Keep, Store], None]) -> None:
    """``cell`` over the hidden units of one row, its pointers named by locals of ``f``."""
    c = f.c

    def body(isa: Isa, inputs: dict[int, int]) -> None:
        def keep(value: Expr) -> Expr:
            expr.emit(c, isa, value, inputs)
            local = c.local(isa.valtype)
            c.emit("local.set", local)
            inputs[local] = local
            return Expr.input(local)

        def load(pointer: str) -> Expr:
            _at_j(f, pointer)
            isa.load(c)
            local = c.local(isa.valtype)
            c.emit("local.set", local)
            inputs[local] = local
            return Expr.input(local)

        def store(pointer: str, value: Expr) -> None:
            _at_j(f, pointer)
            expr.emit(c, isa, value, inputs)
            isa.store(c)

        cell(load, keep, store)

    _elements(f, body)


def _zero_row(f: NamedFrame) -> None:
    """y[step, b] = 0 for a row past its end."""
    f.get("step", "batch")
    f.c.emit("i32.mul")
    f.get("b")
    f.c.emit("i32.add")
    f.set("row")
    _pointer(f, "y_row", "y", "row", "hidden")

    def body(isa: Isa, inputs: dict[int, int]) -> None:
        _at_j(f, "y_row")
        isa.const(f.c, 0.0)
        isa.store(f.c)

    _elements(f, body)


def _emit_lstm_step(spec: KernelSpec, isa_name: str) -> Code:
    """``f32_lstm_step[_dynamic_quantize]``: each row's cell, then h's quantization."""
    c = Code(spec.param_types)
    arg = {p: i for i, p in enumerate(spec.params)}
    names = ["b", "j", "row", "c_row", "h_row", "c_out_row", "x0", "x1", "x2", "x3"]
    f = NamedFrame(c, ISAS[isa_name], arg, (), {n: c.local("i32") for n in names})

    def row() -> None:
        for k in range(4):
            _pointer(f, f"x{k}", "gates", "b", "hidden", 4)
            if k:
                f.add(f"x{k}", k * 4, "hidden")
        for name in ("c", "h", "c_out"):
            _pointer(f, f"{name}_row", name, "b", "hidden")
        _map(f, _lstm_step)

    f.count("b", "rows", 1, row)
    if "q" in arg:
        f.get("rows", "hidden")
        c.emit("i32.mul")
        f.set("row")  # the element count
        dynamic_quantize(c, {"x": arg["h"], "y": arg["q"], "scale": arg["scale"],
                             "zero_point": arg["zero_point"], "n": f.v["row"]},
                         isa_name != "scalar")
    return c


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate recurrent cell kernel ``spec`` for ``isa_name``."""
    if spec.op == "lstm_step":
        return FuncType(spec.param_types, spec.results), _emit_lstm_step(spec, isa_name)
    c = Code(spec.param_types)
    arg = {p: i for i, p in enumerate(spec.params)}
    operands, x_gates, hw_gates, _ = abi.RECURRENT_CELLS[spec.op]
    names = ["b", "len", "t", "j", "row", *(f"{name}_row" for name in operands)]
    names += [f"x{k}" for k in range(x_gates)] + [f"r{k}" for k in range(hw_gates)]
    f = NamedFrame(c, ISAS[isa_name], arg, (), {n: c.local("i32") for n in names})

    def row() -> None:
        f.get("lengths")
        c.emit("if")
        f.get("lengths", "b")
        c.emit("i32.const", 2).emit("i32.shl").emit("i32.add").emit("i32.load", 2)
        f.set("len")
        c.emit("else")
        f.get("steps")
        f.set("len")
        c.emit("end")
        f.get("step", "len")
        c.emit("i32.lt_s").emit("if")
        f.get("step")
        f.set("t")
        f.get("reverse")
        c.emit("if")
        f.get("len")
        c.emit("i32.const", 1).emit("i32.sub")
        f.get("step")
        c.emit("i32.sub")
        f.set("t")
        c.emit("end")
        _step_row(f, spec)
        if "y" in arg:
            c.emit("else")
            _zero_row(f)
        c.emit("end")

    f.count("b", "batch", 1, row)
    return FuncType(spec.param_types, spec.results), c
