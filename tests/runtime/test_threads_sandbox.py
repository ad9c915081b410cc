"""The sandbox holds with intra-op threads: a trap or a guard-page fault in any thread is the
one-thread call's clean error, time and fuel limits stop every thread, failing calls leave no
worker behind, and ``max_memory`` caps the memory the team shares."""

import gc
import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest
from thread_probes import assert_idle, worker_threads
from wat_models import METADATA, metadata, wat_model, with_section

import runtime
from runtime.errors import LimitExceeded, Trap
from wasm_kernels import abi


def _gemm_model(body: str, pages: int) -> bytes:
    """A model of ``pages`` pages calling ``f32_gemm`` as ``body`` says."""
    gemm = abi.BY_NAME["f32_gemm"]
    params = " ".join(gemm.param_types)
    meta = metadata(memory_bytes=pages * 65536)
    return wat_model(body, meta=meta,
                     imports=f'(import "{abi.MODULE}" "f32_gemm" (func $gemm (param {params})))')


def _gemm_call(**values: int) -> str:
    """``(call $gemm ...)`` with each parameter of ``f32_gemm`` by name."""
    names = [p.split(":")[0] for p in abi.BY_NAME["f32_gemm"].params]
    return f"(call $gemm {' '.join(f'(i32.const {values[n]})' for n in names)})"


# 96 x 64 x 64 (over the threshold): A and B at 0, B's panels (ws) and A's (wa) after A;
# C's rows 48.. lie past the end of the two-page memory, rows ..48 inside it, so the
# threads taking the later parts trap.
_SHAPE = {"a": 0, "b": 0, "ws": 24576, "wa": 40960, "m": 96, "k": 64, "n": 64}
OUT_OF_BOUNDS = _gemm_call(**_SHAPE, c=131072 - 48 * 64 * 4) + " (i32.const 0)"
FOREVER = f"(loop $again {_gemm_call(**_SHAPE, c=65536)} (br $again)) (i32.const 0)"
X = np.zeros((1, 4), np.float32)


def test_a_trap_in_a_worker_is_the_same_clean_trap_as_on_one_thread():
    model = _gemm_model(OUT_OF_BOUNDS, pages=2)
    with runtime.load(model, threads=1) as one, pytest.raises(Trap) as single:
        one.run(X)
    assert re.search(r"out_of_bounds in wasmnn_kernels_v\d+!f32_gemm", str(single.value))
    with runtime.load(model, threads=2, instances=1) as two:
        # NOTE: a part the caller runs traps in the model's module, which holds the kernels
        # with threads (runtime.merge); a worker's in the kernels' module. Either way a
        # guard page caught it: the process survives a memory fault.
        with pytest.raises(Trap, match=r"out_of_bounds in (\?|wasmnn_kernels_v\d+)!f32_gemm: "
                                       r"wasm trap: out of bounds memory access \(memory fault"
                           ) as got:
            two.run(X)
    assert single.value.code == got.value.code == "out_of_bounds"


def test_an_out_of_bounds_access_of_the_model_itself_is_a_clean_trap():
    """The model's own access faults in a guard page of the shared memory: one module of the
    store imports it (runtime.merge), so the fault is a clean trap, not an abort."""
    model = _gemm_model("(f32.store (i32.const 70000) (f32.const 1)) (i32.const 0)", pages=1)
    with runtime.load(model, threads=2, instances=1) as session:
        with pytest.raises(Trap, match=r"out_of_bounds in \?!func\[\d+\]: wasm trap: out of "
                                       r"bounds memory access \(memory fault at wasm address"):
            session.run(X)


_FAULTS = """
import sys
import runtime
from runtime.errors import Trap
import numpy as np
session = runtime.load(sys.argv[1], threads=2, instances=1)
for _ in range(20):
    try:
        session.run(np.zeros((1, 4), np.float32))
    except Trap as error:
        assert error.code == "out_of_bounds", error
print("alive", session.threads)
"""


@pytest.mark.parametrize("body", [
    OUT_OF_BOUNDS,  # in the kernel, in whichever thread takes the failing part
    "(f32.store (i32.const 131072) (f32.const 1)) (i32.const 0)",  # in the model
])
def test_guard_page_faults_in_a_threaded_session_leave_the_process_alive(body, tmp_path):
    """In a process of its own: an abort (wasmtime's assertion when two instances of one
    store import the faulting memory) would end it with SIGABRT instead of printing."""
    path = tmp_path / "faults.wasm"
    path.write_bytes(_gemm_model(body, pages=2))
    root = os.path.dirname(os.path.dirname(runtime.__file__))
    done = subprocess.run([sys.executable, "-c", _FAULTS, str(path)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": root})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["alive", "2"]


@pytest.mark.parametrize("limit, code, match", [
    ({"timeout": 0.2}, "timeout", r"time limit of 0\.2 s exceeded"),
    ({"fuel": 50_000_000}, "fuel", "fuel limit of 50000000 exhausted")])
def test_a_time_or_fuel_limit_stops_every_thread(limit, code, match):
    with runtime.load(_gemm_model(FOREVER, pages=3), threads=2, instances=1,
                      **limit) as session:
        with pytest.raises(LimitExceeded, match=match) as err:
            session.run(X)
        assert err.value.code == code
        assert_idle()


def test_100_failing_calls_leave_no_worker_behind():
    model = _gemm_model(OUT_OF_BOUNDS, pages=2)
    gc.collect()  # NOTE: other tests' dropped sessions join their workers now, not below
    before = worker_threads()
    baseline = threading.active_count()
    with runtime.load(model, threads=2, instances=1) as session:
        for _ in range(100):
            with pytest.raises(Trap, match="out_of_bounds"):
                session.run(X)
        assert threading.active_count() <= baseline + 1  # the next instance's one worker
        assert_idle()
    assert not worker_threads() - before


def test_max_memory_caps_the_shared_memory():
    grow = """(block $full (loop $more
                (br_if $full (i32.eq (memory.grow (i32.const 1)) (i32.const -1)))
                (br $more)))
              (f32.store (i32.const 1024) (f32.convert_i32_u (memory.size))) (i32.const 0)"""
    session = runtime.load(wat_model(grow), max_memory="4MiB", threads=2, instances=1)
    assert session.run(X)["y"][0, 0] * 65536 == 4 << 20


def test_a_model_needing_more_than_max_memory_is_refused_with_threads():
    meta = metadata(memory_bytes=8 << 20)
    with pytest.raises(LimitExceeded, match=r"needs 8388608 bytes of memory, over the limit"):
        runtime.load(with_section(read_bytes_of(wat_model()), meta), max_memory="4MiB",
                     threads=2)


def read_bytes_of(model: bytes) -> bytes:
    """``model`` without its metadata section (``wat_model`` appends one)."""
    return model[:len(model) - len(with_section(b"", METADATA))]
