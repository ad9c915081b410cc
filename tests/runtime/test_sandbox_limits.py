"""Issue 18's limit promises: each test is named after the promise it keeps, and tries to
break it the way a hostile guest would."""

import io
import os
import re
import signal
import subprocess
import sys
import time
import tracemalloc
import zipfile

import numpy as np
import pytest
import wasmtime

import runtime
from runtime import LimitExceeded
from runtime.cli import main
from runtime.commands.wasi import run_command
from runtime.compartment import TABLE_ELEMENT_BYTES, ResourceLimits
from runtime.tensor_io import read_arrays
from tests.runtime.wat_models import metadata, with_section
from wasi_intrinsics.wasi import Preopen, WasiConfig
from wasi_intrinsics.wasi.abi import FILE_RIGHTS
from wasi_intrinsics.wasi.errno import Errno
from wasi_intrinsics.wasi.fd import MAX_IO_BYTES
from wasi_intrinsics.wasi.memory import MAX_IOVECS
from wasi_intrinsics.wasi.poll import MAX_SUBSCRIPTIONS
from wasi_intrinsics.wasi.state import CAPTURE_BYTES

PAGE = 65536
MEMORIES = 8


def _grow_all(memories: range) -> str:
    """Grow each memory one page at a time until it refuses; leave the total pages in $n."""
    return "".join(f"""
      (block $done{m} (loop $grow{m}
        (br_if $done{m} (i32.eq (memory.grow {m} (i32.const 1)) (i32.const -1)))
        (br $grow{m})))
      (local.set $n (i32.add (local.get $n) (memory.size {m})))""" for m in memories)


def test_max_memory_caps_the_sum_of_all_memories_of_a_wasi_program():
    own = "".join(f"(memory $m{m} 0)" for m in range(MEMORIES))
    wat = f"""(module (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
      {own}
      (func (export "_start") (local $n i32) {_grow_all(range(MEMORIES))}
        (call $exit (local.get $n))))"""
    pages = run_command(wasmtime.wat2wasm(wat), WasiConfig(), ResourceLimits(max_memory=8 << 20))
    assert 8 * PAGE < pages * PAGE <= 8 << 20  # every memory grew, the sum stayed under


def test_max_memory_caps_the_sum_of_all_memories_of_a_model():
    own = "".join(f"(memory $m{m} 0)" for m in range(1, MEMORIES + 1))
    body = f"""{_grow_all(range(MEMORIES + 1))}
      (f32.store (i32.const 1024) (f32.convert_i32_u (local.get $n))) (i32.const 0)"""
    wat = f"""(module (import "env" "memory" (memory 1)) {own}
      (func (export "run") (param $batch i32) (result i32) (local $n i32) {body}))"""
    model = with_section(wasmtime.wat2wasm(wat), metadata())
    session = runtime.load(model, max_memory="8MiB", instances=1)
    pages = session.run(np.zeros((1, 4), np.float32))["y"][0, 0]
    assert MEMORIES + 1 < pages and pages * PAGE <= 8 << 20


def test_max_memory_counts_table_elements_too():
    own = "".join(f"(table $t{t} 0 funcref)" for t in range(MEMORIES))
    grow = "".join(f"""
      (block $done{t} (loop $grow{t}
        (br_if $done{t} (i32.eq (table.grow {t} (ref.null func) (i32.const 1024))
                                (i32.const -1)))
        (br $grow{t})))
      (local.set $n (i32.add (local.get $n) (table.size {t})))""" for t in range(MEMORIES))
    wat = f"""(module (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
      {own} (func (export "_start") (local $n i32) {grow} (call $exit (local.get $n))))"""
    elements = run_command(wasmtime.wat2wasm(wat), WasiConfig(), ResourceLimits(max_memory=1 << 20))
    assert MEMORIES * 1024 <= elements and elements * TABLE_ELEMENT_BYTES <= 1 << 20


def _wasi(body: str, imports: str = "", pages: int = 1, fields: str = "") -> bytes:
    return wasmtime.wat2wasm(f"""(module
      (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
      {imports}
      (memory (export "memory") {pages}) {fields}
      (func (export "_start") {body}))""")


FD_WRITE = ('(import "wasi_snapshot_preview1" "fd_write" '
            '(func $write (param i32 i32 i32 i32) (result i32)))')


