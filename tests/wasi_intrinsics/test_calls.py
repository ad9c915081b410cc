"""WASI calls from inline WAT: the errno a guest sees for bad pointers, fds and unsupported
calls, and the legacy ``wasi_unstable`` name. Each program exits with the errno it got."""

from __future__ import annotations

import logging

import pytest
import wasmtime

from runtime.commands.wasi import run_command
from runtime.errors import LinkError, ModelFormatError
from wasi_intrinsics.wasi import WasiConfig
from wasi_intrinsics.wasi.errno import Errno

PAGE = 65536


def errno_of(call: str, params: str, *args: int, module: str = "wasi_snapshot_preview1",
             data: str = "", config: WasiConfig | None = None) -> int:
    """Exit code of a program that calls ``module.call(*args)`` (``params`` gives their wasm
    types, one letter each: ``i`` for i32, ``I`` for i64) and exits with its result."""
    types = ["i32" if p == "i" else "i64" for p in params]
    wat = f"""(module
      (import "{module}" "{call}" (func $call (param {" ".join(types)}) (result i32)))
      (import "{module}" "proc_exit" (func $exit (param i32)))
      (memory (export "memory") 1)
      (data (i32.const 0) "{data}")
      (func (export "_start")
        (call $exit (call $call {" ".join(f"({t}.const {a})" for t, a in zip(types, args))}))))"""
    return run_command(wasmtime.wat2wasm(wat), config or WasiConfig())


def test_fd_write_to_stdout_reports_bytes_written():
    config = WasiConfig()
    # iovec at 16 -> (0, 2): "hi"; nwritten at 32
    assert errno_of("fd_write", "iiii", 1, 16, 1, 32, data="hi" + "\\00" * 14 + "\\00\\00\\00\\00"
                    "\\02\\00\\00\\00", config=config) == Errno.SUCCESS
    assert config.stdout.getvalue() == b"hi"


@pytest.mark.parametrize("args", [(1, PAGE, 1, 0), (1, PAGE - 4, 1, 0), (1, 0, 1, PAGE - 2),
                                  (1, PAGE - 4096, 1024, 0), (1, -8, 1, 0)],
                         ids=["iovs-past-end", "iovec-straddles-end", "nwritten-past-end",
                              "many-iovecs-past-end", "negative-pointer"])
def test_out_of_bounds_pointers_are_efault(args):
    assert errno_of("fd_write", "iiii", *args) == Errno.EFAULT


@pytest.mark.parametrize("call,params,args", [
    ("random_get", "ii", (PAGE - 4, 8)), ("args_sizes_get", "ii", (0, PAGE)),
    ("clock_time_get", "iIi", (1, 0, PAGE - 7)), ("fd_fdstat_get", "ii", (1, PAGE - 1))])
def test_every_call_checks_its_pointers(call, params, args):
    assert errno_of(call, params, *args) == Errno.EFAULT


@pytest.mark.parametrize("call,params,args,expected", [
    ("fd_write", "iiii", (99, 0, 0, 0), Errno.EBADF),
    ("fd_read", "iiii", (1, 0, 0, 0), Errno.ENOTCAPABLE),
    ("fd_seek", "iIii", (1, 0, 0, 0), Errno.ESPIPE),
    ("fd_prestat_get", "ii", (3, 0), Errno.EBADF),
    ("path_open", "iiiiiIIii", (3, 0, 0, 1, 0, 0, 0, 0, 0), Errno.EBADF),
    ("path_create_directory", "iii", (1, 0, 1), Errno.ENOTDIR),
    ("clock_time_get", "iIi", (9, 0, 0), Errno.EINVAL),
    ("poll_oneoff", "iiii", (0, 64, 0, 128), Errno.EINVAL),
    ("sock_shutdown", "ii", (1, 0), Errno.ENOTSOCK),
    ("sock_shutdown", "ii", (42, 0), Errno.EBADF),
    ("fd_close", "i", (42,), Errno.EBADF),
])
def test_errors_are_errno_values(call, params, args, expected):
    assert errno_of(call, params, *args) == expected


def test_unimplemented_call_is_enosys_and_logged(caplog):
    with caplog.at_level(logging.WARNING, logger="wasi_intrinsics.wasi"):
        assert errno_of("proc_raise", "i", 9) == Errno.ENOSYS
    assert "WASI call proc_raise is not implemented" in caplog.text


def test_legacy_module_name_is_registered():
    config = WasiConfig(args=["a", "bc"])
    assert errno_of("args_sizes_get", "ii", 0, 4, module="wasi_unstable", config=config) == 0


def test_exit_code_passes_through():
    wat = """(module (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
      (memory (export "memory") 1) (func (export "_start") (call $exit (i32.const 42))))"""
    assert run_command(wasmtime.wat2wasm(wat), WasiConfig()) == 42


def test_module_without_start_is_refused():
    with pytest.raises(ModelFormatError, match="exports no '_start'"):
        run_command(wasmtime.wat2wasm("(module)"), WasiConfig())


def test_unknown_wasi_import_is_a_link_error():
    wat = """(module (import "wasi_snapshot_preview1" "fd_teleport" (func (param i32)))
      (func (export "_start")))"""
    with pytest.raises(LinkError, match="fd_teleport"):
        run_command(wasmtime.wat2wasm(wat), WasiConfig())
