"""winograd_convs: a dense 3x3 stride-1 conv rewritten as Winograd F(2x2, 3x3)
(winograd_input, a 16-group 1x1 conv, winograd_output) equals torch's conv2d on every kernel
provider: even and odd outputs, padding 0 and 1, batch over 1, bias or none, fused
activations and a residual, on 1, 2 and 3 threads; convs it does not cover stay convs."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from executors import PROVIDERS, Lambda

import modelc
import runtime
from nn import functional as F

PASS = importlib.import_module("modelc.passes.winograd_convs")
RNG = np.random.default_rng(7)


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


W = _x(24, 16, 3, 3)
B = _x(24)

# name: (conv kwargs, input shape, bias, activation, residual)
CASES = {
    "even_pad1": ({"padding": 1}, (1, 16, 8, 10), True, None, False),
    "odd_pad1_batch_relu": ({"padding": 1}, (2, 16, 7, 9), True, "relu", False),
    "odd_pad0_silu": ({"padding": 0}, (1, 16, 9, 6), True, "silu", False),
    "even_pad0_batch_nobias": ({"padding": 0}, (3, 16, 6, 8), False, None, False),
    "same_residual_relu": ({"padding": "same"}, (1, 16, 5, 7), True, "relu", True),
    "asymmetric_pad": ({"padding": (0, 1)}, (2, 16, 6, 5), False, None, False),
    # rows of tiles wider than a register of tiles: interior groups and a partial last one
    "wide_pad1": ({"padding": 1}, (1, 16, 14, 30), True, None, False),
    "wide_odd_batch_residual_gelu": ({"padding": 1}, (2, 16, 11, 21), True, "gelu", True),
    "wide_pad0_relu6": ({"padding": 0}, (1, 16, 12, 19), False, "relu6", False),
    # a row's first group one column into the padding, loaded from column 0 and shifted (at
    # F(4x4) from 19 columns), interior groups after it, in tile rows over the padding too
    "wider_pad1_batch": ({"padding": 1}, (2, 16, 13, 45), True, None, False),
    "wider_pad2": ({"padding": 2}, (1, 16, 9, 44), True, "relu", False),
    "narrowest_shifted_pad1": ({"padding": 1}, (1, 16, 9, 19), False, None, False),
}


def _assert_close(got: np.ndarray, expected: np.ndarray, tile: int) -> None:
    """F(2x2, 3x3) within 1e-4 of torch; F(4x4, 3x3), whose transforms scale by up to 8 (and
    its weight's by 1/24), within 1e-4 relative and 2e-5 of the output's largest magnitude
    (the documented tolerance)."""
    atol = 1e-4 if tile == 2 else 2e-5 * float(np.abs(expected).max())
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=atol)


def _tile(graph) -> int:  # type: ignore[no-untyped-def]
    return next(n.attrs["tile"] for n in graph.nodes if n.op == "winograd_input")


def _model(kwargs: dict, bias: bool, activation: str | None, residual: bool) -> Lambda:
    weight = W[:16] if residual else W  # a residual of the input's own shape

    def forward(x: np.ndarray) -> np.ndarray:
        y = F.conv2d(x, weight, B[:len(weight)] if bias else None, **kwargs)
        if residual:
            y = y + x
        return getattr(F, activation)(y) if activation else y
    return Lambda(forward)


def _torch(torch, x, kwargs: dict, bias: bool, activation: str | None, residual: bool):  # type: ignore[no-untyped-def]
    t, weight = torch.from_numpy(x), torch.from_numpy(W[:16] if residual else W)
    y = torch.nn.functional.conv2d(t, weight, torch.from_numpy(B[:len(weight)]) if bias else None,
                                   **kwargs)
    if residual:
        y = y + t
    return getattr(torch.nn.functional, activation)(y) if activation else y


@pytest.fixture(scope="module", params=[(case, tile) for tile in (2, 4) for case in sorted(CASES)],
                ids=lambda p: f"{p[0]}-F{p[1]}")
def compiled(request):  # type: ignore[no-untyped-def]
    """(graph, wasm, input, case) of a case compiled with F(2x2, 3x3) or F(4x4, 3x3)."""
    case, tile = request.param
    kwargs, shape, bias, activation, residual = CASES[case]
    x = _x(*shape)
    patch = pytest.MonkeyPatch()
    patch.setattr(PASS, "MIN_CHANNELS", 16)
    patch.setattr(PASS, "tile", lambda oh, ow: tile)  # every shape at this tile
    try:
        graph = modelc.optimize(modelc.trace(_model(kwargs, bias, activation, residual), (x,)))
        wasm = modelc.export(_model(kwargs, bias, activation, residual), (x,))
    finally:
        patch.undo()
    return graph, wasm, x, CASES[case]


def test_the_conv_is_rewritten(compiled) -> None:  # type: ignore[no-untyped-def]
    graph = compiled[0]
    assert {"winograd_input", "winograd_output"} <= set(graph.ops())
    groups = (_tile(graph) + 2) ** 2
    assert all(n.attrs.get("groups") == groups for n in graph.nodes if n.op == "conv2d")


@pytest.mark.parametrize("kernels", PROVIDERS)
def test_winograd_matches_torch(compiled, kernels: str) -> None:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    graph, wasm, x, (kwargs, _, bias, activation, residual) = compiled
    with runtime.load(wasm, kernels=kernels) as session:
        got = session.run({"input0": x})["output0"]
    with torch.no_grad():
        expected = _torch(torch, x, kwargs, bias, activation, residual).numpy()
    _assert_close(got, expected, _tile(graph))


@pytest.mark.parametrize("kwargs,shape,weight", [
    ({"padding": 1, "stride": 2}, (1, 16, 8, 8), W),
    ({"padding": 1, "dilation": 2}, (1, 16, 8, 8), W),  # padding not the dilation
    ({"padding": 1}, (1, 8, 8, 8), W[:, :8]),  # too few input channels
    ({"padding": 1, "groups": 2}, (1, 32, 8, 8), W),
    ({"padding": 2}, (1, 16, 8, 8), _x(24, 16, 5, 5)),
])
def test_convs_it_does_not_cover_stay(kwargs: dict, shape: tuple, weight: np.ndarray,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PASS, "MIN_CHANNELS", 16)
    model = Lambda(lambda x: F.conv2d(x, weight, None, **kwargs))
    graph = modelc.optimize(modelc.trace(model, (_x(*shape),)))
    assert "winograd_input" not in graph.ops()


@pytest.mark.parametrize("threads", [2, 3])
def test_winograd_on_threads_matches_torch_and_one_thread(compiled, threads: int) -> None:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    graph, wasm, x, (kwargs, _, bias, activation, residual) = compiled
    with runtime.load(wasm, threads=threads) as session:
        got = session.run({"input0": x})["output0"]
    with runtime.load(wasm, threads=1) as session:
        one_thread = session.run({"input0": x})["output0"]
    with torch.no_grad():
        expected = _torch(torch, x, kwargs, bias, activation, residual).numpy()
    _assert_close(got, expected, _tile(graph))
    # the grouped product splits by pixels across threads: every element as on one thread
    np.testing.assert_array_equal(got, one_thread)


@pytest.mark.parametrize("tile", [2, 4])
def test_the_transforms_split_by_channel_bit_identically(tile: int,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Over the kernels' thresholds both transforms run in parts of channels: 1, 2 and 3
    threads give the same bits (odd sizes: partial groups of tiles in every part)."""
    torch = pytest.importorskip("torch")
    from wasm_kernels import parallel

    monkeypatch.setattr(PASS, "MIN_CHANNELS", 16)
    monkeypatch.setattr(PASS, "tile", lambda oh, ow: tile)
    weight, bias, x = _x(40, 36, 3, 3), _x(40), _x(2, 36, 23, 37)
    model = Lambda(lambda a: F.relu(F.conv2d(a, weight, bias, padding=1)))
    wasm = modelc.export(model, (x,))
    name = "winograd" if tile == 2 else "winograd4"
    kernels = {f"f32_{name}_input", f"f32_{name}_output_bias_relu"}
    assert kernels <= parallel.splits("relaxed").keys()
    assert all(name.encode() in wasm for name in kernels)
    got = []
    for threads in (1, 2, 3):
        with runtime.load(wasm, threads=threads) as session:
            got.append(session.run({"input0": x})["output0"])
    with torch.no_grad():
        expected = torch.relu(torch.nn.functional.conv2d(
            torch.from_numpy(x), torch.from_numpy(weight), torch.from_numpy(bias),
            padding=1)).numpy()
    _assert_close(got[0], expected, tile)
    for other in got[1:]:
        np.testing.assert_array_equal(other, got[0])


@pytest.mark.parametrize("via", ["python", "cli"])
def test_winograd_off_at_export_keeps_the_direct_conv(via: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``export(..., winograd=False)`` and ``wasmnn export --winograd off``: no transform is
    imported, and the result still equals the eager model."""
    from runtime.cli import main

    source = tmp_path / "net.py"
    source.write_text("import numpy as np\nimport nn\nfrom nn import functional as F\n"
                      "class Net(nn.Module):\n"
                      "    def forward(self, x):\n"
                      "        w = np.random.default_rng(0).standard_normal((32, 32, 3, 3))\n"
                      "        return F.conv2d(x, w.astype(np.float32), None, padding=1)\n"
                      "def make():\n"
                      "    return Net()\n")
    x = _x(1, 32, 9, 9)
    namespace: dict = {}
    exec(source.read_text(), namespace)
    expected = namespace["make"]()(x)
    on, off = tmp_path / "on.wasm", tmp_path / "off.wasm"
    for path, flag in ((on, "on"), (off, "off")):
        if via == "cli":
            assert main(["export", f"{source}:make", "-o", str(path), "--input",
                         "input0=1x32x9x9", "--winograd", flag]) == 0
        else:
            modelc.export(namespace["make"](), (x,), path, winograd=flag == "on")
    assert b"f32_winograd_input" in on.read_bytes()
    assert b"f32_winograd" not in off.read_bytes()
    for path in (on, off):
        with runtime.load(path.read_bytes()) as session:
            np.testing.assert_allclose(session.run({"input0": x})["output0"], expected,
                                       rtol=1e-4, atol=1e-4)
