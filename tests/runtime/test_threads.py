"""Intra-op threads (``runtime.load(threads=N)``): every parallel kernel equals one thread bit
for bit on every wasm provider, races included; the sandbox holds with workers."""

import gc
import importlib
import os
import re
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from wat_models import METADATA, metadata, wat_model, with_section

import modelc
import nn
import runtime
import wasm_kernels
from runtime import threads as intra
from runtime.errors import LimitExceeded, Trap
from runtime.metadata import SECTION as METADATA_SECTION
from runtime.metadata import parse as parse_metadata
from wasm_kernels import abi, parallel
from wasm_kernels.wasm import read_module
from wasm_kernels.wasm.text import module_text

WASM_PROVIDERS = wasm_kernels.ISA_NAMES
ROUNDS = 25
MAX_ROUNDS_FOR_WORKER_TIME = 400


class Block(nn.Module):
    """Every kernel that splits, at sizes over their thresholds: linear (with bias, with a
    fused gelu), gemm, bmm and bmm with a bias, layer_norm, softmax, a unary op."""

    def __init__(self):
        super().__init__()
        self.up = nn.Linear(64, 256)
        self.down = nn.Linear(256, 64)
        self.norm = nn.LayerNorm(64)

    def forward(self, x, mask):
        h = nn.functional.gelu(self.up(x))  # (B, T, 256)
        y = self.norm(self.down(h) + x)  # (B, T, 64)
        scores = y @ y.transpose(0, 2, 1) + mask  # (B, T, T)
        attn = nn.functional.softmax(scores, dim=-1)
        flat = (attn @ y).reshape(-1, 64)  # (B * T, 64)
        return nn.functional.tanh(flat @ flat.T)  # (B * T, B * T)


class Convs(nn.Module):
    """conv2d over its threshold with one image: 42 output channels (10 blocks of 4 and 2
    single ones) with a fused relu, then one with a residual add; a depthwise conv over its
    42 planes; max and average pools over them; a stride-2 conv to 90 channels (22 blocks of
    4 and 2 single ones) on 8x8 pixels (8 panels)."""

    def __init__(self):
        super().__init__()
        self.first = nn.Conv2d(8, 42, 3, padding=1)
        self.second = nn.Conv2d(42, 42, 3, padding=1)
        self.depthwise = nn.Conv2d(42, 42, 3, padding=1, groups=42)
        self.deep = nn.Conv2d(42, 90, 3, stride=2, padding=1)

    def forward(self, x):
        h = nn.functional.relu(self.first(x))
        h = self.depthwise(self.second(h) + h)
        h = (nn.functional.max_pool2d(h, 3, 2, 1)
             + nn.functional.avg_pool2d(h, 3, 2, 1, count_include_pad=False))
        return self.deep(h)


class Grouped(nn.Module):
    """Grouped 1x1 convs over their threshold with one image: 4 groups of 99 pixels (24
    panels and a tail) with a fused relu, cut by pixels; then from
    ``parallel.GROUP_SPLIT_MIN`` groups cut by groups: 16 of 99 pixels, and 24 of 2 pixels
    (under a panel: each part packs them into the scratch of its first group)."""

    def __init__(self):
        super().__init__()
        self.wide = nn.Conv2d(128, 192, 1, groups=4)
        self.many = nn.Conv2d(192, 384, 1, groups=16)
        self.tall = nn.Conv2d(384, 24 * 352, 1, groups=24)

    def forward(self, x):
        h = self.many(nn.functional.relu(self.wide(x)))  # (1, 384, 9, 11)
        return self.tall(nn.functional.max_pool2d(h, (9, 4), (9, 4)))  # (1, 8448, 1, 2)


