"""A pointwise conv with one output channel per group (``row``), plane by plane: CRAFT's
128 -> 1 heads.

The dense tile gives such a conv single rows: one output channel by 8 pixels, 2 chains of
multiply-adds, each step one load from each of k input planes in turn: k streams at once,
more than the hardware prefetchers follow, and on a 64x64 plane (16 KiB apart) every line in
one set of L1. Here the channel accumulates ``CHUNK`` pixels at a time in the scratch ``ws``
(in L1), adding ``PLANES`` input planes per pass, each read forward: per register of pixels
``PLANES + 1`` loads, a store and ``PLANES`` multiply-adds, the registers' chains
independent. Every output is the dense tile's chain of multiply-adds over k in the same
order, then the same epilogue, so a pixel's value does not depend on which path computed it
(a thread's part of fewer than a panel goes through the packed columns). Only for one
channel: with 2-3 the tile's single rows share their loads of the input, and ran 1.3-1.6x
this hot (bench/README.md).

The pixels past the last whole register (a plane of ``h * w`` pixels not a multiple of the
lanes) are one more register ending at the last pixel, accumulated over k in a register,
storing again the values of the pixels it overlaps. The functions read the conv's locals
by name from the ``Code`` (``conv_gemm``, ``conv_pointwise``).
"""

from __future__ import annotations

from ..wasm import Code
from . import activations
from .isa import Isa

CHUNK = 1024
"""Pixels accumulated in ``ws`` at a time (4 KiB: in L1 with the planes' lines)."""

PLANES = 8
"""Input planes added per pass over a chunk (8 ran 1.04-1.2x 4 on 128 -> 1)."""

_LOCALS = ("one_p", "one_n", "one_ci", "one_src", "one_q",
           "one_main", "one_y", "one_r")


def row(c: Code, isa: Isa, epilogue: tuple[str, ...]) -> None:
    """The group's one output channel at pixels ``first .. end`` (``end - first >=
    isa.lanes``); ``first`` moves to ``end``."""
    for name in _LOCALS:
        if name not in c.names:
            c.local("i32", name)
    weights = [c.local(isa.valtype) for _ in range(PLANES)]
    sources = [c.local("i32") for _ in range(PLANES)]
    acc = c.local(isa.valtype)
    lanes_bytes = 4 * isa.lanes
    # one_main = first + (end - first) rounded down to whole registers
    c.get("end", "first").emit("i32.sub").emit("i32.const", -isa.lanes).emit("i32.and")
    c.get("first").emit("i32.add").set("one_main")
    c.get("first").set("one_p")
    with c.loop():
        c.get("one_p", "one_main").emit("i32.ge_u").emit("br_if", 1)
        # one_n = min(CHUNK, one_main - one_p) pixels
        c.get("one_main", "one_p").emit("i32.sub").tee("one_n")
        c.emit("i32.const", CHUNK).get("one_n").emit("i32.const", CHUNK)
        c.emit("i32.lt_u").emit("select").set("one_n")
        _chunk(c, isa, weights, sources, acc, lanes_bytes)
        _store(c, isa, epilogue, "one_n", from_ws=True, acc=acc)
        c.get("one_p", "one_n").emit("i32.add").set("one_p")
    c.get("one_main", "end").emit("i32.lt_u")
    with c.if_():
        _last(c, isa, acc, epilogue)
    c.get("end").set("first")


