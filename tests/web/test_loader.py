"""``wasmnn.js`` in headless Chromium: the same numbers as the Python runtime, bit for bit
(the simd128 kernels on both sides), and the same error messages."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from models import randomize, transformer_encoder

import modelc
import nn
import runtime

HARNESS = """<!doctype html><meta charset="utf-8"><script type="module">
import * as wasmnn from "./wasmnn.js";
window.wasmnn = wasmnn;
window.harnessReady = true;
</script>"""

# Runs in the page: load a model, run it on base64 feeds, return outputs (base64) or the
# error's name, message and code.
RUN = """async ([url, feeds]) => {
  const decode = (text, Type) => {
    const raw = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
    return new Type(raw.buffer);
  };
  const types = {float32: Float32Array, int64: BigInt64Array, int32: Int32Array};
  const encode = (array) => {
    const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
    let text = "";
    for (const b of bytes) text += String.fromCharCode(b);
    return btoa(text);
  };
  try {
    const model = await window.wasmnn.load(url);
    const given = {};
    for (const [name, {data, dtype, shape}] of Object.entries(feeds)) {
      given[name] = {data: decode(data, types[dtype]), shape};
    }
    const out = await model.run(given);
    const result = {};
    for (const [name, o] of Object.entries(out)) {
      result[name] = {data: encode(o.data), shape: o.shape, dtype: o.dtype};
    }
    return {outputs: result, inputs: model.inputs, outputMeta: model.outputs};
  } catch (error) {
    return {error: {name: error.name, message: error.message, code: error.code ?? null}};
  }
}"""


def _feeds(arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    return {name: {"data": base64.b64encode(np.ascontiguousarray(a).tobytes()).decode(),
                   "dtype": str(a.dtype), "shape": list(a.shape)} for name, a in arrays.items()}


def run_in_page(page: Any, url: str, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """Load ``url`` with wasmnn.js in ``page`` and run it; outputs come back as ndarrays."""
    result = page.evaluate(RUN, [url, _feeds(arrays)])
    for name, out in result.get("outputs", {}).items():
        raw = base64.b64decode(out["data"])
        result["outputs"][name] = np.frombuffer(raw, out["dtype"]).reshape(out["shape"])
    return result


class Embedding(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.table = nn.Embedding(10, 4)

    def forward(self, ids):
        return self.table(ids)


def load_trained_digits() -> Any:
    """The digits example's trained MLP (``examples/digits``)."""
    import sys

    sys.path.insert(0, str(Path(__file__).parents[2] / "examples" / "digits"))
    from model import load_trained

    return load_trained()


@pytest.fixture(scope="module")
def models(site: tuple[Path, str]) -> dict[str, tuple[bytes, Any]]:
    """Each test model exported twice: for the web (in the served folder) and for the
    Python runtime; with the example input used to export it."""
    root, _ = site
    (root / "harness.html").write_text(HARNESS)
    rng = np.random.default_rng(0)
    specs = {
        "digits": (load_trained_digits(), {"pixels": rng.random((5, 64), np.float32)},
                   {"pixels": {0: ("batch", 1, 16)}}),
        "transformer": (randomize(transformer_encoder(16, 2)).eval(),
                        {"tokens": rng.standard_normal((2, 7, 16)).astype(np.float32)},
                        {"tokens": {1: ("seq", 1, 12)}}),
        "embedding": (Embedding().eval(), {"ids": np.array([[1, 2, 3]], np.int64)}, None),
    }
    out = {}
    for name, (model, example, dynamic) in specs.items():
        modelc.export(model, example, root / f"{name}.wasm", dynamic=dynamic, target="web")
        out[name] = (modelc.export(model, example, dynamic=dynamic), example)
    return out


@pytest.fixture
def harness(page: Any, site: tuple[Path, str]) -> Any:
    page.goto(f"{site[1]}/harness.html")
    page.wait_for_function("window.harnessReady === true")
    return page