class Depthwise(nn.Module):
    """Depthwise convs over their threshold with one image, each through a tile path of its
    own: 3x3 with a fused relu6, 3x3 / 2 and 5x5 / 2 (interior rows read in place), 5x5 and
    7x7; two output channels per input channel stay on one thread."""

    def __init__(self):
        super().__init__()
        self.first = nn.Conv2d(37, 37, 3, padding=1, groups=37)
        self.halve = nn.Conv2d(37, 37, 3, stride=2, padding=1, groups=37)
        self.wide = nn.Conv2d(37, 37, 5, stride=2, padding=2, groups=37)
        self.five = nn.Conv2d(37, 37, 5, padding=2, groups=37)
        self.seven = nn.Conv2d(37, 37, 7, padding=3, groups=37)
        self.pair = nn.Conv2d(37, 74, 3, padding=1, groups=37)

    def forward(self, x):
        h = nn.functional.relu6(self.first(x))  # (1, 37, 48, 50)
        h = self.five(self.halve(h)) * self.wide(h)  # (1, 37, 24, 25)
        return self.pair(self.seven(h))  # (1, 74, 24, 25)


@pytest.fixture(scope="module")
def depthwise():
    np.random.seed(5)
    model = Depthwise().eval()
    inputs = {"x": np.random.default_rng(2).standard_normal((1, 37, 48, 50)).astype(np.float32)}
    return model, modelc.export(model, inputs), inputs


@pytest.fixture(scope="module")
def grouped():
    np.random.seed(6)
    model = Grouped().eval()
    inputs = {"x": np.random.default_rng(3).standard_normal((1, 128, 9, 11)).astype(np.float32)}
    return model, modelc.export(model, inputs), inputs


@pytest.fixture(scope="module")
def convs():
    np.random.seed(4)
    model = Convs().eval()
    inputs = {"x": np.random.default_rng(1).standard_normal((1, 8, 30, 31)).astype(np.float32)}
    with pytest.MonkeyPatch.context() as patch:  # the conv kernels, not Winograd's transforms
        patch.setattr(importlib.import_module("modelc.passes.winograd_convs"), "ENABLED", False)
        return model, modelc.export(model, inputs), inputs


@pytest.fixture(scope="module")
def block():
    np.random.seed(3)
    model = Block().eval()
    rng = np.random.default_rng(0)
    inputs = {"x": rng.standard_normal((6, 130, 64)).astype(np.float32),
              "mask": rng.standard_normal((6, 1, 130)).astype(np.float32)}
    return model, modelc.export(model, inputs), inputs


