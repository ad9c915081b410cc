"""What the qlinear kernels share: the frame of locals computed in the prologue, where a
column's accumulator starts (bias minus A's zero point times the column's weight sum), the
scalar finish of one element, and the scalar product (the ``scalar`` ISA's whole kernel, the
reference the SIMD tiles are tested against)."""


from __future__ import annotations

from dataclasses import dataclass

from ..abi import KernelSpec
from ..pack_quantized import QPANEL, SEVEN_SHIFT
from ..wasm import Code
from .loops import strided_loop

RANGES = {"uint8": (0, 255), "int8": (-128, 127)}


@dataclass
class QFrame:
    """Locals every qlinear kernel shares: its arguments by name, the A zero point, the f32
    scale of A, (requantized) the output's scale, zero point and clamp bounds, the packed
    weight's panel bytes, and where its column sums, its column masks and (``mixed``) its
    panels' 7-bit flags start."""

    c: Code
    spec: KernelSpec
    arg: dict[str, int]
    a_zero: int
    a_scale: int
    c_scale: int
    c_zero: int
    low: int
    high: int
    panel_bytes: int
    sums: int
    masks: int
    flags: int

    @property
    def requantize(self) -> bool:
        return "requantize" in self.spec.epilogue

    @property
    def activation(self) -> str:
        return self.spec.activations[0] if self.spec.activations else ""

    @property
    def wide(self) -> bool:
        """Whether W's panels have int16 weights' slots (the ``qlinear_wide`` and
        ``qlinear_mixed`` rows)."""
        return self.spec.op in ("qlinear_wide", "qlinear_mixed")

    @property
    def mixed(self) -> bool:
        """Whether W's 7-bit panels hold bytes, the rest int16 (the ``qlinear_mixed`` rows,
        ``pack_quantized.pack_qlinear_weight(w, mixed=True)``)."""
        return self.spec.op == "qlinear_mixed"


def _load_byte(c: Code, dtype: str) -> None:
    c.emit("i32.load8_s" if dtype == "int8" else "i32.load8_u", 0, 0)


def frame(c: Code, spec: KernelSpec) -> QFrame:
    """Declare the shared locals and compute them in the prologue."""
    arg = {p: i for i, p in enumerate(spec.params)}
    f = QFrame(c, spec, arg, *(c.local(t) for t in ("i32", "f32", "f32", "f32", "f32", "f32",
                                                     "i32", "i32", "i32", "i32")))
    c.emit("local.get", arg["a_zero_point"])
    _load_byte(c, spec.dtypes[0])
    c.emit("local.set", f.a_zero)
    c.emit("local.get", arg["a_scale"]).emit("f32.load", 2, 0).emit("local.set", f.a_scale)
    # panel_bytes = round_up(k, 4) * QPANEL; sums = w + panels * panel_bytes (wide: twice)
    c.emit("local.get", arg["k"]).emit("i32.const", 3).emit("i32.add")
    c.emit("i32.const", -4).emit("i32.and").emit("i32.const", QPANEL).emit("i32.mul")
    c.emit("local.set", f.panel_bytes)
    c.emit("local.get", arg["w"]).emit("local.get", arg["n"]).emit("i32.const", QPANEL - 1)
    c.emit("i32.add").emit("i32.const", QPANEL.bit_length() - 1).emit("i32.shr_u")
    c.emit("local.get", f.panel_bytes).emit("i32.mul").emit("i32.const", int(f.wide))
    c.emit("i32.shl").emit("i32.add").emit("local.set", f.sums)
    # masks = sums + 4 * round_up(n, QPANEL) + 4: the 7-bit flag is the word before them
    c.emit("local.get", f.sums).emit("local.get", arg["n"]).emit("i32.const", QPANEL - 1)
    c.emit("i32.add").emit("i32.const", -QPANEL).emit("i32.and").emit("i32.const", 2)
    c.emit("i32.shl").emit("i32.add").emit("i32.const", 4).emit("i32.add")
    c.emit("local.set", f.masks)
    if f.mixed:  # flags = masks + 4 * round_up(n, QPANEL)
        c.emit("local.get", f.masks).emit("local.get", arg["n"]).emit("i32.const", QPANEL - 1)
        c.emit("i32.add").emit("i32.const", -QPANEL).emit("i32.and").emit("i32.const", 2)
        c.emit("i32.shl").emit("i32.add").emit("local.set", f.flags)
    if f.requantize:
        low, high = RANGES[spec.dtypes[1]]
        c.emit("local.get", arg["c_scale"]).emit("f32.load", 2, 0).emit("local.set", f.c_scale)
        c.emit("local.get", arg["c_zero_point"])
        _load_byte(c, spec.dtypes[1])
        c.emit("f32.convert_i32_s").emit("local.set", f.c_zero)
        c.emit("f32.const", float(low))
        if f.activation:
            c.emit("local.get", f.c_zero).emit("f32.max")
        c.emit("local.set", f.low)
        c.emit("f32.const", float(high))
        if f.activation == "relu6":
            c.emit("f32.const", 6.0).emit("local.get", f.c_scale).emit("f32.div")
            c.emit("f32.nearest").emit("local.get", f.c_zero).emit("f32.add").emit("f32.min")
        c.emit("local.set", f.high)
    return f