def _chunk(c: Code, isa: Isa, weights: list[int], sources: list[int], acc: int,
           lanes_bytes: int) -> None:
    """``ws[0 .. one_n]`` = the sum over k of the weight times pixels ``one_p ..`` of each
    input plane, in k's order: zeros, then ``PLANES`` planes per pass, then one."""
    c.emit("i32.const", 0).set("one_q")
    with c.loop():
        c.get("one_q", "one_n").emit("i32.const", 2).emit("i32.shl").emit("i32.ge_u")
        c.emit("br_if", 1)
        c.get("ws", "one_q").emit("i32.add")
        isa.const(c, 0.0)
        isa.store(c)
        c.get("one_q").emit("i32.const", lanes_bytes).emit("i32.add").set("one_q")
    c.emit("i32.const", 0).set("one_ci")
    for planes in (PLANES, 1):
        with c.loop():
            c.get("one_ci").emit("i32.const", planes).emit("i32.add").get("steps")
            c.emit("i32.gt_u").emit("br_if", 1)
            for t in range(planes):
                c.get("wg", "one_ci").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
                isa.load_splat(c, 4 * t)
                c.set(weights[t])
            # sources[t] = xg + (one_ci + t) * bplane + one_p * 4: the passes' planes
            c.get("xg", "one_ci", "bplane").emit("i32.mul").emit("i32.add")
            c.get("one_p").emit("i32.const", 2).emit("i32.shl").emit("i32.add").set(sources[0])
            for t in range(1, planes):
                c.get(sources[t - 1], "bplane").emit("i32.add").set(sources[t])
            c.emit("i32.const", 0).set("one_q")
            with c.loop():
                c.get("one_q", "one_n").emit("i32.const", 2).emit("i32.shl").emit("i32.ge_u")
                c.emit("br_if", 1)
                c.get("ws", "one_q").emit("i32.add")
                isa.load(c)
                c.set(acc)
                for t in range(planes):
                    c.get(sources[t], "one_q").emit("i32.add")
                    isa.load(c)
                    c.get(weights[t])
                    isa.madd_into(c, acc)
                c.get("ws", "one_q").emit("i32.add").get(acc)
                isa.store(c)
                c.get("one_q").emit("i32.const", lanes_bytes).emit("i32.add").set("one_q")
            c.get("one_ci").emit("i32.const", planes).emit("i32.add").set("one_ci")


def _last(c: Code, isa: Isa, acc: int, epilogue: tuple[str, ...]) -> None:
    """The register of pixels ending at ``end``, accumulated over k in ``acc``, stored."""
    c.get("end").emit("i32.const", isa.lanes).emit("i32.sub").set("one_p")
    isa.const(c, 0.0)
    c.set(acc)
    c.get("xg").get("one_p").emit("i32.const", 2).emit("i32.shl").emit("i32.add").set("one_src")
    c.emit("i32.const", 0).set("one_ci")
    with c.loop():
        c.get("one_ci", "steps").emit("i32.ge_u").emit("br_if", 1)
        c.get("one_src")
        isa.load(c)
        c.get("wg", "one_ci").emit("i32.const", 2).emit("i32.shl").emit("i32.add")
        isa.load_splat(c)
        isa.madd_into(c, acc)
        c.get("one_src", "bplane").emit("i32.add").set("one_src")
        c.get("one_ci").emit("i32.const", 1).emit("i32.add").set("one_ci")
    c.emit("i32.const", isa.lanes).set("one_n")
    _store(c, isa, epilogue, "one_n", from_ws=False, acc=acc)


def _store(c: Code, isa: Isa, epilogue: tuple[str, ...], count: str, from_ws: bool,
           acc: int) -> None:
    """Pixels ``one_p .. one_p + count`` of the channel: the sums (in ``ws``, or the
    one register ``acc``) plus the bias, plus the residual, then the activations, as the
    dense tile's stores do them, into Y."""
    lanes_bytes = 4 * isa.lanes
    residual = "r" in c.names
    # one_y (one_r) = yg (rg) + (one_p - first0) * 4
    for base, pointer in (("yg", "one_y"), ("rg", "one_r"))[:1 + residual]:
        c.get(base)
        c.get("one_p", "first0").emit("i32.sub").emit("i32.const", 2).emit("i32.shl")
        c.emit("i32.add").set(pointer)
    c.emit("i32.const", 0).set("one_q")
    with c.loop():
        c.get("one_q", count).emit("i32.const", 2).emit("i32.shl").emit("i32.ge_u")
        c.emit("br_if", 1)
        c.get("one_y", "one_q").emit("i32.add")
        if from_ws:
            c.get("ws", "one_q").emit("i32.add")
            isa.load(c)
        else:
            c.get(acc)
        c.get("bg")
        isa.load_splat(c)
        isa.op(c, "add")
        if residual:
            c.get("one_r", "one_q").emit("i32.add")
            isa.load(c)
            isa.op(c, "add")
        for op in epilogue:
            activations.apply(c, isa, op)
        isa.store(c)
        c.get("one_q").emit("i32.const", lanes_bytes).emit("i32.add").set("one_q")