def _worker_ticks() -> int:
    """CPU ticks the process's live wasmnn worker threads have used (Linux)."""
    total = 0
    for thread in threading.enumerate():
        if not thread.name.startswith("wasmnn-worker"):
            continue
        with open(f"/proc/self/task/{thread.native_id}/stat") as stat:
            fields = stat.read().rsplit(") ", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total


def test_the_block_uses_every_kind_of_kernel_that_splits(block):
    imported = {i.name for i in read_module(block[1]).imports if i.module == abi.MODULE}
    split = imported & parallel.splits("relaxed").keys()
    families = {(abi.BY_NAME[n].family, abi.BY_NAME[n].op) for n in split}
    assert {("linear", "linear"), ("gemm", "gemm"), ("gemm", "bmm"), ("rowwise", "softmax"),
            ("rowwise", "layer_norm"), ("unary", "tanh")} <= families, sorted(imported)
    assert any(abi.BY_NAME[n].op == "bmm" and "bias" in abi.BY_NAME[n].params for n in split)


def test_the_convs_use_conv_kernels_that_split(convs):
    imported = {i.name for i in read_module(convs[1]).imports if i.module == abi.MODULE}
    split = imported & parallel.splits("relaxed").keys()
    assert {abi.BY_NAME[n].epilogue for n in split
            if abi.BY_NAME[n].op in ("conv2d", "conv2d_gemm")} >= {
        ("relu",), ("add",)}, sorted(imported)
    assert {"f32_max_pool2d", "f32_avg_pool2d", "f32_depthwise_conv2d"} <= split, sorted(
        imported)


def test_the_grouped_convs_use_conv_gemm_kernels_cut_by_groups(grouped):
    imported = {i.name for i in read_module(grouped[1]).imports if i.module == abi.MODULE}
    assert {"f32_conv2d_gemm", "f32_conv2d_gemm_relu"} <= imported, sorted(imported)
    table = parallel.splits("relaxed")
    assert table["f32_conv2d_gemm"].by_groups is not None
    assert table["f32_conv2d_gemm"].by_groups.count == "groups"


def test_the_depthwise_convs_use_depthwise_kernels_that_split(depthwise):
    imported = {i.name for i in read_module(depthwise[1]).imports if i.module == abi.MODULE}
    split = imported & parallel.splits("relaxed").keys()
    assert {"f32_depthwise_conv2d", "f32_depthwise_conv2d_relu6"} <= split, sorted(imported)


@pytest.mark.parametrize("kernels", WASM_PROVIDERS)
@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("case", ["block", "convs", "depthwise", "grouped"])
def test_parallel_kernels_equal_one_thread_bit_for_bit(case, kernels, threads, request):
    model, wasm, inputs = request.getfixturevalue(case)
    with runtime.load(wasm, kernels=kernels, threads=1, instances=1) as one:
        want = one.run(inputs)["output0"]
    np.testing.assert_allclose(want, model(**inputs), rtol=1e-4, atol=1e-4)
    with runtime.load(wasm, kernels=kernels, threads=threads, instances=1) as many:
        assert many.threads == threads
        before = _worker_ticks() if sys.platform == "linux" else None
        for _ in range(ROUNDS):
            np.testing.assert_array_equal(many.run(inputs)["output0"], want)
        if before is not None:
            # The workers did compute parts. Ticks are 10 ms and parts are taken by whoever
            # is free, so on a busy machine the caller may take most of them: run on, up to
            # a bound, until the workers' time shows.
            for _ in range(MAX_ROUNDS_FOR_WORKER_TIME):
                if _worker_ticks() > before:
                    break
                np.testing.assert_array_equal(many.run(inputs)["output0"], want)
            assert _worker_ticks() > before


def test_memory_grown_by_a_call_is_grown_for_the_workers_too():
    """A larger input grows the memory in the call (the arena follows the dims). The stores
    share the bytes, but each keeps its own size, which ``memory.copy`` and ``memory.fill``
    check (the conv gemm's padding): each worker grows its own memory to the caller's before
    a job (``runtime.host_memory``)."""
    np.random.seed(5)
    model = nn.Sequential(nn.Linear(64, 256), nn.Tanh()).eval()
    wasm = modelc.export(model, (np.zeros((8, 64), np.float32),),
                         dynamic={"input0": {0: ("n", 1, 4096)}})
    rng = np.random.default_rng(2)
    with runtime.load(wasm, threads=1, instances=1) as one, \
            runtime.load(wasm, threads=3, instances=1) as three:
        instance = three._pool._idle[0]
        team = instance._team
        assert team is not None
        start = instance.memory_size()
        for rows in (64, 4096, 64):
            x = rng.standard_normal((rows, 64)).astype(np.float32)
            np.testing.assert_array_equal(three.run(x)["output0"], one.run(x)["output0"])
        assert instance.memory_size() > start

        def sizes() -> list[int]:
            return [w.memory.data_len(w.compartment.store) for w in team._workers]

        # NOTE: a worker grows when it wakes for a job; on a busy machine the caller may take
        # every part of a call before it wakes, so run on, up to a bound
        for _ in range(MAX_ROUNDS_FOR_WORKER_TIME):
            if sizes() == [instance.memory_size()] * 2:
                break
            three.run(x)
        assert sizes() == [instance.memory_size()] * 2


def test_workers_entering_wasm_per_call_under_limits_stay_exact(block):
    """With a limit the workers enter wasm for each call (their stores re-armed)."""
    _, wasm, inputs = block
    with runtime.load(wasm, threads=1, instances=1) as one:
        want = one.run(inputs)["output0"]
    with runtime.load(wasm, threads=2, instances=1, timeout=600, fuel=1 << 60) as limited:
        for _ in range(5):
            np.testing.assert_array_equal(limited.run(inputs)["output0"], want)


def _workers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("wasmnn-worker")}


def test_a_session_dropped_without_close_joins_its_workers(block):
    _, wasm, inputs = block
    before = _workers()
    session = runtime.load(wasm, threads=2, instances=1)
    session.run(inputs)
    mine = _workers() - before
    assert len(mine) == 1
    del session
    gc.collect()
    assert not any(t.is_alive() for t in mine)


