"""One part of a split kernel call: where its sub-range starts and ends (``split.count``'s
units dealt out in whole grains) and the kernel called on it with its pointers advanced
(``parallel`` posts the job; every thread of the team runs these parts).

The job's arguments are read from the shared control memory (``CONTROL_MEMORY``, memory 1 of
a merged model) at ``ARGS_AT``, one 4-byte word each.
"""

from __future__ import annotations

from . import abi
from .splits import GROUP_SPLIT_MIN, Split
from .wasm import Code

CONTROL_MEMORY = 1  # NOTE: the control memory's index: memory 0 is the shared linear memory
ARGS_AT = 64
"""Byte offset of the job's kernel arguments in the control memory (the words before it are
``parallel``'s)."""


def load_arg(c: Code, spec: abi.KernelSpec, param: str) -> None:
    """Push the job's argument ``param`` of kernel ``spec`` from the control memory."""
    index = arg_names(spec).index(param)
    c.emit("i32.const", 0)
    c.emit(f"{spec.param_types[index]}.load", 2, ARGS_AT + 4 * index, CONTROL_MEMORY)


def arg_names(spec: abi.KernelSpec) -> list[str]:
    """The names of ``spec``'s parameters, in order."""
    return [p.split(":")[0] for p in spec.params]


def _bound(c: Code, split: Split, part: int, parts: int, count: int, scratch: int) -> None:
    """Push where part ``part`` of ``parts`` (locals) starts: the ``count`` units in whole
    grains (``tiles``, the last maybe partial) dealt ``tiles // parts`` to each part and one
    more to each of the last ``tiles % parts``, and ``count`` itself from ``part == parts``.
    NOTE: the larger parts come last, so threads that take parts in turn share them out; cut
    by rounding ``count * part / parts`` down to the grain instead, MiniLM's 128 rows in tiles
    of 5 came out 15, 15, 15, 15, 20, 15, 15, 18 and one thread took 68 of the 128."""
    tiles = scratch
    c.emit("local.get", count).emit("i32.const", split.grain - 1).emit("i32.add")
    c.emit("i32.const", split.grain).emit("i32.div_u").emit("local.set", tiles)
    # part * (tiles / parts) + max(0, part - (parts - tiles % parts))
    c.emit("local.get", part).emit("local.get", tiles).emit("local.get", parts)
    c.emit("i32.div_u").emit("i32.mul")
    c.emit("local.get", part).emit("local.get", parts).emit("i32.sub")
    c.emit("local.get", tiles).emit("local.get", parts).emit("i32.rem_u").emit("i32.add")
    c.emit("local.tee", tiles).emit("i32.const", 0).emit("local.get", tiles)
    c.emit("i32.const", 0).emit("i32.gt_s").emit("select").emit("i32.add")
    c.emit("i32.const", split.grain).emit("i32.mul").emit("local.tee", tiles)
    c.emit("local.get", count).emit("local.get", tiles).emit("local.get", count)
    c.emit("i32.lt_u").emit("select")


def part_body(c: Code, spec: abi.KernelSpec, split: Split, serial: int) -> None:
    """Write ``part(p, parts)`` into ``c`` (params ``p`` and ``parts``): the kernel (its
    one-thread body at ``serial``) on part ``p``'s sub-range of the job's arguments (by
    ``split.by_groups``, when it has one, for a call of ``GROUP_SPLIT_MIN`` groups or
    more)."""
    scratch = tuple(c.local("i32") for _ in range(5))
    if split.by_groups is None:
        _part_body(c, spec, split, serial, scratch)
        return
    load_arg(c, spec, "groups")
    c.emit("i32.const", GROUP_SPLIT_MIN).emit("i32.ge_u").emit("if")
    _part_body(c, spec, split.by_groups, serial, scratch)
    c.emit("else")
    _part_body(c, spec, split, serial, scratch)
    c.emit("end")


def _part_body(c: Code, spec: abi.KernelSpec, split: Split, serial: int,
               scratch: tuple[int, ...]) -> None:
    """Call the kernel on part ``p``'s sub-range as ``split`` cuts it (``scratch``: five i32
    locals)."""
    part, parts = 0, 1
    count, lo, hi, nxt, tiles = scratch
    load_arg(c, spec, split.count)
    c.emit("local.set", count)
    _bound(c, split, part, parts, count, tiles)
    c.emit("local.set", lo)
    c.emit("local.get", part).emit("i32.const", 1).emit("i32.add").emit("local.set", nxt)
    _bound(c, split, nxt, parts, count, tiles)
    c.emit("local.set", hi)
    c.emit("local.get", hi).emit("local.get", lo).emit("i32.le_u").emit("if").emit("return")
    c.emit("end")
    if split.per:
        with c.loop():  # one unit at a time: lo .. hi
            c.emit("local.get", lo).emit("local.get", hi).emit("i32.ge_u").emit("br_if", 1)
            _call_range(c, spec, split, (part, lo, None), serial)
            c.emit("local.get", lo).emit("i32.const", 1).emit("i32.add").emit("local.set", lo)
    else:
        _call_range(c, spec, split, (part, lo, hi), serial)


def _call_range(c: Code, spec: abi.KernelSpec, split: Split,
                where: tuple[int, int, int | None], serial: int) -> None:
    """Call the kernel as part ``part`` on units ``lo .. hi`` (``where``, locals; ``hi``
    ``None``: unit ``lo`` alone)."""
    part, lo, hi = where
    for param in arg_names(spec):
        if split.region is not None and param == split.region.pointer:
            load_arg(c, spec, param)
            c.emit("local.get", part)
            split.region.size(c, lambda name: load_arg(c, spec, name))
            c.emit("i32.mul").emit("i32.add")
        elif param == split.count or param in split.same or param in split.shares:
            if hi is None:
                c.emit("i32.const", 1)
            else:
                c.emit("local.get", hi).emit("local.get", lo).emit("i32.sub")
            if param in split.shares:
                _share(c, spec, split, param)
                c.emit("i32.mul")
        elif param in split.per.values():
            c.emit("i32.const", 1)
        elif param in split.advance:
            load_arg(c, spec, param)
            c.emit("local.get", lo)
            if param in split.per:
                load_arg(c, spec, split.per[param])
                c.emit("i32.div_u")
            for factor in split.advance[param]:
                if isinstance(factor, str) and factor in split.shares:
                    _share(c, spec, split, factor)
                elif isinstance(factor, str):
                    load_arg(c, spec, factor)
                else:  # round_up(param, multiple) = (param + multiple - 1) / multiple * multiple
                    load_arg(c, spec, factor[0])
                    c.emit("i32.const", factor[1] - 1).emit("i32.add")
                    c.emit("i32.const", factor[1]).emit("i32.div_u")
                    c.emit("i32.const", factor[1]).emit("i32.mul")
                c.emit("i32.mul")
            c.emit("i32.const", split.unit.get(param, 4)).emit("i32.mul").emit("i32.add")
        else:
            load_arg(c, spec, param)
    c.emit("call", serial)


def _share(c: Code, spec: abi.KernelSpec, split: Split, param: str) -> None:
    """Push ``param / count``: one unit's share of a parameter of ``split.shares``."""
    load_arg(c, spec, param)
    load_arg(c, spec, split.count)
    c.emit("i32.div_u")