def python_run(wasm: bytes, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    with runtime.load(wasm, kernels="simd128") as session:
        return session.run(arrays)


@pytest.mark.parametrize("name, shapes", [("digits", [(5, 64), (1, 64), (16, 64)]),
                                          ("transformer", [(2, 7, 16), (2, 1, 16),
                                                           (2, 12, 16)])])
def test_outputs_are_bit_identical_to_the_python_runtime(harness, site, models, name, shapes):
    wasm, example = models[name]
    input_name = next(iter(example))
    rng = np.random.default_rng(1)
    for shape in shapes:
        x = {input_name: rng.standard_normal(shape).astype(np.float32)}
        got = run_in_page(harness, f"{site[1]}/{name}.wasm", x)
        assert "error" not in got, got
        want = python_run(wasm, x)
        assert got["outputs"].keys() == want.keys()
        for key in want:
            assert got["outputs"][key].shape == want[key].shape
            assert np.array_equal(got["outputs"][key], want[key]), (name, shape, key)


def test_inputs_and_outputs_describe_the_model(harness, site, models):
    wasm, example = models["transformer"]
    got = run_in_page(harness, f"{site[1]}/transformer.wasm", example)
    with runtime.load(wasm) as session:
        assert got["inputs"] == [{"name": t.name, "dtype": t.dtype, "shape": list(t.shape)}
                                 for t in session.inputs]
        assert got["outputMeta"] == [{"name": t.name, "dtype": t.dtype,
                                      "shape": list(t.shape)} for t in session.outputs]


def _python_error(wasm: bytes, arrays: dict[str, np.ndarray]) -> BaseException:
    with runtime.load(wasm) as session:
        with pytest.raises((TypeError, ValueError, runtime.Trap)) as info:
            session.run(arrays)
    return info.value


BAD_FEEDS = {
    "wrong name": ("digits", {"x": np.zeros((1, 64), np.float32)}),
    "wrong rank": ("digits", {"pixels": np.zeros((64,), np.float32)}),
    "wrong fixed axis": ("digits", {"pixels": np.zeros((2, 63), np.float32)}),
    "dim out of range": ("digits", {"pixels": np.zeros((17, 64), np.float32)}),
    "fixed axis of a sequence model": ("transformer", {"tokens": np.zeros((3, 7, 16), np.float32)}),
    "no safe conversion": ("embedding", {"ids": np.zeros((1, 3), np.float32)}),
}


@pytest.mark.parametrize("case", BAD_FEEDS)
def test_input_errors_match_the_python_runtime(harness, site, models, case):
    name, feeds = BAD_FEEDS[case]
    wasm, _ = models[name]
    got = run_in_page(harness, f"{site[1]}/{name}.wasm", feeds)
    want = _python_error(wasm, feeds)
    assert got["error"]["message"] == str(want)
    assert got["error"]["name"] == type(want).__name__


def test_a_trap_is_a_trap_error_with_the_python_code_and_the_model_recovers(harness, site,
                                                                             models):
    wasm, _ = models["embedding"]
    bad = {"ids": np.array([[1, 2, 99]], np.int64)}
    want = _python_error(wasm, bad)
    assert isinstance(want, runtime.Trap)
    script = """async ([url, bad, good]) => {
      const model = await window.wasmnn.load(url);
      let error = null;
      try { await model.run({ids: {data: BigInt64Array.from(bad.map(BigInt)), shape: [1, 3]}}); }
      catch (e) { error = {name: e.name, code: e.code, isError: e instanceof Error}; }
      const out = await model.run({ids: {data: BigInt64Array.from(good.map(BigInt)), shape: [1, 3]}});
      return {error, after: Array.from(out.output0.data)};
    }"""
    result = harness.evaluate(script, [f"{site[1]}/embedding.wasm", [1, 2, 99], [1, 2, 3]])
    assert result["error"] == {"name": "Trap", "code": want.code, "isError": True}
    good = python_run(wasm, {"ids": np.array([[1, 2, 3]], np.int64)})["output0"]
    assert np.array_equal(np.array(result["after"], np.float32).reshape(good.shape), good)


def test_a_linked_module_is_refused_with_a_clear_error(harness, site, models):
    root, url = site
    (root / "linked.wasm").write_bytes(models["digits"][0])
    got = run_in_page(harness, f"{url}/linked.wasm", {"pixels": np.zeros((1, 64), np.float32)})
    assert got["error"]["name"] == "ModelFormatError"
    assert "--target web" in got["error"]["message"]


def test_the_loader_runs_in_a_web_worker(harness, site, models):
    """The demo's worker (``examples/web/worker.js``) loads and runs the model off the main
    thread; the numbers are the Python runtime's."""
    root, url = site
    worker = Path(__file__).parents[2] / "examples" / "web" / "worker.js"
    (root / "worker.js").write_text(worker.read_text())
    x = np.random.default_rng(2).random((3, 64), np.float32)
    script = """async ([data]) => {
      const worker = new Worker("worker.js", {type: "module"});
      const reply = () => new Promise((resolve) => { worker.onmessage = (e) => resolve(e.data); });
      worker.postMessage({type: "load", url: "digits.wasm"});
      const loaded = await reply();
      worker.postMessage({type: "run", id: 7, feeds: {pixels: {data: Float32Array.from(data), shape: [3, 64]}}});
      const result = await reply();
      worker.terminate();
      return {loaded: loaded.type, id: result.id, type: result.type,
              data: Array.from(result.outputs.output0.data), shape: result.outputs.output0.shape};
    }"""
    got = harness.evaluate(script, [x.ravel().tolist()])
    want = python_run(models["digits"][0], {"pixels": x})["output0"]
    assert (got["loaded"], got["type"], got["id"]) == ("loaded", "result", 7)
    assert got["shape"] == list(want.shape)
    assert np.array_equal(np.array(got["data"], np.float32).reshape(want.shape), want)


def test_builds_keyed_by_isa_load_the_fastest_this_browser_runs(harness, site, models):
    """``load({relaxed, simd128})`` picks relaxed where the engine validates relaxed SIMD
    (this Chromium does), simd128 when only that is given; unknown keys are a TypeError."""
    root, url = site
    model = load_trained_digits()
    x = np.random.default_rng(3).random((2, 64), np.float32)
    modelc.export(model, {"pixels": x}, root / "digits-relaxed.wasm",
                  dynamic={"pixels": {0: ("batch", 1, 16)}}, target="web", isa="relaxed")
    script = """async ([builds, data]) => {
      const feeds = {pixels: {data: Float32Array.from(data), shape: [2, 64]}};
      const result = {relaxedSimd: window.wasmnn.relaxedSimd, picked: []};
      for (const choice of builds) {
        try {
          const model = await window.wasmnn.load(choice);
          const out = await model.run(feeds);
          result.picked.push({isa: model.isa, data: Array.from(out.output0.data)});
        } catch (e) { result.picked.push({error: e.name, message: e.message}); }
      }
      return result;
    }"""
    builds = [{"relaxed": "digits-relaxed.wasm", "simd128": "digits.wasm"},
              {"simd128": "digits.wasm"}, {"avx512": "digits.wasm"}]
    got = harness.evaluate(script, [builds, x.ravel().tolist()])
    assert got["relaxedSimd"] is True
    relaxed, simd128, unknown = got["picked"]
    assert (relaxed["isa"], simd128["isa"]) == ("relaxed", "simd128")
    want = model(x)
    for picked in (relaxed, simd128):
        np.testing.assert_allclose(np.array(picked["data"], np.float32).reshape(want.shape),
                                   want, rtol=1e-5, atol=1e-6)
    assert unknown["error"] == "TypeError"
    assert "expected builds keyed by ISA (relaxed, simd128, scalar), got keys ['avx512']" \
        in unknown["message"]


def test_int8_seven_bit_weights_in_the_relaxed_build_match_the_python_runtime(harness, site,
                                                                             models):
    """A dynamically quantized linear with 7-bit weights: the relaxed build's relaxed-dot
    tile (W + 64 as its 7-bit operand) gives Chromium's V8 the same bits as wasmtime."""
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "cases"))
    from executors import Lambda

    weight = np.random.default_rng(4).integers(-64, 64, (21, 37)).astype(np.int8)

    def linear(x: Any) -> Any:
        q, scale, zero = nn.functional.dynamic_quantize_linear(x)
        return nn.functional.qlinear(q, scale, zero, weight, np.array(0.01, np.float32),
                                     np.array(0, np.int8))

    x = np.random.default_rng(9).standard_normal((11, 37)).astype(np.float32) * 3
    graph = modelc.optimize(modelc.trace(Lambda(linear), (x,)))
    root, url = site
    modelc.export(graph, (x,), root / "seven.wasm", target="web", isa="relaxed")
    got = run_in_page(harness, f"{url}/seven.wasm", {"input0": x})
    assert "error" not in got, got
    with runtime.load(modelc.export(graph, (x,)), kernels="relaxed") as session:
        want = session.run({"input0": x})["output0"]
    np.testing.assert_array_equal(got["outputs"]["output0"], want)
    np.testing.assert_array_equal(want, modelc.interpret(graph, {"input0": x})["output0"])