def test_concurrent_calls_on_threaded_instances_stay_exact(block):
    """Several calls at once, each on its own threaded instance: more threads than cores,
    so parts interleave in every order."""
    _, wasm, inputs = block
    with runtime.load(wasm, threads=1, instances=1) as one:
        want = one.run(inputs)["output0"]
    failures: list[str] = []
    with runtime.load(wasm, threads=3, instances=3) as session:
        def hammer() -> None:
            for _ in range(10):
                if not np.array_equal(session.run(inputs)["output0"], want):
                    failures.append("mismatch")

        callers = [threading.Thread(target=hammer) for _ in range(3)]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join()
    assert not failures


def test_auto_by_default_is_the_cores_the_process_may_use_for_large_models_only(
        mlp_wasm, monkeypatch):
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert intra.available_cores() == min(cores, intra.MAX_THREADS)
    weights = parse_metadata(read_module(mlp_wasm).custom(METADATA_SECTION)).weights_bytes
    assert 0 < weights < parallel.AUTO_WEIGHTS
    with runtime.load(mlp_wasm) as session, runtime.load(mlp_wasm, threads="auto") as auto:
        assert session.threads == auto.threads == 1
    monkeypatch.setattr(parallel, "AUTO_WEIGHTS", weights)
    with runtime.load(mlp_wasm) as session:
        assert session.threads == intra.available_cores()
    with runtime.load(mlp_wasm, threads=1) as session:
        assert session.threads == 1
    with runtime.load(mlp_wasm, kernels="host", threads=4) as session:
        assert session.threads == 1  # numpy kernels run on the calling thread


@pytest.mark.parametrize("threads, error, match", [
    (0, ValueError, r"threads must be between 1 and 16, got 0"),
    (17, ValueError, r"threads must be between 1 and 16, got 17"),
    (2.0, TypeError, r"threads must be an integer or 'auto', got 2\.0"),
    (True, TypeError, r"threads must be an integer or 'auto', got True"),
    ("all", TypeError, r"threads must be an integer or 'auto', got 'all'"),
])
def test_bad_thread_counts_are_refused(mlp_wasm, threads, error, match):
    with pytest.raises(error, match=match):
        runtime.load(mlp_wasm, threads=threads)


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
        _assert_idle()


def _assert_idle() -> None:
    """No thread of this process keeps a core busy (a spinning or stuck worker would)."""
    start_cpu, start = time.process_time(), time.perf_counter()
    time.sleep(0.5)
    assert time.process_time() - start_cpu < 0.25 * (time.perf_counter() - start)


def test_100_failing_calls_leave_no_worker_behind():
    model = _gemm_model(OUT_OF_BOUNDS, pages=2)
    gc.collect()  # NOTE: other tests' dropped sessions join their workers now, not below
    before = _workers()
    baseline = threading.active_count()
    with runtime.load(model, threads=2, instances=1) as session:
        for _ in range(100):
            with pytest.raises(Trap, match="out_of_bounds"):
                session.run(X)
        assert threading.active_count() <= baseline + 1  # the next instance's one worker
        _assert_idle()
    assert not _workers() - before


def test_closing_the_session_joins_its_workers(block):
    _, wasm, inputs = block
    before = _workers()
    session = runtime.load(wasm, threads=3, instances=2)
    session.run(inputs)
    mine = _workers() - before
    assert len(mine) == 2
    session.close()
    assert not any(t.is_alive() for t in mine)


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


def test_standalone_exports_stay_single_threaded():
    model = nn.Sequential(nn.Linear(64, 256), nn.GELU()).eval()
    wasm = modelc.export(model, (np.zeros((128, 64), np.float32),), standalone=True)
    info = read_module(wasm)
    assert not any(m.shared for m in info.memories)
    assert not any(getattr(i.type, "shared", False) for i in info.imports)
    text = module_text(wasm)
    assert "f32_linear" in text and "atomic" not in text and "shared" not in text
