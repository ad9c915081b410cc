"""A model's weights, once written into an instance's memory, are advised for transparent
huge pages (``madvise(MADV_HUGEPAGE)``, collapsed later by khugepaged), and nothing else is."""

import sys
from pathlib import Path

import numpy as np
import pytest

import modelc
import nn
import runtime

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux")
    or not Path("/sys/kernel/mm/transparent_hugepage/enabled").exists(),
    reason="transparent huge pages are a Linux feature")


def advised_bytes() -> int:
    """Bytes of this process's mappings whose ``VmFlags`` carry ``hg`` (MADV_HUGEPAGE)."""
    total, size = 0, 0
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and ":" not in head:
            start, end = (int(part, 16) for part in head.split("-"))
            size = end - start
        elif head == "VmFlags:" and "hg" in line.split()[1:]:
            total += size
    return total


def test_written_weights_are_advised_and_the_outputs_are_unchanged(tmp_path):
    rng = np.random.default_rng(5)
    model = nn.Sequential(nn.Linear(1000, 3000), nn.ReLU(), nn.Linear(3000, 10)).eval()
    for param in model.parameters():
        param[...] = rng.standard_normal(param.shape).astype(np.float32) * 0.03
    x = rng.standard_normal((4, 1000)).astype(np.float32)
    path = tmp_path / "mlp.wasm"
    modelc.export(model, {"x": x}, path)
    weights = 4 * sum(p.size for p in model.parameters())
    before = advised_bytes()
    session = runtime.load(path, instances=1, threads=1)
    advised = advised_bytes() - before
    # the whole 2 MiB pages inside the 12 MB of weights, not the arena after them
    assert weights - (4 << 20) <= advised <= weights
    expected = model(x)
    np.testing.assert_allclose(session.run({"x": x})[session.outputs[0].name], expected,
                               rtol=1e-5, atol=1e-5)
