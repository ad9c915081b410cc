"""Structured loop helpers shared by the kernel templates."""

from __future__ import annotations

from typing import Callable

from ..wasm import Code


def counted_loop(c: Code, counter: int, emit_limit: Callable[[], object],
                 body: Callable[[], None], start_local: int | None = None) -> None:
    """``for counter in range(start, limit): body()``; ``emit_limit`` pushes the limit and
    ``start`` is 0 or the value of local ``start_local``.

    ``body`` runs inside ``block``/``loop``, so a ``br`` in it must count those two labels.
    """
    if start_local is None:
        c.emit("i32.const", 0)
    else:
        c.emit("local.get", start_local)
    c.emit("local.set", counter)
    c.emit("block").emit("loop")
    c.emit("local.get", counter)
    emit_limit()
    c.emit("i32.ge_u").emit("br_if", 1)
    body()
    c.emit("local.get", counter).emit("i32.const", 1).emit("i32.add").emit("local.set", counter)
    c.emit("br", 0).emit("end").emit("end")
