import json
import threading

import numpy as np
import pytest

import runtime
from runtime import LinkError, ModelFormatError, Trap
from wasm_kernels import abi
from wasm_kernels.wasm import ModuleBuilder
from wasm_kernels.wasm.encode import name as encode_name
from wasm_kernels.wasm.encode import uleb


def _with_metadata(wasm: bytes, meta: dict) -> bytes:
    """``wasm`` with its metadata section replaced (codegen writes custom sections first)."""
    assert wasm[8] == 0
    size_start = 9
    size, shift, pos = 0, 0, size_start
    while True:
        byte = wasm[pos]
        size |= (byte & 0x7F) << shift
        pos += 1
        shift += 7
        if not byte & 0x80:
            break
    payload = encode_name("wasmnn.model") + json.dumps(meta).encode()
    return wasm[:8] + b"\x00" + uleb(len(payload)) + payload + wasm[pos + size:]


def _meta(wasm: bytes) -> dict:
    from wasm_kernels.wasm import read_module
    return json.loads(read_module(wasm).custom("wasmnn.model"))


def test_describes_inputs_and_outputs(mlp_wasm):
    session = runtime.load(mlp_wasm)
    assert [(t.name, t.dtype, t.shape) for t in session.inputs] == [("x", "float32",
                                                                      ("batch", 6))]
    assert [(t.name, t.shape) for t in session.outputs] == [("output0", ("batch", 3))]


