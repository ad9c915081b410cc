"""The integer kernels on threads (``runtime.load(threads=N)``): the ``qlinear`` and ``qconv``
rows split by rows of A, each part with its own scratch, and equal one thread bit for bit
on every wasm provider, full-range and 7-bit weights alike (the relaxed module's
relaxed-dot tile); one thread equals the graph interpreter (the integer reference)."""

import numpy as np
import pytest
from executors import Lambda

import modelc
import nn
import runtime
import wasm_kernels
from nn import functional as F
from runtime import threads as intra
from wasm_kernels import abi, parallel
from wasm_kernels.pack_quantized import QSPLIT_ROWS
from wasm_kernels.templates import qlinear
from wasm_kernels.wasm import read_module

ROUNDS = 25


class Mlp(nn.Module):
    """Two linears over 201 rows (not a multiple of the parts' row grain), k = 64 and 254
    (not a multiple of the 4 steps a widened row holds)."""

    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(64, 254)
        self.down = nn.Linear(254, 40)

    def forward(self, x: np.ndarray) -> np.ndarray:
        return self.down(nn.functional.relu(self.up(x)))


class Convs(nn.Module):
    """Two convs of one image: 930 then 240 output pixels, k = 27 and 216."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Conv2d(3, 24, 3, padding=1)
        self.second = nn.Conv2d(24, 40, 3, stride=2, padding=1)

    def forward(self, x: np.ndarray) -> np.ndarray:
        return self.second(nn.functional.relu(self.first(x)))


def _seven_bit(x: np.ndarray) -> np.ndarray:
    """A dynamically quantized linear with 7-bit weights (onnxruntime's ``reduce_range``),
    which the relaxed module multiplies with its relaxed-dot tile: 201 rows, k = 62, n = 90."""
    weight = np.random.default_rng(5).integers(-64, 64, (90, 62)).astype(np.int8)
    q, scale, zero = F.dynamic_quantize_linear(x)
    return F.qlinear(q, scale, zero, weight, np.array(0.01, np.float32), np.array(0, np.int8))


def _case(name: str) -> tuple[bytes, dict[str, np.ndarray], modelc.Graph]:
    np.random.seed(7)
    rng = np.random.default_rng(2)
    if name == "seven-bit":
        x = rng.standard_normal((3, 67, 62)).astype(np.float32)
        graph = modelc.optimize(modelc.trace(Lambda(_seven_bit), (x,)))
        return modelc.export(graph), {"input0": x}, graph
    if name.startswith("convs"):
        model = Convs().eval()
        shape: tuple[int, ...] = (1, 3, 30, 31)
    else:
        model = Mlp().eval()
        shape = (3, 67, 64)
    examples = [rng.standard_normal(shape).astype(np.float32) for _ in range(3)]
    mode = "dynamic" if name == "mlp-dynamic" else "per_tensor"
    weights = "per_channel_7bit" if name.endswith("7bit") else "per_channel"
    graph = modelc.quantize(model, examples, weights=weights, activations=mode)
    return modelc.export(graph), {"input0": examples[0]}, graph


@pytest.fixture(scope="module",
                params=["mlp-dynamic", "mlp-static", "convs", "convs-7bit", "seven-bit"])
def case(request: pytest.FixtureRequest) -> tuple[bytes, dict[str, np.ndarray], modelc.Graph]:
    return _case(request.param)


def test_the_integer_rows_split_at_multiples_of_their_tiles() -> None:
    for isa in wasm_kernels.ISA_NAMES:
        table = parallel.splits(isa)
        rows = [spec.name for spec in abi.KERNELS if spec.family == "qlinear"]
        assert set(rows) <= table.keys()
        for name in rows:
            assert table[name].grain == QSPLIT_ROWS
            assert QSPLIT_ROWS % qlinear.MR.get(isa, 1) == 0


def test_the_cases_call_integer_rows_that_split(case) -> None:
    wasm = case[0]
    imported = {i.name for i in read_module(wasm).imports if i.module == abi.MODULE}
    split = imported & parallel.splits("relaxed").keys()
    assert {abi.BY_NAME[n].family for n in split} >= {"qlinear"}, sorted(imported)


@pytest.mark.parametrize("kernels", wasm_kernels.ISA_NAMES)
@pytest.mark.parametrize("threads", [2, 3])
def test_integer_kernels_on_threads_equal_one_thread_bit_for_bit(case, kernels, threads):
    wasm, inputs, graph = case
    with runtime.load(wasm, kernels=kernels, threads=1, instances=1) as one:
        want = one.run(inputs)["output0"]
    np.testing.assert_array_equal(want, modelc.interpret(graph, inputs)["output0"])
    with runtime.load(wasm, kernels=kernels, threads=threads, instances=1) as many:
        assert many.threads == threads
        for _ in range(ROUNDS):
            np.testing.assert_array_equal(many.run(inputs)["output0"], want)


def test_a_model_with_integer_products_merges_at_speed_and_a_float_one_at_none(case) -> None:
    names = frozenset(i.name for i in read_module(case[0]).imports if i.module == abi.MODULE)
    assert intra.opt_level(names) == "speed"
    floats = frozenset(n for n in names if abi.BY_NAME[n].family not in intra.SPEED_FAMILIES)
    assert intra.opt_level(floats) == intra.OPT_LEVEL == "none"
