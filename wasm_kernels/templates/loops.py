"""Structured loop helpers shared by the kernel templates."""

from __future__ import annotations

from typing import Callable

from ..wasm import Code


def counted_loop(c: Code, counter: int, emit_limit: Callable[[], object],
                 body: Callable[[], None]) -> None:
    """``for counter in range(0, limit): body()``, with ``limit`` pushed by ``emit_limit``.

    ``body`` runs inside ``block``/``loop``, so a ``br`` in it must count those two labels.
    """
    c.emit("i32.const", 0).emit("local.set", counter)
    c.emit("block").emit("loop")
    c.emit("local.get", counter)
    emit_limit()
    c.emit("i32.ge_u").emit("br_if", 1)
    body()
    c.emit("local.get", counter).emit("i32.const", 1).emit("i32.add").emit("local.set", counter)
    c.emit("br", 0).emit("end").emit("end")
