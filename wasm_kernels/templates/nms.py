"""``f32_non_max_suppression``: greedy NMS per (batch, class); scalar code but for the scan
of the scores against the floor, 16 at a time in the SIMD variants.

Per batch, each box's corners and area go to scratch once. Per class, the boxes over the
score floor go into a binary max-heap of (score, index) pairs (built in O(m)); the best is
popped until k boxes are kept or none is left, each kept unless its IoU with a box kept
before it is over the threshold (only kept boxes are compared: O(m + popped * (log m + k)),
never O(n^2)). Kept rows are written as they are found, so they come in (batch, class,
rank) order; the rest of the capacity is set to -1 at the end.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..abi import KernelSpec
from ..wasm import Code, FuncType
from .isa import ISAS

_LOWEST = float(np.finfo(np.float32).min)
"""Scores of -inf are read as this, as ONNX runtimes order them among the others."""

_BOX = 20
"""Bytes of one box's record in scratch: low and high first coordinates, low and high
second ones, area (f32 each)."""

_GROUP = 16
"""Scores the SIMD variants test against the floor at once."""

_I32 = ("b", "cls", "i", "m", "kept", "rows", "heap", "keep", "box", "pos", "child", "pa",
        "pb", "j", "at", "record", "scores_at", "capacity", "end")
_F32 = ("s", "la", "ha", "lc", "hc", "across_a", "across_c", "overlap")


def emit(spec: KernelSpec, isa_name: str) -> tuple[FuncType, Code]:
    """Generate ``f32_non_max_suppression`` for ``isa_name`` (the SIMD ones skip groups of
    16 boxes below the score floor at once)."""
    vector = ISAS[isa_name].vector
    c = Code(spec.param_types, names=[p.split(":")[0] for p in spec.params])
    for name in _I32:
        c.local("i32", name)
    for name in _F32:
        c.local("f32", name)
    c.local("i64", "swap")
    if vector:
        c.local("v128", "floors")

    def for_range(counter: str, limit: str, body: Callable[[], None], start: bool = True
                  ) -> None:
        """``for counter in range(limit): body()`` (``br 1`` in body breaks, unsigned),
        from 0 or (not ``start``) from the counter's value."""
        if start:
            c.emit("i32.const", 0).set(counter)
        with c.loop():
            c.get(counter, limit).emit("i32.ge_u").emit("br_if", 1)
            body()
            c.get(counter).emit("i32.const", 1).emit("i32.add").set(counter)

    def address(base: str, index: str, size: int) -> None:
        """Push ``base + index * size``."""
        c.get(base, index).emit("i32.const", size).emit("i32.mul").emit("i32.add")

    def precedes(a: str, b: str) -> None:
        """Push whether heap entry ``a`` comes before entry ``b``: a higher score, or an
        equal one at a lower box index."""
        address("heap", a, 8)
        c.set("pa")
        address("heap", b, 8)
        c.set("pb")
        c.get("pa").emit("f32.load", 2, 0).get("pb").emit("f32.load", 2, 0).emit("f32.gt")
        c.get("pa").emit("f32.load", 2, 0).get("pb").emit("f32.load", 2, 0).emit("f32.eq")
        c.get("pa").emit("i32.load", 2, 4).get("pb").emit("i32.load", 2, 4).emit("i32.lt_s")
        c.emit("i32.and").emit("i32.or")

    def sift_down() -> None:
        """Swap the entry at ``pos`` down until neither child comes before it."""
        with c.loop():
            c.get("pos").emit("i32.const", 1).emit("i32.shl").emit("i32.const", 1)
            c.emit("i32.add").set("child")
            c.get("child", "m").emit("i32.ge_u").emit("br_if", 1)
            c.get("child").emit("i32.const", 1).emit("i32.add").set("j")
            c.get("j", "m").emit("i32.lt_u")
            with c.if_():
                precedes("j", "child")
                with c.if_():
                    c.get("j").set("child")
            precedes("child", "pos")
            c.emit("i32.eqz").emit("br_if", 1)
            # pa is the child's entry and pb the held one's, from the last precedes
            c.get("pa").emit("i64.load", 3, 0).set("swap")
            c.get("pa").get("pb").emit("i64.load", 3, 0).emit("i64.store", 3, 0)
            c.get("pb").get("swap").emit("i64.store", 3, 0)
            c.get("child").set("pos")

    def corners() -> None:
        """Box ``i`` of the batch at ``at`` as its record in scratch."""
        address("at", "i", 16)
        c.set("pa")
        loads = [lambda k=k: c.get("pa").emit("f32.load", 2, 4 * k) for k in range(4)]
        c.get("center")
        with c.if_():
            for low, high, mid, size in (("la", "ha", 0, 2), ("lc", "hc", 1, 3)):
                loads[mid]()
                loads[size]()
                c.emit("f32.const", 0.5).emit("f32.mul").set("s")
                c.get("s").emit("f32.sub").set(low)
                loads[mid]()
                c.get("s").emit("f32.add").set(high)
            c.emit("else")
            for low, high, first, second in (("la", "ha", 0, 2), ("lc", "hc", 1, 3)):
                loads[first]()
                loads[second]()
                c.emit("f32.min").set(low)
                loads[first]()
                loads[second]()
                c.emit("f32.max").set(high)
        address("scratch", "i", _BOX)
        c.set("record")
        for k, side in enumerate(("la", "ha", "lc", "hc")):
            c.get("record", side).emit("f32.store", 2, 4 * k)
        c.get("record", "ha", "la").emit("f32.sub").get("hc", "lc").emit("f32.sub")
        c.emit("f32.mul").emit("f32.store", 2, 16)

    def push_candidate(box: str) -> None:
        """Box ``box`` into the heap when its score is over the floor (or none is set)."""
        address("scores_at", box, 4)
        c.emit("f32.load", 2, 0).emit("f32.const", _LOWEST).emit("f32.max").set("s")
        c.get("floored").emit("i32.eqz").get("s", "floor").emit("f32.gt").emit("i32.or")
        with c.if_():
            address("heap", "m", 8)
            c.set("pa")
            c.get("pa", "s").emit("f32.store", 2, 0)
            c.get("pa", box).emit("i32.store", 2, 4)
            c.get("m").emit("i32.const", 1).emit("i32.add").set("m")

    def skip_below_floor() -> None:
        """Step ``i`` over groups of ``_GROUP`` boxes none of which is over the floor (when
        one is set), testing a group's scores 4 at a time; a group with a candidate is
        pushed box by box. (``s >= floor`` lets through every score that, -inf read as the
        lowest finite one, is over it: ``push_candidate`` tests it exactly.)"""
        c.get("floored")
        with c.if_():
            c.get("floor").emit("f32x4.splat").set("floors")
            with c.loop():
                c.get("i").emit("i32.const", _GROUP).emit("i32.add").tee("end").get("n")
                c.emit("i32.gt_u").emit("br_if", 1)
                address("scores_at", "i", 4)
                c.set("pa")
                for k in range(_GROUP // 4):
                    c.get("pa").emit("v128.load", 2, 16 * k).get("floors").emit("f32x4.ge")
                    if k:
                        c.emit("v128.or")
                c.emit("v128.any_true")
                with c.if_():
                    with c.loop():
                        c.get("i", "end").emit("i32.ge_u").emit("br_if", 1)
                        push_candidate("i")
                        c.get("i").emit("i32.const", 1).emit("i32.add").set("i")
                c.get("end").set("i")

    def overlaps() -> None:
        """Set ``suppressed`` (in ``pos``) and break when kept box ``j`` suppresses the
        candidate record at ``record``."""
        address("keep", "j", _BOX)
        c.set("pa")
        for k, across in ((0, "across_a"), (8, "across_c")):
            c.get("pa").emit("f32.load", 2, k + 4).get("record").emit("f32.load", 2, k + 4)
            c.emit("f32.min")
            c.get("pa").emit("f32.load", 2, k).get("record").emit("f32.load", 2, k)
            c.emit("f32.max").emit("f32.sub").emit("f32.const", 0.0).emit("f32.max")
            c.set(across)
        c.get("across_a", "across_c").emit("f32.mul").set("overlap")
        c.get("overlap").emit("f32.const", 0.0).emit("f32.gt")
        c.get("overlap")
        c.get("record").emit("f32.load", 2, 16).get("pa").emit("f32.load", 2, 16)
        c.emit("f32.add").get("overlap").emit("f32.sub").emit("f32.div")
        c.get("iou").emit("f32.gt").emit("i32.and")
        c.tee("pos").emit("br_if", 1)

    def keep_best() -> None:
        """Pop the heap's best box; keep it (its row, its record) unless suppressed."""
        c.get("heap").emit("i32.load", 2, 4).set("box")
        c.get("m").emit("i32.const", 1).emit("i32.sub").set("m")
        address("heap", "m", 8)
        c.emit("i64.load", 3, 0).set("swap")
        c.get("heap", "swap").emit("i64.store", 3, 0)
        c.emit("i32.const", 0).set("pos")
        sift_down()
        address("scratch", "box", _BOX)
        c.set("record")
        c.emit("i32.const", 0).set("pos")
        for_range("j", "kept", overlaps)
        c.get("pos").emit("i32.eqz")
        with c.if_():
            address("keep", "kept", _BOX)
            c.set("pa")
            for k in (0, 8):
                c.get("pa", "record").emit("i64.load", 3, k).emit("i64.store", 3, k)
            c.get("pa", "record").emit("i32.load", 2, 16).emit("i32.store", 2, 16)
            address("selected", "rows", 24)
            c.set("pa")
            for k, value in enumerate(("b", "cls", "box")):
                c.get("pa", value).emit("i64.extend_i32_u").emit("i64.store", 3, 8 * k)
            c.get("rows").emit("i32.const", 1).emit("i32.add").set("rows")
            c.get("kept").emit("i32.const", 1).emit("i32.add").set("kept")

    def one_class() -> None:
        c.get("b", "classes").emit("i32.mul").get("cls").emit("i32.add").get("n")
        c.emit("i32.mul").set("i")
        address("scores", "i", 4)
        c.set("scores_at")
        c.emit("i32.const", 0).tee("m").set("i")
        if vector:
            skip_below_floor()
        for_range("i", "n", lambda: push_candidate("i"), start=False)
        c.get("m").emit("i32.const", 1).emit("i32.shr_u").set("i")
        with c.loop():  # heapify: sift every entry with children down, the last first
            c.get("i").emit("i32.eqz").emit("br_if", 1)
            c.get("i").emit("i32.const", 1).emit("i32.sub").tee("i").set("pos")
            sift_down()
        c.emit("i32.const", 0).set("kept")
        with c.loop():
            c.get("kept", "k").emit("i32.ge_u").get("m").emit("i32.eqz").emit("i32.or")
            c.emit("br_if", 1)
            keep_best()

    def one_batch() -> None:
        c.get("b", "n").emit("i32.mul").set("i")
        address("boxes", "i", 16)
        c.set("at")
        for_range("i", "n", corners)
        for_range("cls", "classes", one_class)

    address("scratch", "n", _BOX)
    c.set("heap")
    address("heap", "n", 8)
    c.set("keep")
    c.emit("i32.const", 0).set("rows")
    for_range("b", "batches", one_batch)
    c.get("count", "rows").emit("i64.extend_i32_u").emit("i64.store", 3, 0)
    c.get("batches", "classes").emit("i32.mul").get("k").emit("i32.mul").set("capacity")
    with c.loop():  # the rest of the capacity: rows of -1
        c.get("rows", "capacity").emit("i32.ge_u").emit("br_if", 1)
        address("selected", "rows", 24)
        c.set("pa")
        for k in range(3):
            c.get("pa").emit("i64.const", -1).emit("i64.store", 3, 8 * k)
        c.get("rows").emit("i32.const", 1).emit("i32.add").set("rows")
    return FuncType(spec.param_types, spec.results), c
