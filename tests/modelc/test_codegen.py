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
    assert {e.name for e in info.exports} == {"run", "memory"}


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
    assert meta["arena_bytes"] <= meta["activation_bytes"] == 16 * 4 * (12 + 16 + 5)


@pytest.mark.skipif(shutil.which("wasm-validate") is None, reason="wabt is not installed")
def test_wabt_validates_the_module(wasm, tmp_path):
    path = tmp_path / "model.wasm"
    path.write_bytes(wasm)
    subprocess.run(["wasm-validate", str(path)], check=True)


def test_export_writes_the_file(mlp, tmp_path):
    path = tmp_path / "m.wasm"
    wasm = modelc.export(mlp, (np.zeros((1, 12), np.float32),), path)
    assert path.read_bytes() == wasm


@pytest.mark.parametrize("model", ["model.txt", 42])
def test_export_of_something_not_a_model_is_named(model):
    with pytest.raises(TypeError, match=rf"expected an nn.Module, a Graph or a path to an "
                                        rf"\.onnx file, got {model!r}"):
        modelc.export(model, (np.zeros(2, np.float32),))