def test_what_a_guest_writes_to_a_captured_stream_is_bounded():
    # 64 KiB of memory written to stderr 200 times: 12.5 MiB, of which 64 KiB are kept.
    body = """(i32.store (i32.const 0) (i32.const 0)) (i32.store (i32.const 4) (i32.const 65536))
      (local.set $i (i32.const 200))
      (loop $l (drop (call $write (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 8)))
        (br_if $l (local.tee $i (i32.sub (local.get $i) (i32.const 1)))))"""
    config = WasiConfig()
    run_command(_wasi(f"(local $i i32) {body}", FD_WRITE), config)
    assert len(config.stderr.getvalue()) == CAPTURE_BYTES
    assert config.stderr.dropped == 200 * 65536 - CAPTURE_BYTES
    assert config.stderr.text().endswith(f"[{200 * 65536 - CAPTURE_BYTES} more bytes dropped]")


def test_a_model_rejection_message_is_bounded_and_fresh_each_run():
    # Each run writes 64 KiB of 'A' to stderr and then rejects its input (status 1).
    wat = f"""(module (import "env" "memory" (memory 2)) {FD_WRITE}
      (func (export "run") (param $batch i32) (result i32)
        (memory.fill (i32.const 65536) (i32.const 65) (i32.const 65536))
        (i32.store (i32.const 8192) (i32.const 65536)) (i32.store (i32.const 8196) (i32.const 65536))
        (drop (call $write (i32.const 2) (i32.const 8192) (i32.const 1) (i32.const 8200)))
        (drop (call $write (i32.const 2) (i32.const 8192) (i32.const 1) (i32.const 8200)))
        (i32.const 1)))"""
    session = runtime.load(with_section(wasmtime.wat2wasm(wat), metadata()), instances=1)
    for _ in range(3):
        with pytest.raises(runtime.Trap, match=r"status 1\): A{65536} \[65536 more bytes "
                                               r"dropped\]$"):
            session.run(np.zeros((1, 4), np.float32))


POLL = ('(import "wasi_snapshot_preview1" "poll_oneoff" '
        '(func $poll (param i32 i32 i32 i32) (result i32)))')
FD_READ = ('(import "wasi_snapshot_preview1" "fd_read" '
           '(func $read (param i32 i32 i32 i32) (result i32)))')


def _sleep(seconds: float) -> str:
    """poll_oneoff on one relative monotonic clock subscription of ``seconds``."""
    return f"""(i32.store8 (i32.const 8) (i32.const 0)) (i32.store (i32.const 16) (i32.const 1))
      (i64.store (i32.const 24) (i64.const {int(seconds * 1e9)}))
      (call $exit (call $poll (i32.const 0) (i32.const 64) (i32.const 1) (i32.const 128)))"""


def test_the_timeout_holds_while_the_guest_sleeps_in_poll_oneoff(busy_host):
    start = time.monotonic()
    with pytest.raises(LimitExceeded, match=r"time limit of 0.3 s exceeded .*poll_oneoff"):
        run_command(_wasi(_sleep(20), POLL), WasiConfig(), ResourceLimits(timeout=0.3))
    assert time.monotonic() - start < 10  # woke at the deadline, not after the 20 s sleep


def test_poll_oneoff_still_sleeps_when_the_sleep_ends_first():
    assert run_command(_wasi(_sleep(0.05), POLL), WasiConfig(), ResourceLimits(timeout=5)) == 0


@pytest.fixture(params=["few fds", "fds past 1024"])
def busy_host(request):
    """Run a test as is, and again with the host holding over 1024 fds, where ``select``
    cannot wait on the new ones."""
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100 if request.param != "few fds"
                                                             else 0)]
    yield
    for fd in held:
        os.close(fd)


def test_the_timeout_holds_while_the_guest_reads_an_idle_stdin(busy_host):
    read, write = os.pipe()  # nobody ever writes: a read blocks until the deadline
    body = """(i32.store (i32.const 0) (i32.const 64)) (i32.store (i32.const 4) (i32.const 16))
      (call $exit (call $read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))"""
    try:
        with (open(read, "rb", closefd=False) as stdin,
              pytest.raises(LimitExceeded, match=r"time limit of 0.3 s exceeded .*fd_read")):
            run_command(_wasi(body, FD_READ), WasiConfig(stdin=stdin), ResourceLimits(timeout=0.3))
    finally:
        os.close(read)
        os.close(write)