def test_runs_from_a_path_and_accepts_dict_or_array(mlp_wasm, mlp_model, tmp_path):
    path = tmp_path / "m.wasm"
    path.write_bytes(mlp_wasm)
    x = np.random.default_rng(0).standard_normal((5, 6)).astype(np.float32)
    with runtime.load(path) as session:
        a = session.run({"x": x})["output0"]
        b = session.run(x)["output0"]
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, mlp_model(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("inputs, error, message", [
    ({}, ValueError, r"missing \['x'\], unexpected \[\]"),
    ({"x": np.zeros((1, 6), np.float32), "y": np.zeros(1)}, ValueError, r"unexpected \['y'\]"),
    ({"x": [[0.0] * 6]}, TypeError, "input 'x': expected an ndarray, got list"),
    ({"x": np.zeros((2, 6), np.complex64)}, TypeError, "expected dtype float32, got complex64"),
    ({"x": np.zeros(6, np.float32)}, ValueError, r"expected rank 2 shape \['batch', 6\]"),
    ({"x": np.zeros((2, 5), np.float32)}, ValueError, "axis 1 must be 6, got 5"),
    ({"x": np.zeros((9, 6), np.float32)}, ValueError, r"axis 0 \('batch'\) is 9, outside .*\[1, 8\]"),
    ({"x": np.zeros((0, 6), np.float32)}, ValueError, r"is 0, outside"),
    ("text", TypeError, "expected a dict of ndarrays or one ndarray, got str"),
])
def test_bad_inputs_name_the_input_and_what_was_expected(mlp_wasm, inputs, error, message):
    session = runtime.load(mlp_wasm)
    with pytest.raises(error, match=message):
        session.run(inputs)
    assert session.run(np.ones((1, 6), np.float32))["output0"].shape == (1, 3)


def test_safe_dtype_conversion_warns_and_works(mlp_wasm, mlp_model):
    x = np.random.default_rng(1).standard_normal((3, 6))
    with pytest.warns(UserWarning, match="converting float64 to float32"):
        got = runtime.load(mlp_wasm).run(x)["output0"]
    np.testing.assert_allclose(got, mlp_model(x.astype(np.float32)), rtol=1e-5, atol=1e-6)


def test_nan_and_inf_inputs_flow_through(mlp_wasm):
    x = np.full((2, 6), np.nan, np.float32)
    x[1] = np.inf
    out = runtime.load(mlp_wasm).run(x)["output0"]
    assert np.isnan(out[0]).all()


@pytest.mark.parametrize("data, message", [
    (b"", "missing the '\\\\0asm' magic"),
    (b"garbage bytes that are not wasm", "missing the '\\\\0asm' magic"),
    (b"\0asm\x02\0\0\0", "unsupported WebAssembly version"),
])
def test_not_wasm_is_a_format_error(data, message):
    with pytest.raises(ModelFormatError, match=message):
        runtime.load(data)


def test_truncated_model_is_a_format_error(mlp_wasm):
    for cut in (9, len(mlp_wasm) // 2, len(mlp_wasm) - 1):
        with pytest.raises(ModelFormatError):
            runtime.load(mlp_wasm[:cut])


def test_plain_wasm_module_is_not_a_model():
    with pytest.raises(ModelFormatError, match="not a wasmnn model: no 'wasmnn.model'"):
        runtime.load(ModuleBuilder().encode())


def test_missing_file_is_named():
    with pytest.raises(FileNotFoundError, match="model file 'nope.wasm' does not exist"):
        runtime.load("nope.wasm")


def test_lying_metadata_is_caught_before_running(mlp_wasm):
    meta = _meta(mlp_wasm)
    meta["outputs"][0]["offset"] = meta["memory_bytes_max"] - 4
    with pytest.raises(ModelFormatError, match="tensor 'output0' spans bytes"):
        runtime.load(_with_metadata(mlp_wasm, meta))
    meta = _meta(mlp_wasm)
    meta["inputs"][0]["shape"] = ["nodim", 6]
    with pytest.raises(ModelFormatError, match=r"shape entry 'nodim'; expected a size or one of"):
        runtime.load(_with_metadata(mlp_wasm, meta))
    meta = _meta(mlp_wasm)
    meta["format"] = 99
    with pytest.raises(ModelFormatError, match="format 99 is not supported"):
        runtime.load(_with_metadata(mlp_wasm, meta))


def test_model_checks_its_own_dims_when_the_host_does_not(mlp_wasm):
    meta = _meta(mlp_wasm)
    meta["dims"][0]["max"] = 100  # the host now lets batch=20 through; the module refuses
    meta["memory_bytes"] = 1 << 20
    session = runtime.load(_with_metadata(mlp_wasm, meta))
    with pytest.raises(Trap, match=r"rejected its inputs.*dim 'batch' must be in \[1, 8\]"):
        session.run(np.zeros((20, 6), np.float32))


def test_other_kernel_abi_is_refused(mlp_wasm):
    meta = _meta(mlp_wasm)
    meta["abi"]["module"] = "wasmnn_kernels_v99"
    with pytest.raises(ModelFormatError, match="imports kernels from 'wasmnn_kernels_v99'"):
        runtime.load(_with_metadata(mlp_wasm, meta))


def test_memory_cap_below_model_needs_is_a_limit(mlp_wasm):
    with pytest.raises(runtime.LimitExceeded, match="needs .* bytes of memory, over the limit"):
        runtime.load(mlp_wasm, max_memory=1024)


def test_bad_limit_arguments():
    with pytest.raises(ValueError, match="invalid size 'lots'"):
        runtime.load(b"", max_memory="lots")
    with pytest.raises(ValueError, match="timeout must be more than 0"):
        runtime.load(b"", timeout=-1)
    with pytest.raises(ValueError, match="unknown kernels 'gpu'"):
        runtime.Session(b"", runtime.ResourceLimits(), kernels="gpu")


def test_closed_session_refuses_to_run(mlp_wasm):
    session = runtime.load(mlp_wasm)
    session.close()
    with pytest.raises(RuntimeError, match="the session is closed"):
        session.run(np.zeros((1, 6), np.float32))


def test_concurrent_runs_from_threads_give_correct_results(mlp_wasm, mlp_model):
    session = runtime.load(mlp_wasm)
    rng = np.random.default_rng(2)
    batches = [rng.standard_normal((b % 8 + 1, 6)).astype(np.float32) for b in range(24)]
    results: dict[int, np.ndarray] = {}

    def work(i: int) -> None:
        results[i] = session.run(batches[i])["output0"]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(batches))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, x in enumerate(batches):
        np.testing.assert_allclose(results[i], mlp_model(x), rtol=1e-5, atol=1e-6)


def test_unresolvable_imports_are_all_listed(mlp_wasm):
    from wasm_kernels.wasm import Code, FuncType, Limits, MemoryType
    builder = ModuleBuilder()
    builder.import_memory("env", "memory", MemoryType(Limits(1)))
    builder.import_func(abi.MODULE, "f32_nope", FuncType(("i32",), ()))
    builder.import_func(abi.MODULE, "f32_gemm", FuncType(("i32",), ()))
    builder.import_func("evil", "system", FuncType((), ()))
    builder.add_function(FuncType(("i32",), ("i32",)),
                         Code(("i32",), ("i32",)).emit("i32.const", 0), export="run")
    wasm = _with_metadata(b"\0asm\x01\0\0\0\x00\x01\x00" + builder.encode()[8:], _meta(mlp_wasm))
    with pytest.raises(LinkError, match=r"(?s)3 import\(s\).*f32_nope.*unknown import.*"
                                        r"f32_gemm: expected \(i32\) -> \(\), got \(i32, i32"
                                        r".*evil.system"):
        runtime.load(wasm)
