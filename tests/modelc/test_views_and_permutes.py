import numpy as np
import pytest

import modelc
import nn
from modelc.passes import compose_permutes, infer_shapes, optimize
from nn import functional as F


class Heads(nn.Module):
    def forward(self, x):
        b, t, _ = x.shape
        h = F.permute(F.reshape(x, (b, t, 2, 4)), (0, 2, 1, 3))  # (B, 2, T, 4)
        kt = F.permute(h, (0, 1, 3, 2))                          # (B, 2, 4, T)
        back = F.permute(F.permute(kt, (0, 1, 3, 2)), (0, 2, 1, 3))  # (B, T, 2, 4)
        return F.reshape(back, (b, t, 8)) + 1.0, kt


def _graph():
    return modelc.trace(Heads(), (np.zeros((2, 3, 8), np.float32),),
                        dynamic={"input0": {0: ("batch", 1, 4), 1: ("seq", 1, 5)}})


def test_permute_chains_compose_and_identities_vanish():
    graph = compose_permutes(infer_shapes(_graph()))
    graph.verify()
    permutes = [n.attrs["dims"] for n in graph.nodes if n.op == "permute"]
    # Four permutes become two: kt in one copy from x's view, and `back` in one copy from kt
    # (kt is also an output, so the chain cannot reach past it).
    assert permutes == [(0, 2, 3, 1), (0, 3, 1, 2)]


def test_reshape_is_a_view_of_its_input_and_numbers_hold():
    graph = optimize(_graph())
    arena = graph.meta["arena"]
    for node in graph.nodes:
        if node.op == "reshape":
            assert arena[id(node.output)] == arena[id(node.inputs[0])]
    x = np.random.default_rng(0).standard_normal((3, 5, 8)).astype(np.float32)
    wasm = modelc.export(Heads(), (np.zeros((2, 3, 8), np.float32),),
                         dynamic={"input0": {0: ("batch", 1, 4), 1: ("seq", 1, 5)}})
    import runtime
    out = runtime.load(wasm).run(x)
    ref = Heads()(x)
    np.testing.assert_array_equal(out["output0"], ref[0])
    np.testing.assert_array_equal(out["output1"], ref[1])


class Positions(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(np.arange(40, dtype=np.float32).reshape(10, 4))

    def forward(self, x):
        seq = x.shape[1]
        return x + F.slice(self.table, 0, 0, seq), F.slice(x, 1, 0, 1)


def test_slices_up_to_and_within_a_symbolic_dim():
    import runtime
    example = (np.zeros((1, 3, 4), np.float32),)
    wasm = modelc.export(Positions(), example,
                         dynamic={"input0": {1: ("seq", 1, 10)}})
    for seq in (1, 10):
        x = np.random.default_rng(seq).standard_normal((1, seq, 4)).astype(np.float32)
        out = runtime.load(wasm).run(x)
        np.testing.assert_array_equal(out["output0"], Positions()(x)[0])
        np.testing.assert_array_equal(out["output1"], x[:, :1])
    with pytest.raises(modelc.CompileError, match="slice up to 'seq' \\(at most 11\\)"):
        modelc.export(Positions(), example, dynamic={"input0": {1: ("seq", 1, 11)}})