def finish_scalar(f: QFrame, acc: int, row: int, column: int) -> None:
    """Store C[row, column] from the i32 ``acc`` (bias and zero point already applied)."""
    c, arg = f.c, f.arg
    c.emit("local.get", arg["c"]).emit("local.get", row).emit("local.get", arg["n"])
    c.emit("i32.mul").emit("local.get", column).emit("i32.add")
    if not f.requantize:
        c.emit("i32.const", 2).emit("i32.shl")
    c.emit("i32.add")
    c.emit("local.get", acc).emit("f32.convert_i32_s")
    c.emit("local.get", f.a_scale).emit("local.get", arg["w_scale"]).emit("local.get", column)
    c.emit("i32.const", 2).emit("i32.shl").emit("i32.add").emit("f32.load", 2, 0)
    c.emit("f32.mul")
    if f.requantize:
        c.emit("local.get", f.c_scale).emit("f32.div").emit("f32.mul").emit("f32.nearest")
        c.emit("local.get", f.c_zero).emit("f32.add")
        c.emit("local.get", f.low).emit("f32.max").emit("local.get", f.high).emit("f32.min")
        c.emit("i32.trunc_sat_f32_s").emit("i32.store8", 0, 0)
        return
    c.emit("f32.mul")
    c.emit("local.get", arg["fbias"]).emit("local.get", column).emit("i32.const", 2)
    c.emit("i32.shl").emit("i32.add").emit("f32.load", 2, 0).emit("f32.add")
    if f.activation:
        c.emit("f32.const", 0.0).emit("f32.max")
    if f.activation == "relu6":
        c.emit("f32.const", 6.0).emit("f32.min")
    c.emit("f32.store", 2, 0)


def column_start(f: QFrame, column: int) -> None:
    """Push ``bias[j] - a_zero_point * sums[j]``: where column ``j``'s accumulator starts."""
    c, arg = f.c, f.arg
    c.emit("local.get", arg["bias"]).emit("local.get", column).emit("i32.const", 2)
    c.emit("i32.shl").emit("i32.add").emit("i32.load", 2, 0)
    c.emit("local.get", f.a_zero).emit("local.get", f.sums).emit("local.get", column)
    c.emit("i32.const", 2).emit("i32.shl").emit("i32.add").emit("i32.load", 2, 0)
    c.emit("i32.mul").emit("i32.sub")


def _load_weight(f: QFrame, column: int, step: int) -> None:
    """Push W[column, step] from the packed panels (wide: an int16 in place of each byte;
    mixed: a 7-bit panel's ``s * w + SEVEN_SHIFT`` byte at the int8 panel's place in its
    slot, ``s`` the column's sign, ``(x ^ m) - m`` with its mask ``m``)."""
    c = f.c

    def place(wide: bool) -> None:
        # panel * panel_bytes (wide slots: twice) + the weight's place in the panel
        c.emit("local.get", column).emit("i32.const", QPANEL.bit_length() - 1)
        c.emit("i32.shr_u").emit("local.get", f.panel_bytes).emit("i32.mul")
        if f.wide:
            c.emit("i32.const", 1).emit("i32.shl")
        c.emit("local.get", step).emit("i32.const", 2).emit("i32.shr_u")
        c.emit("i32.const", 4 * QPANEL << int(wide)).emit("i32.mul").emit("i32.add")
        c.emit("local.get", column).emit("i32.const", QPANEL - 1).emit("i32.and")
        c.emit("i32.const", 2).emit("i32.shl")
        c.emit("local.get", step).emit("i32.const", 3).emit("i32.and").emit("i32.add")
        c.emit("i32.const", int(wide)).emit("i32.shl").emit("i32.add")
        c.emit("local.get", f.arg["w"]).emit("i32.add")

    if not f.mixed:
        place(f.wide)
        c.emit("i32.load16_s" if f.wide else "i32.load8_s", 0, 0)
        return
    mask = c.local("i32")
    # the panel's flag at flags + (column / QPANEL) * 4
    c.emit("local.get", f.flags).emit("local.get", column)
    c.emit("i32.const", QPANEL.bit_length() - 3).emit("i32.shr_u").emit("i32.const", -4)
    c.emit("i32.and").emit("i32.add").emit("i32.load", 2, 0).emit("if", "i32")
    c.emit("local.get", f.masks).emit("local.get", column).emit("i32.const", 2).emit("i32.shl")
    c.emit("i32.add").emit("i32.load", 2, 0).emit("local.set", mask)
    place(False)
    c.emit("i32.load8_u", 0, 0).emit("i32.const", SEVEN_SHIFT).emit("i32.sub")
    c.emit("local.get", mask).emit("i32.xor").emit("local.get", mask).emit("i32.sub")
    c.emit("else")
    place(True)
    c.emit("i32.load16_s", 0, 0)
    c.emit("end")


def scalar_element(f: QFrame, row: int, column: int) -> None:
    """C[row, column], one product at a time: the reference the SIMD tiles are tested
    against."""
    c, arg = f.c, f.arg
    acc, step = c.local("i32"), c.local("i32")
    column_start(f, column)
    c.emit("local.set", acc)
    c.emit("i32.const", 0).emit("local.set", step)

    def product() -> None:
        c.emit("local.get", arg["a"]).emit("local.get", row).emit("local.get", arg["k"])
        c.emit("i32.mul").emit("i32.add").emit("local.get", step).emit("i32.add")
        _load_byte(c, f.spec.dtypes[0])
        _load_weight(f, column, step)
        c.emit("i32.mul")
        c.emit("local.get", acc).emit("i32.add").emit("local.set", acc)

    strided_loop(c, step, 1, arg["k"], product)
    finish_scalar(f, acc, row, column)

