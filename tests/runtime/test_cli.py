import json
import subprocess
import sys

import numpy as np
import pytest

from runtime.cli import main
from wasm_kernels import abi
from wasm_kernels.wasm import read_module


@pytest.fixture
def model_file(mlp_wasm, tmp_path):
    path = tmp_path / "mlp.wasm"
    path.write_bytes(mlp_wasm)
    return path


@pytest.fixture
def x_file(tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, np.random.default_rng(0).standard_normal((3, 6)).astype(np.float32))
    return path


def test_run_prints_a_summary(model_file, x_file, capsys, mlp_model):
    assert main(["run", str(model_file), "--input", f"x={x_file}"]) == 0
    out = capsys.readouterr().out
    assert "output0: float32[3, 3]" in out
    expected = mlp_model(np.load(x_file)).argmax(axis=1)
    assert f"argmax per row: {np.array2string(expected)}" in out


@pytest.mark.parametrize("threads", ["1", "2", "auto"])
def test_run_on_threads(model_file, x_file, capsys, mlp_model, threads):
    assert main(["run", str(model_file), "--input", f"x={x_file}", "--threads", threads,
                 "--json"]) == 0
    got = np.array(json.loads(capsys.readouterr().out)["outputs"]["output0"], np.float32)
    np.testing.assert_allclose(got, mlp_model(np.load(x_file)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("suffix", [".npz", ".npy", ".json"])
def test_run_writes_outputs(model_file, x_file, tmp_path, mlp_model, suffix, capsys):
    out = tmp_path / f"y{suffix}"
    assert main(["run", str(model_file), "-i", str(x_file), "-o", str(out)]) == 0
    if suffix == ".npz":
        got = np.load(out)["output0"]
    elif suffix == ".npy":
        got = np.load(out)
    else:
        got = np.array(json.loads(out.read_text())["output0"], np.float32)
    np.testing.assert_allclose(got, mlp_model(np.load(x_file)), rtol=1e-5, atol=1e-6)


def test_json_input_and_json_output(model_file, tmp_path, capsys, mlp_model):
    data = [[0.5] * 6, [-1.0] * 6]
    path = tmp_path / "x.json"
    path.write_text(json.dumps(data))
    assert main(["run", str(model_file), "--input", f"x={path}", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    np.testing.assert_allclose(result["outputs"]["output0"],
                               mlp_model(np.array(data, np.float32)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("args, code, message", [
    (["run", "missing.wasm", "-i", "x.npy"], 3, "does not exist"),
    (["run", "{model}", "-i", "x=missing.npy"], 3, "input file 'missing.npy' does not exist"),
    (["run", "{model}", "-i", "x={x}", "-i", "y={x}"], 7, r"unexpected \['y'\]"),
    (["run", "{model}"], 7, "no inputs given"),
    (["run", "{garbage}", "-i", "{x}"], 3, "malformed WebAssembly"),
    (["run", "{model}", "-i", "{x}", "--max-memory", "1KiB"], 6, "over the limit"),
    (["run", "{model}", "-i", "{x}", "--max-memory", "lots"], 7, "invalid size 'lots'"),
    (["run", "{model}", "-i", "{x}", "--threads", "0"], 7,
     "threads must be between 1 and 16, got 0"),
    (["inspect", "{garbage}"], 3, "is not valid WebAssembly"),
])
def test_errors_are_one_line_with_documented_exit_codes(args, code, message, model_file,
                                                         x_file, tmp_path, capsys):
    garbage = tmp_path / "garbage.wasm"
    garbage.write_bytes(b"\0asm\x01\0\0\0\x01\xff")
    args = [a.format(model=model_file, x=x_file, garbage=garbage) for a in args]
    assert main(args) == code
    err = capsys.readouterr().err
    assert err.startswith("wasmnn: error: ")
    assert "Traceback" not in err
    assert message in err or __import__("re").search(message, err)


def test_inspect_json_has_the_contract_keys(model_file, capsys):
    assert main(["inspect", "--json", str(model_file)]) == 0
    meta = json.loads(capsys.readouterr().out)
    assert {"inputs", "outputs", "ops", "arena_bytes", "abi", "imports", "exports"} <= set(meta)
    assert meta["inputs"][0]["shape"] == ["batch", 6]


def test_inspect_readable(model_file, capsys):
    assert main(["inspect", str(model_file)]) == 0
    out = capsys.readouterr().out
    assert "input x: float32[batch, 6]" in out and "dim batch: 1..8" in out
    meta = json.loads(read_module(model_file.read_bytes()).custom("wasmnn.model"))
    assert meta["memory_bytes"] < meta["memory_bytes_max"]
    assert (f"memory at the smallest dims (batch=1): {meta['memory_bytes']} bytes; at the "
            f"largest (batch=8): {meta['memory_bytes_max']} bytes") in out
    assert f"{abi.MODULE}.f32_linear_bias_relu" in out


@pytest.mark.skipif(__import__("shutil").which("wat2wasm") is None,
                    reason="wabt is not installed")
def test_inspect_wat_prints_a_module_wat2wasm_reads_back(model_file, tmp_path, capsys):
    assert main(["inspect", "--wat", str(model_file)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("(module $wasmnn_model\n")
    assert f'(import "{abi.MODULE}" "f32_linear_bias_relu" (func $f32_linear_bias_relu' in text
    assert '(export "run" (func ' in text
    wat = tmp_path / "mlp.wat"
    wat.write_text(text)
    subprocess.run(["wat2wasm", str(wat), "-o", str(tmp_path / "back.wasm")], check=True)


def test_export_from_a_python_file(tmp_path, capsys):
    source = tmp_path / "net.py"
    source.write_text("import nn\n"
                      "def make():\n"
                      "    return nn.Sequential(nn.Linear(5, 2), nn.ReLU())\n")
    out = tmp_path / "net.wasm"
    assert main(["export", f"{source}:make", "-o", str(out), "--input", "input0=2x5",
                 "--dynamic", "input0:0=batch:1:4"]) == 0
    assert out.read_bytes()[:4] == b"\0asm"
    assert main(["inspect", str(out)]) == 0
    assert "input input0: float32[batch, 5]" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["export", "nofile.py:make", "-o", "x.wasm", "--input", "a=1x2"], "does not exist"),
    (["export", "justaname", "-o", "x.wasm", "--input", "a=1x2"], "expected FILE.py:NAME"),
    (["export", "os:path", "-o", "x.wasm", "--input", "a=0x2"], "expected NAME=SHAPE"),
])
def test_export_errors(args, message, capsys):
    assert main(args) != 0
    assert message in capsys.readouterr().err


def test_console_script_help_lists_commands_and_exit_codes():
    out = subprocess.run([sys.executable, "-m", "runtime", "--help"], capture_output=True,
                         text=True, check=True).stdout
    for word in ("run", "inspect", "export", "exit codes", "limit hit"):
        assert word in out


def test_inspect_graph_prints_the_compiled_graph(model_file, capsys):
    assert main(["inspect", "--graph", str(model_file)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("graph(%x: float32[batch, 6]):")
    assert "linear(%x" in out and "epilogue=('relu',)" in out


class _Stdin:
    def __init__(self, data: bytes):
        import io
        self.buffer = io.BytesIO(data)


def _npy_bytes(array: np.ndarray) -> bytes:
    import io
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


@pytest.mark.parametrize("encode", [
    _npy_bytes,
    lambda x: json.dumps(x.tolist()).encode(),
    lambda x: json.dumps({"x": x.tolist()}).encode(),
])
def test_input_from_stdin_in_any_format(encode, model_file, monkeypatch, capsys, mlp_model):
    x = np.random.default_rng(4).standard_normal((2, 6)).astype(np.float32)
    monkeypatch.setattr(sys, "stdin", _Stdin(encode(x)))
    spec = "-" if encode(x).startswith(b"{") else "x=-"
    assert main(["run", str(model_file), "-i", spec, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["shapes"] == {"output0": [2, 3]}
    np.testing.assert_allclose(result["outputs"]["output0"], mlp_model(x), rtol=1e-5, atol=1e-6)


def test_json_output_file_is_strict_json_with_nonfinite_as_strings(tmp_path):
    from runtime.tensor_io import read_arrays, write_arrays
    out = tmp_path / "y.json"
    write_arrays(out, {"y": np.array([np.nan, np.inf, -np.inf, 2.5], np.float32)})
    assert json.loads(out.read_text(), parse_constant=lambda c: pytest.fail(c)) == {
        "y": ["NaN", "Infinity", "-Infinity", 2.5]}
    back = read_arrays(out)["y"]
    np.testing.assert_array_equal(back, np.array([np.nan, np.inf, -np.inf, 2.5], np.float32))


@pytest.mark.parametrize("args, stdin, message", [
    (["-i", "x=-", "-i", "y=-"], b"", r"stdin \('-'\) can be read by one --input only"),
    (["-i", "x={x}", "-i", "x={x}"], b"", r"input\(s\) \['x'\] given twice"),
    (["-i", "={x}"], b"", "expected NAME=FILE with a non-empty NAME"),
    (["-i", "x=-"], b"\x93NUMPY garbage", "cannot read stdin as .npy"),
    (["-i", "x=-"], b"[[1, 2], [3]]", "cannot read stdin as .json"),
    (["-i", "x=-"], b'[["a", 1]]', r"expected numbers, booleans, nested lists .*got 'a'"),
    (["-i", "x=-"], b"[[true]]", r"the array \(float32\): expected numbers, got booleans"),
    (["-i", "x={npz}"], b"", "holds arrays by name; pass it without NAME="),
    (["-i", "x={txt}"], b"", "unsupported input file type '.txt'"),
])
def test_bad_cli_inputs_are_one_line_exit_7(args, stdin, message, model_file, x_file, tmp_path,
                                            monkeypatch, capsys):
    npz, txt = tmp_path / "in.npz", tmp_path / "in.txt"
    np.savez(npz, x=np.load(x_file))
    txt.write_text("1 2 3")
    monkeypatch.setattr(sys, "stdin", _Stdin(stdin))
    args = [a.format(x=x_file, npz=npz, txt=txt) for a in args]
    assert main(["run", str(model_file), *args]) == 7
    err = capsys.readouterr().err
    assert err.startswith("wasmnn: error: ") and len(err.strip().splitlines()) == 1
    assert __import__("re").search(message, err)


def test_help_documents_every_exit_code_and_the_limits():
    out = subprocess.run([sys.executable, "-m", "runtime", "run", "--help"],
                         capture_output=True, text=True, check=True).stdout
    for word in ("--max-memory", "--timeout", "--fuel", "stdin"):
        assert word in out
    from runtime.cli import EXIT_CODES, _epilog
    for _, code, meaning in EXIT_CODES:
        assert f"{code}  " in _epilog() and meaning in _epilog()


def test_json_numbers_outside_float32_are_refused(tmp_path):
    from runtime.tensor_io import read_arrays
    path = tmp_path / "x.json"
    path.write_text("[[1e300, 1]]")
    with pytest.raises(ValueError, match="cannot read .* a number is outside the float32 range"):
        read_arrays(path)


def test_a_corrupt_npy_header_is_a_bad_input_not_a_crash():
    import io

    from runtime.tensor_io import read_arrays
    out = io.BytesIO()
    np.save(out, np.zeros((3, 4), np.float32))
    raw = out.getvalue().replace(b"}", b"\0", 1)  # found by test_fuzz
    with pytest.raises(ValueError, match="cannot read stdin as .npy"):
        read_arrays("-", stdin=io.BytesIO(raw))
