"""wasmnn sessions as Ray Data workers, on a real local Ray cluster (2 CPUs): the outputs are
``Session.run``'s, every input row comes out exactly once, and failures stay contained."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from models import Lookup

import modelc
import nn
import runtime
from runtime import ray_data  # NOTE: before ray, see ray_data.init
from runtime.batch import BatchRunner, ModelPayload
from runtime.cli import main

ray: Any = pytest.importorskip("ray", reason="Ray is not installed (the ray extra)")


@pytest.fixture(scope="module")
def cluster() -> Any:
    ray_data.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                  ignore_reinit_error=True)
    yield ray
    ray.shutdown()


def mlp_model() -> nn.Module:
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).eval()


@pytest.fixture(scope="module")
def mlp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mlp") / "mlp.wasm"
    modelc.export(mlp_model(), {"x": np.zeros((1, 16), np.float32)}, path,
                  dynamic={"x": {0: ("batch", 1, 64)}})
    return path


@pytest.fixture(scope="module")
def lookup(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("lookup") / "lookup.wasm"
    modelc.export(Lookup().eval(), {"ids": np.zeros((1, 2), np.int64)}, path,
                  dynamic={"ids": {0: ("batch", 1, 8)}})
    return path


def collect(dataset: Any) -> dict[str, np.ndarray]:
    """The dataset's columns, rows ordered by ``row``."""
    frame = dataset.to_pandas()
    order = np.argsort(frame["row"].to_numpy())
    return {c: (np.stack(frame[c].to_numpy()) if c not in ("error", "row")
                else frame[c].to_numpy())[order] for c in frame.columns}


