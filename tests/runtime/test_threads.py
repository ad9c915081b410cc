"""Intra-op threads (``runtime.load(threads=N)``): every parallel kernel equals one thread bit
for bit on every wasm provider, races included; sessions join their workers. The sandbox with
threads: test_threads_sandbox.py."""

import gc
import os
import sys
import threading

import numpy as np
import pytest
from thread_probes import worker_threads

import modelc
import nn
import runtime
import wasm_kernels
from runtime import threads as intra
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


def _exported_image_model(module: type[nn.Module], seed: int, shape: tuple[int, ...],
                          **export: bool) -> tuple[nn.Module, bytes, dict[str, np.ndarray]]:
    """``module`` seeded with ``seed``, exported for one random image of ``shape``."""
    np.random.seed(seed)
    model = module().eval()
    inputs = {"x": np.random.default_rng(seed).standard_normal(shape).astype(np.float32)}
    return model, modelc.export(model, inputs, **export), inputs


@pytest.fixture(scope="module")
def depthwise():
    return _exported_image_model(Depthwise, 5, (1, 37, 48, 50))


@pytest.fixture(scope="module")
def grouped():
    return _exported_image_model(Grouped, 6, (1, 128, 9, 11))


@pytest.fixture(scope="module")
def convs():
    # the conv kernels, not Winograd's transforms
    return _exported_image_model(Convs, 4, (1, 8, 30, 31), winograd=False)


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
    for thread in worker_threads():
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
            if abi.BY_NAME[n].op in ("conv2d", "conv2d_gemm", "conv2d_im2col")} >= {
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


def test_a_session_dropped_without_close_joins_its_workers(block):
    _, wasm, inputs = block
    before = worker_threads()
    session = runtime.load(wasm, threads=2, instances=1)
    session.run(inputs)
    mine = worker_threads() - before
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


def test_closing_the_session_joins_its_workers(block):
    _, wasm, inputs = block
    before = worker_threads()
    session = runtime.load(wasm, threads=3, instances=2)
    session.run(inputs)
    mine = worker_threads() - before
    assert len(mine) == 2
    session.close()
    assert not any(t.is_alive() for t in mine)


def test_standalone_exports_stay_single_threaded():
    model = nn.Sequential(nn.Linear(64, 256), nn.GELU()).eval()
    wasm = modelc.export(model, (np.zeros((128, 64), np.float32),), standalone=True)
    info = read_module(wasm)
    assert not any(m.shared for m in info.memories)
    assert not any(getattr(i.type, "shared", False) for i in info.imports)
    text = module_text(wasm)
    assert "f32_linear" in text and "atomic" not in text and "shared" not in text