def test_one_poll_oneoff_takes_bounded_work():
    # 2000 subscriptions (96 KiB of them) are more than MAX_SUBSCRIPTIONS: EINVAL, at once.
    body = "(call $exit (call $poll (i32.const 0) (i32.const 0) (i32.const 2000) (i32.const 0)))"
    assert run_command(_wasi(body, POLL, pages=2), WasiConfig()) == Errno.EINVAL
    assert MAX_SUBSCRIPTIONS < 2000


def _write_iovecs(count: int, then: str) -> str:
    """fd_write to stdout of ``count`` iovecs, each naming all 1 MiB of memory; nwritten at
    9000; then ``then``."""
    return f"""(local $i i32)
      (loop $l (i64.store (i32.mul (local.get $i) (i32.const 8)) (i64.const {1 << 52}))
        (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1)))
                            (i32.const {count}))))
      (local.set $i (call $write (i32.const 1) (i32.const 0) (i32.const {count})
                                 (i32.const 9000)))
      {then}"""


def test_one_fd_write_takes_bounded_work_and_host_memory():
    too_many = _write_iovecs(MAX_IOVECS + 1, "(call $exit (local.get $i))")
    assert run_command(_wasi(too_many, FD_WRITE, 16), WasiConfig()) == Errno.EINVAL
    # 1024 iovecs of all 1 MiB of memory would be 1 GiB on the host: the write is short.
    short = _write_iovecs(MAX_IOVECS, "(call $exit (i32.shr_u (i32.load (i32.const 9000)) "
                                      "(i32.const 20)))")
    config = WasiConfig()
    assert run_command(_wasi(short, FD_WRITE, 16), config) == MAX_IO_BYTES >> 20
    assert config.stdout.dropped == MAX_IO_BYTES - CAPTURE_BYTES


def test_a_wasi_call_from_a_module_without_memory_gets_an_errno():
    wat = f"""(module (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
      {FD_WRITE}
      (func (export "_start")
        (call $exit (call $write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))"""
    assert run_command(wasmtime.wat2wasm(wat), WasiConfig()) == Errno.EFAULT


@pytest.mark.parametrize("flags, message", [
    (["--timeout", "1e300"], (r"timeout must be more than 0 and at most 9.22e\+16 seconds, "
                              r"got 1e\+300")),
    (["--timeout", "inf"], r"timeout must be .*, got inf"),
    (["--timeout", "nan"], r"timeout must be .*, got nan"),
    (["--fuel", "18446744073709551616"], r"fuel must be between 1 and 18446744073709551615"),
    (["--max-memory", "99999999999999999999GiB"], r"max_memory must be between 1 and"),
])
def test_limit_values_are_validated_once_with_a_clear_message(flags, message, tmp_path,
                                                               capsys):
    program = tmp_path / "prog.wasm"
    program.write_bytes(_wasi("(call $exit (i32.const 0))"))
    assert main(["wasi", "run", *flags, str(program)]) == 7
    err = capsys.readouterr().err
    assert re.fullmatch(rf"wasmnn: error: {message}.*\n", err)


