"""Memory that follows the dims: each call lays out the arena for its dims and grows memory
to them, under ``max_memory``, before the model runs."""

import numpy as np
import pytest
from test_session import _meta, _with_metadata

import modelc
import nn
import runtime
from runtime import LimitExceeded, ModelFormatError

WIDTHS = (256, 512, 64)


@pytest.fixture(scope="module")
def wide():
    """An MLP whose live activations take 3 KB per row at most, batch in [1, 4096]."""
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Linear(WIDTHS[0], WIDTHS[1]), nn.ReLU(),
                          nn.Linear(WIDTHS[1], WIDTHS[2])).eval()
    for param in model.parameters():
        param[...] = rng.standard_normal(param.shape).astype(np.float32) * 0.05
    wasm = modelc.export(model, {"x": np.zeros((2, WIDTHS[0]), np.float32)},
                         dynamic={"x": {0: ("batch", 1, 4096)}})
    return model, wasm


def _x(batch: int) -> np.ndarray:
    return np.random.default_rng(batch).standard_normal((batch, WIDTHS[0])).astype(np.float32)


@pytest.mark.parametrize("kernels", ["auto", "host"])
def test_memory_grows_to_each_batch_and_results_match_eager(wide, kernels):
    model, wasm = wide
    # NOTE: one thread: this is about the plan and growth, not the intra-op split.
    with runtime.load(wasm, instances=1, kernels=kernels, threads=1) as session:
        for batch in (1, 300, 7, 1000, 2):
            got = session.run(_x(batch))["output0"]
            np.testing.assert_allclose(got, model(_x(batch)), rtol=1e-4, atol=1e-5)


def test_dims_over_max_memory_fail_before_running_naming_dims_and_bytes(wide):
    model, wasm = wide
    meta = _meta(wasm)
    assert meta["memory_bytes"] < 4 << 20 < meta["memory_bytes_max"]
    with runtime.load(wasm, max_memory="4MiB", instances=1) as session:
        np.testing.assert_allclose(session.run(_x(1))["output0"], model(_x(1)),
                                   rtol=1e-4, atol=1e-5)
        with pytest.raises(LimitExceeded, match=r"the dims \{'batch': 4096\} need \d+ bytes "
                                                r"of memory, over the limit of \d+ bytes") as err:
            session.run(_x(4096))
        need = int(str(err.value).split(" need ")[1].split()[0])
        assert 4096 * (WIDTHS[0] + WIDTHS[1]) * 4 <= need <= meta["memory_bytes_max"]
        np.testing.assert_allclose(session.run(_x(3))["output0"], model(_x(3)),
                                   rtol=1e-4, atol=1e-5)


def test_lying_layout_metadata_is_caught(wide):
    _, wasm = wide
    meta = _meta(wasm)
    moving = next(t for t in meta["inputs"] + meta["outputs"] if "offset_at" in t)
    del meta["layout"]
    with pytest.raises(ModelFormatError, match=r"offset_at = \d+ needs a 'layout' entry"):
        runtime.load(_with_metadata(wasm, meta))
    meta = _meta(wasm)
    meta["layout"]["entry"] = "nolayout"
    with pytest.raises(ModelFormatError, match="the model has no 'nolayout' export"):
        runtime.load(_with_metadata(wasm, meta))
    meta = _meta(wasm)
    for tensor in meta["inputs"] + meta["outputs"]:
        if tensor["name"] == moving["name"]:
            tensor["offset_at"] = meta["layout"]["need_at"]  # holds the memory size
    session = runtime.load(_with_metadata(wasm, meta))
    with pytest.raises(ModelFormatError, match=rf"puts tensor '{moving['name']}' at .* outside"):
        session.run(_x(100))  # 100 KB: more than the page rounding leaves above the need