def test_10000_rows_through_the_mlp_equal_session_run(cluster, mlp, tmp_path):
    x = np.random.default_rng(0).standard_normal((10_000, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    scored = ray_data.map_model(ray_data.read_inputs({"x": str(tmp_path / "x.npy")}),
                                ModelPayload.from_file(mlp), concurrency=2, batch_size=500)
    got = collect(scored)
    assert np.array_equal(got["row"], np.arange(10_000))
    with runtime.load(mlp) as session:
        want = np.concatenate([session.run({"x": x[i:i + 64]})["output0"]
                               for i in range(0, len(x), 64)])
    assert np.array_equal(got["output0"], want)
    assert not any(got["error"])


def test_500_sentences_through_minilm_equal_session_run(cluster, tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "minilm"))
    pytest.importorskip("tokenizers")
    from sentence_encoder import SentenceEncoder, find_minilm, load_tokenizer, tokenize

    try:
        checkpoint = find_minilm(tmp_path / "minilm")
    except ModuleNotFoundError as error:
        pytest.skip(str(error))
    words = "the a cat dog sat ran on under warm cold mat roof quickly slowly".split()
    rng = np.random.default_rng(0)
    sentences = [" ".join(rng.choice(words, rng.integers(3, 12))) for _ in range(500)]
    batch = tokenize(load_tokenizer(checkpoint, 16), sentences)
    model = tmp_path / "minilm.wasm"
    modelc.export(SentenceEncoder.from_pretrained(checkpoint).eval(),
                  {k: v[:2] for k, v in batch.items()}, model,
                  dynamic={k: {0: ("batch", 1, 32)} for k in batch})
    for name, values in batch.items():
        np.save(tmp_path / f"{name}.npy", values)
    sources = {name: str(tmp_path / f"{name}.npy") for name in batch}
    scored = ray_data.map_model(ray_data.read_inputs(sources, rows_per_block=100),
                                ModelPayload.from_file(model), concurrency=2, batch_size=50,
                                max_memory="512MiB")
    got = collect(scored)
    with runtime.load(model, max_memory="512MiB") as session:
        want = np.concatenate([session.run({k: v[i:i + 32] for k, v in batch.items()})
                               ["output0"] for i in range(0, 500, 32)])
    assert np.array_equal(got["row"], np.arange(500))
    np.testing.assert_allclose(got["output0"], want, rtol=0, atol=1e-6)


def test_rows_that_trap_get_error_records_and_the_others_their_outputs(cluster, lookup,
                                                                      tmp_path):
    ids = np.random.default_rng(1).integers(0, 10, (40, 2))
    bad = [3, 17, 18, 39]
    ids[bad, 1] = 99  # past the table: the gather traps
    np.save(tmp_path / "ids.npy", ids)
    scored = ray_data.map_model(ray_data.read_inputs({"ids": str(tmp_path / "ids.npy")}),
                                ModelPayload.from_file(lookup), concurrency=1, batch_size=8)
    got = collect(scored)
    failed = [i for i, e in enumerate(got["error"]) if e]
    assert failed == bad
    assert all(got["error"][i].startswith("Trap: ") for i in bad)
    good = [i for i in range(40) if i not in bad]
    with runtime.load(lookup) as session:
        want = session.run({"ids": ids[good][:8]})["output0"]
    assert np.array_equal(got["output0"][good][:8], want)
    assert np.isnan(got["output0"][bad]).all()


def test_on_error_raise_fails_the_job_naming_the_trap(cluster, lookup, tmp_path):
    np.save(tmp_path / "ids.npy", np.array([[1, 2], [99, 1]]))
    scored = ray_data.map_model(ray_data.read_inputs({"ids": str(tmp_path / "ids.npy")}),
                                ModelPayload.from_file(lookup), on_error="raise")
    with pytest.raises(Exception, match="Trap|unreachable|out of bounds"):
        scored.materialize()


def test_a_killed_worker_is_replaced_and_every_row_comes_out_once(cluster, mlp, tmp_path):
    x = np.random.default_rng(2).standard_normal((6_000, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    killed: list[int] = []

    def kill_one_actor() -> None:
        """SIGKILL the first actor process seen (Ray titles it
        ``ray::MapWorker(MapBatches(WasmnnPredictor))``, with ``.submit`` during a batch):
        waiting for a batch in flight missed the window when the machine was loaded."""
        deadline = time.monotonic() + 120
        while not killed and time.monotonic() < deadline:
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    title = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                if title.startswith(b"ray::MapWorker(MapBatches(WasmnnPredictor))"):
                    os.kill(int(pid), signal.SIGKILL)
                    killed.append(int(pid))
                    return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one_actor)
    killer.start()
    scored = ray_data.map_model(ray_data.read_inputs({"x": str(tmp_path / "x.npy")},
                                                     rows_per_block=100),
                                ModelPayload.from_file(mlp), concurrency=2, batch_size=100,
                                timeout=5.0)
    got = collect(scored.materialize())
    killer.join()
    assert killed, "no actor was found to kill"
    assert np.array_equal(got["row"], np.arange(6_000))
    with runtime.load(mlp) as session:
        assert np.array_equal(got["output0"][:64], session.run({"x": x[:64]})["output0"])


def test_a_worker_refuses_bytes_that_do_not_match_their_checksum(mlp):
    payload = ModelPayload.from_file(mlp)
    tampered = ModelPayload(payload.wasm[:-1] + b"\0", payload.sha256)
    with pytest.raises(runtime.ModelFormatError, match="do not match their SHA-256"):
        tampered.load()


def test_sidecar_weights_travel_with_the_model(cluster, tmp_path):
    path = tmp_path / "side.wasm"
    modelc.export(mlp_model(), {"x": np.zeros((1, 16), np.float32)}, path, sidecar=True,
                  dynamic={"x": {0: ("batch", 1, 64)}})
    payload = ModelPayload.from_file(path)
    assert payload.weights == (tmp_path / "side.weights").read_bytes()
    x = np.random.default_rng(3).standard_normal((100, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    (tmp_path / "side.weights").unlink()  # the workers get the bytes, not the path
    got = collect(ray_data.map_model(ray_data.read_inputs({"x": str(tmp_path / "x.npy")}),
                                     payload, concurrency=1, batch_size=50))
    with runtime.load(payload.wasm, weights=payload.weights) as session:
        assert np.array_equal(got["output0"][:64], session.run({"x": x[:64]})["output0"])


def test_the_batch_command_writes_parquet_parts_and_a_summary(cluster, mlp, tmp_path, capsys):
    x = np.random.default_rng(4).standard_normal((300, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    code = main(["batch", str(mlp), "--input", f"x={tmp_path / 'x.npy'}", "--output",
                 str(tmp_path / "out"), "--concurrency", "2", "--batch-size", "64"])
    assert code == 0
    summary = capsys.readouterr().out
    assert "300 rows" in summary and "0 failed" in summary
    got = collect(ray.data.read_parquet(str(tmp_path / "out")))
    with runtime.load(mlp) as session:
        assert np.array_equal(got["output0"][:64], session.run({"x": x[:64]})["output0"])
    assert np.array_equal(got["row"], np.arange(300))


def test_the_batch_command_reads_parquet_columns(cluster, mlp, tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    x = np.random.default_rng(5).standard_normal((120, 16)).astype(np.float32)
    pq.write_table(pa.table({"features": list(x)}), tmp_path / "rows.parquet")
    assert main(["batch", str(mlp), "--input", f"x={tmp_path / 'rows.parquet'}:features",
                 "--output", str(tmp_path / "out"), "--concurrency", "1"]) == 0
    got = collect(ray.data.read_parquet(str(tmp_path / "out")))
    with runtime.load(mlp) as session:
        assert np.array_equal(got["output0"][:64], session.run({"x": x[:64]})["output0"])


@pytest.mark.parametrize("args, message", [
    (["--input", "x"], "expected NAME=FILE.npy"),
    (["--input", "x=a.npy", "--input", "x=b.npy"], "given twice"),
])
def test_the_batch_command_rejects_bad_inputs(mlp, tmp_path, capsys, args, message):
    assert main(["batch", str(mlp), "--output", str(tmp_path / "o"), *args]) == 7
    assert message in capsys.readouterr().err


def test_wasm_traps_stay_traps_in_a_process_that_started_ray(cluster, lookup):
    """wasmtime ran here before Ray installed its crash handlers; ``ray_data.init`` keeps
    them from turning the next trap into a crash of this process."""
    with runtime.load(lookup) as session:
        with pytest.raises(runtime.Trap, match="unreachable"):
            session.run({"ids": np.array([[1, 99]])})


def test_the_runner_checks_its_column_mapping(mlp):
    with runtime.load(mlp) as session:
        with pytest.raises(ValueError, match=r"unknown model inputs \['y'\]"):
            BatchRunner(session, inputs={"col": "y"})
        with pytest.raises(ValueError, match="on_error must be"):
            BatchRunner(session, on_error="ignore")


def test_an_actor_runs_its_session_on_one_thread_even_when_auto_would_use_more(
        mlp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wasm_kernels import parallel

    monkeypatch.setattr(parallel, "AUTO_WEIGHTS", 0)  # NOTE: "auto" picks every core
    with runtime.load(mlp) as session:
        assert session.threads == runtime.threads.available_cores()
    predictor = ray_data.WasmnnPredictor(ModelPayload.from_file(mlp))
    assert predictor.runner.session.threads == 1
