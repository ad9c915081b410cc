"""Probes of this process's threads for the threads tests."""

import threading
import time


def worker_threads() -> set[threading.Thread]:
    """The live threads of wasmnn's worker teams."""
    return {t for t in threading.enumerate() if t.name.startswith("wasmnn-worker")}


def assert_idle() -> None:
    """No thread of this process keeps a core busy (a spinning or stuck worker would)."""
    start_cpu, start = time.process_time(), time.perf_counter()
    time.sleep(0.5)
    assert time.process_time() - start_cpu < 0.25 * (time.perf_counter() - start)
