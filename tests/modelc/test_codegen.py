import json
import shutil
import subprocess

import numpy as np
import pytest

import modelc
from wasm_kernels import abi
from wasm_kernels.wasm import FuncType, MemoryType, read_module


@pytest.fixture
def wasm(mlp) -> bytes:
    return modelc.export(mlp, (np.zeros((2, 12), np.float32),),
                         dynamic={"input0": {0: ("batch", 1, 16)}})


def test_imports_are_memory_wasi_and_only_the_kernels_used(wasm):
    info = read_module(wasm)
    imports = {(i.module, i.name): i.type for i in info.imports}
    assert isinstance(imports.pop(("env", "memory")), MemoryType)
    assert imports.pop(("wasi_snapshot_preview1", "fd_write")) == FuncType(("i32",) * 4,
                                                                           ("i32",))
    assert set(imports) == {(abi.MODULE, "f32_linear_bias_relu"),
                            (abi.MODULE, "f32_linear_bias")}
    for (_, name), ty in imports.items():
        assert ty == FuncType(abi.BY_NAME[name].param_types, ())
    assert {e.name for e in info.exports} == {"run", "layout", "memory"}


def test_metadata_section_describes_the_interface(wasm, mlp):
    meta = json.loads(read_module(wasm).custom("wasmnn.model"))
    assert meta["format"] == 1
    assert meta["abi"] == {"module": abi.MODULE, "version": abi.VERSION}
    assert meta["dims"] == [{"name": "batch", "min": 1, "max": 16}]
    assert [(t["name"], t["shape"]) for t in meta["inputs"]] == [("input0", ["batch", 12])]
    assert [(t["name"], t["shape"]) for t in meta["outputs"]] == [("output0", ["batch", 5])]
    assert meta["ops"] == ["linear"]
    weights = sum(np.asarray(p).nbytes for p in mlp.parameters())
    assert meta["weights_bytes"] >= weights
    # the three activations, and each linear's scratch for its input's rows, packed
    assert meta["arena_bytes"] <= meta["activation_bytes"] == 16 * 4 * (12 + 16 + 5 + 12 + 16)


@pytest.mark.skipif(shutil.which("wasm-validate") is None, reason="wabt is not installed")
def test_wabt_validates_the_module(wasm, tmp_path):
    path = tmp_path / "model.wasm"
    path.write_bytes(wasm)
    subprocess.run(["wasm-validate", str(path)], check=True)


def test_export_writes_the_file(mlp, tmp_path):
    path = tmp_path / "m.wasm"
    wasm = modelc.export(mlp, (np.zeros((1, 12), np.float32),), path)
    assert path.read_bytes() == wasm


def _exp_model():  # type: ignore[no-untyped-def]
    import nn
    from nn import functional as F

    class Exp(nn.Module):
        def forward(self, x):  # type: ignore[no-untyped-def]
            return F.exp(x)

    return Exp()


def test_a_lowering_that_forgets_a_push_names_the_node_and_the_kernel(monkeypatch):
    from modelc import ops

    def forgets_the_count(node, ctx):  # type: ignore[no-untyped-def]
        ctx.address(node.inputs[0])
        ctx.address(node.output)
        ctx.call("f32_exp")

    monkeypatch.setattr(ops.get("exp"), "lower", forgets_the_count)
    with pytest.raises(modelc.CompileError,
                       match=r"^while lowering %exp_\d+ = exp\(%input0\)(.|\n)*: call 0 "
                             r"\(f32_exp\): expected \[i32 i32 i32\] on the stack, "
                             r"found \[i32 i32\]$"):
        modelc.export(_exp_model(), (np.zeros(3, np.float32),))


def test_a_lowering_that_pushes_too_much_names_the_node(monkeypatch):
    from modelc import ops

    lower = ops.get("exp").lower

    def pushes_one_more(node, ctx):  # type: ignore[no-untyped-def]
        ctx.push(7)
        lower(node, ctx)

    monkeypatch.setattr(ops.get("exp"), "lower", pushes_one_more)
    with pytest.raises(modelc.CompileError,
                       match=r"^while lowering %exp_\d+ = exp\(%input0\)(.|\n)*: the lowering "
                             r"leaves \[i32\] on the stack after its kernel calls$"):
        modelc.export(_exp_model(), (np.zeros(3, np.float32),))


def test_a_bad_embedding_id_traps_in_the_named_kernel():
    import nn
    import runtime
    from nn import functional as F

    class Embed(nn.Module):
        def forward(self, ids):  # type: ignore[no-untyped-def]
            return F.embedding(ids, np.ones((11, 6), np.float32))

    wasm = modelc.export(Embed(), (np.zeros((1, 2), np.int64),))
    with runtime.load(wasm, kernels="simd128") as session, \
            pytest.raises(runtime.Trap, match=rf"^\w+ in {abi.MODULE}!f32_gather: ") as info:
        session.run({"input0": np.array([[1, 11]], np.int64)})
    assert [frame.split("+")[0] for frame in info.value.frames] == [
        f"{abi.MODULE}!f32_gather", "wasmnn_model!run"]


@pytest.mark.parametrize("model", ["model.txt", 42])
def test_export_of_something_not_a_model_is_named(model):
    with pytest.raises(TypeError, match=rf"expected an nn.Module, a Graph or a path to an "
                                        rf"\.onnx file, got {model!r}"):
        modelc.export(model, (np.zeros(2, np.float32),))


def test_a_weight_used_at_every_step_is_placed_once():
    """An exporter's unrolled recurrence: one (64, 64) weight in five linears is one copy in
    the module (the packed bytes are equal), and the result is eager's."""
    import nn
    from nn import functional as F

    weight = np.random.default_rng(3).standard_normal((64, 64)).astype(np.float32) / 8

    class Unrolled(nn.Module):
        def forward(self, x):  # type: ignore[no-untyped-def]
            for _ in range(5):
                x = F.tanh(F.linear(x, weight.copy()))
            return x

    x = np.random.default_rng(4).standard_normal((2, 64)).astype(np.float32)
    wasm = modelc.export(Unrolled(), (x,))
    assert weight.nbytes < len(wasm) < 2 * weight.nbytes
    runtime = pytest.importorskip("runtime")
    with runtime.load(wasm) as session:
        np.testing.assert_allclose(session.run(x)["output0"], Unrolled()(x), rtol=1e-5,
                                   atol=1e-6)
