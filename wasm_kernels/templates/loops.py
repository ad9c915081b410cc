"""Structured loop helpers shared by the kernel templates."""

from __future__ import annotations

from collections.abc import Callable

from ..wasm import Code


def strided_loop(c: Code, counter: int, step: int, limit: int,
                 body: Callable[[], None]) -> None:
    """``while counter + step <= limit: body(); counter += step`` (unsigned), continuing
    from the counter's current value, so a vector loop can hand over to a scalar tail."""
    c.emit("block").emit("loop")
    c.emit("local.get", counter).emit("i32.const", step).emit("i32.add")
    c.emit("local.get", limit).emit("i32.gt_u").emit("br_if", 1)
    body()
    c.emit("local.get", counter).emit("i32.const", step).emit("i32.add")
    c.emit("local.set", counter)
    c.emit("br", 0).emit("end").emit("end")