READY_THEN_LOOP = """(i32.store (i32.const 0) (i32.const 16)) (i32.store (i32.const 4) (i32.const 6))
      (i64.store (i32.const 16) (i64.const 0x0a7964616572))
      (drop (call $write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
      (loop $l (br $l))"""


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize("flags", [[], ["--timeout", "600"]], ids=["no-limit", "timeout"])
def test_sigint_and_sigterm_stop_a_running_guest_promptly(signum, code, flags, tmp_path):
    program = tmp_path / "spin.wasm"
    program.write_bytes(_wasi(READY_THEN_LOOP, FD_WRITE))
    child = subprocess.Popen([sys.executable, "-m", "runtime", "wasi", "run", *flags,
                              str(program)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert child.stdout.readline() == b"ready\n"  # the guest is in its endless loop
        child.send_signal(signum)
        assert child.wait(timeout=30) == code
        assert child.stderr.read().decode() == (
            f"wasmnn: interrupted by {signal.Signals(signum).name}\n")
    finally:
        child.kill()
        child.wait()


def _npz_member(path, header_shape: tuple[int, ...], data: bytes) -> None:
    """An .npz whose member 'x' has a float32 header of ``header_shape`` followed by ``data``."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False,
                                                  "shape": header_shape})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("x.npy", header.getvalue() + data)


def test_an_npz_member_is_refused_from_its_header_when_it_declares_more_than_it_holds(tmp_path):
    _npz_member(tmp_path / "lie.npz", (1 << 29,), b"\0" * 64)  # says 2 GiB, holds 64 bytes
    with pytest.raises(ValueError, match=r"member 'x.npy' declares shape \[536870912\] float32 "
                                         r"\(2147483648 bytes\) but holds 64 bytes"):
        read_arrays(tmp_path / "lie.npz")


def test_an_input_larger_than_the_model_takes_is_refused_before_it_is_read(tmp_path, capsys):
    _npz_member(tmp_path / "big.npz", (1 << 24,), bytes(1 << 26))  # 64 MiB of zeros, deflated
    model = tmp_path / "model.wasm"
    model.write_bytes(with_section(wasmtime.wat2wasm(
        '(module (import "env" "memory" (memory 1)) '
        '(func (export "run") (param i32) (result i32) (i32.const 0)))'), metadata()))
    tracemalloc.start()
    try:
        assert main(["run", str(model), "--input", str(tmp_path / "big.npz")]) == 7
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20  # the 64 MiB were never allocated
    assert capsys.readouterr().err == (
        f"wasmnn: error: cannot read {str(tmp_path / 'big.npz')!r} as .npz: member 'x.npy' "
        "declares shape [16777216] float32 (67108864 bytes), over the limit of 16777216 bytes "
        "for this model's inputs\n")


def test_a_json_number_beyond_float_range_is_bad_input(tmp_path, capsys):
    (tmp_path / "x.json").write_text("[[1" + "0" * 400 + ", 0, 0, 0]]")
    with pytest.raises(ValueError, match=r"cannot read .*x.json.* as .json: int too large"):
        read_arrays(tmp_path / "x.json")


def test_poll_oneoff_at_the_maximum_time_waits_until_the_deadline():
    forever = _sleep(0).replace("(i64.const 0)", "(i64.const -1)")  # 2^64 - 1 ns
    with pytest.raises(LimitExceeded, match=r"time limit of 0.2 s exceeded .*poll_oneoff"):
        run_command(_wasi(forever, POLL), WasiConfig(), ResourceLimits(timeout=0.2))


def test_the_timeout_holds_while_the_guest_opens_and_reads_a_fifo(tmp_path):
    os.mkfifo(tmp_path / "pipe")  # nobody ever writes to it
    body = f"""(drop (call $open (i32.const 3) (i32.const 0) (i32.const 100) (i32.const 4)
                             (i32.const 0) (i64.const {int(FILE_RIGHTS)}) (i64.const 0)
                             (i32.const 0) (i32.const 200)))
      (i32.store (i32.const 0) (i32.const 64)) (i32.store (i32.const 4) (i32.const 16))
      (call $exit (call $read (i32.load (i32.const 200)) (i32.const 0) (i32.const 1)
                              (i32.const 8)))"""
    imports = FD_READ + (' (import "wasi_snapshot_preview1" "path_open" (func $open (param i32 '
                         'i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))')
    wasm = _wasi(body, imports, fields='(data (i32.const 100) "pipe")')
    config = WasiConfig(preopens=[Preopen(str(tmp_path), "/")])
    with pytest.raises(LimitExceeded, match=r"time limit of 0.3 s exceeded .*fd_read"):
        run_command(wasm, config, ResourceLimits(timeout=0.3))


def test_a_small_declared_table_leaves_the_rest_of_max_memory_to_the_memory():
    wat = """(module (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
      (table 1 10 funcref) (memory 0)
      (func (export "_start") (local $n i32)
        (block $done (loop $grow
          (br_if $done (i32.eq (memory.grow (i32.const 1)) (i32.const -1))) (br $grow)))
        (call $exit (memory.size))))"""
    pages = run_command(wasmtime.wat2wasm(wat), WasiConfig(), ResourceLimits(max_memory=1 << 20))
    assert pages == 15  # 1 MiB less the table's 10 elements, in whole pages


def test_the_timeout_holds_while_the_guest_writes_to_a_pipe_nobody_reads(busy_host):
    read, write = os.pipe()  # 1 MiB into a 64 KiB pipe buffer that is never drained
    body = """(i32.store (i32.const 0) (i32.const 0)) (i32.store (i32.const 4) (i32.const 1048576))
      (call $exit (call $write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))"""
    try:
        with (open(write, "wb", closefd=False) as stdout,
              pytest.raises(LimitExceeded, match=r"time limit of 0.3 s exceeded .*fd_write")):
            run_command(_wasi(body, FD_WRITE, 16), WasiConfig(stdout=stdout),
                        ResourceLimits(timeout=0.3))
    finally:
        os.close(read)
        os.close(write)
