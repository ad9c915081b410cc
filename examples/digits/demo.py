"""The main job: compile a trained digit classifier to WebAssembly and run it sandboxed.

    make demo        (or: .venv/bin/python examples/digits/demo.py)

It exports the shipped model (weights trained once by ``train.py``) with a symbolic batch
dimension, checks the module with wabt's ``wasm-validate`` when present, loads it in a
sandbox capped at 64 MiB and 10 s per call, classifies scikit-learn's digits test split,
and reports accuracy, agreement with eager ``nn`` execution, size and latency.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import modelc  # noqa: E402
import runtime  # noqa: E402
from model import load_split, load_trained  # noqa: E402

OUT = Path("build") / "digits.wasm"


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def main() -> int:
    model = load_trained()
    _, _, x_test, y_test = load_split()
    OUT.parent.mkdir(exist_ok=True)
    start = time.perf_counter()
    wasm = modelc.export(model, {"pixels": x_test[:1]}, OUT,
                         dynamic={"pixels": {0: ("batch", 1, 1024)}})
    export_ms = 1e3 * (time.perf_counter() - start)
    print(f"exported {OUT}: {len(wasm):,} bytes in {export_ms:.0f} ms")
    if shutil.which("wasm-validate"):
        subprocess.run(["wasm-validate", str(OUT)], check=True)
        print("wasm-validate: OK")

    start = time.perf_counter()
    session = runtime.load(OUT, max_memory="64MiB", timeout=10.0)
    logits = session.run({"pixels": x_test})["output0"]
    cold_ms = 1e3 * (time.perf_counter() - start)
    eager = model(x_test)

    predicted = logits.argmax(axis=1)
    accuracy = float((predicted == y_test).mean())
    agreement = float((predicted == eager.argmax(axis=1)).mean())
    rel_error = float(np.abs(logits - eager).max() / np.abs(eager).max())
    one = x_test[:1]
    batch_ms = median_ms(lambda: session.run({"pixels": x_test}), 50)
    single_ms = median_ms(lambda: session.run({"pixels": one}), 200)
    eager_ms = median_ms(lambda: model(x_test), 50)

    print(f"model: {session.inputs[0]} -> {session.outputs[0]}; "
          f"sandbox: 64 MiB memory cap, 10 s per call, no host access")
    print(f"test images: {len(x_test)} (scikit-learn digits, 25% held out)")
    print(f"accuracy in WebAssembly: {accuracy:.4f}")
    print(f"agreement with eager nn: {agreement:.4f} of predictions identical; "
          f"max relative logit difference {rel_error:.2e}")
    print(f"cold start (load + first run of {len(x_test)}): {cold_ms:.1f} ms")
    print(f"latency, median: batch of {len(x_test)} {batch_ms:.3f} ms "
          f"({1e3 * batch_ms / len(x_test):.2f} us/image; eager numpy {eager_ms:.3f} ms), "
          f"batch of 1 {single_ms:.3f} ms")
    print(f"try the CLI: .venv/bin/wasmnn inspect {OUT}")
    return 0 if agreement == 1.0 and rel_error < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
