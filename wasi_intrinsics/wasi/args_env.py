"""WASI arguments and environment: exactly what the host put in ``WasiConfig``."""

from __future__ import annotations

from ..intrinsic import HostContext, IntrinsicModule, i32
from .memory import pack, write_bytes, write_u32
from .syscall import syscall

args_env = IntrinsicModule("wasi_args_env")


def _strings(ctx: HostContext, environment: bool) -> list[bytes]:
    config = ctx.state.config
    if environment:
        return [f"{key}={value}".encode() + b"\0" for key, value in config.env.items()]
    return [arg.encode() + b"\0" for arg in config.args]


def _sizes(ctx: HostContext, environment: bool, count: int, size: int) -> None:
    strings = _strings(ctx, environment)
    memory = ctx.memory
    write_u32(memory, count, len(strings))
    write_u32(memory, size, sum(len(s) for s in strings))


def _get(ctx: HostContext, environment: bool, pointers: int, buf: int) -> None:
    strings = _strings(ctx, environment)
    memory = ctx.memory
    addresses, address = [], buf & 0xFFFFFFFF
    for string in strings:
        addresses.append(address & 0xFFFFFFFF)
        address += len(string)
    pack(memory, pointers, f"{len(strings)}I", *addresses)
    write_bytes(memory, buf, b"".join(strings))


@syscall(args_env)
def args_sizes_get(ctx: HostContext, argc: i32, argv_buf_size: i32) -> None:
    """Write the number of arguments and the bytes they need (NUL-terminated)."""
    _sizes(ctx, False, argc, argv_buf_size)


@syscall(args_env)
def args_get(ctx: HostContext, argv: i32, argv_buf: i32) -> None:
    """Write the arguments into ``argv_buf`` and pointers to them into ``argv``."""
    _get(ctx, False, argv, argv_buf)


@syscall(args_env)
def environ_sizes_get(ctx: HostContext, count: i32, buf_size: i32) -> None:
    """Write the number of ``KEY=VALUE`` variables and the bytes they need."""
    _sizes(ctx, True, count, buf_size)


@syscall(args_env)
def environ_get(ctx: HostContext, environ: i32, environ_buf: i32) -> None:
    """Write the ``KEY=VALUE`` variables into ``environ_buf`` and pointers into ``environ``."""
    _get(ctx, True, environ, environ_buf)
