"""wasmnn models as Ray Data workers (the ``ray`` extra: ``pip install 'wasmnn[ray]'``).

    import ray, runtime.ray_data as wr
    payload = wr.ModelPayload.from_file("model.wasm")
    scored = wr.map_model(ray.data.read_parquet("rows/"), payload, concurrency=4,
                          batch_size=256, inputs={"pixels": "input0"}, max_memory="256MiB")
    scored.write_parquet("out/")

Each actor gets the model as bytes (through Ray's object store), checks their size and
SHA-256, loads one sandboxed session with the given limits and keeps it for its whole life.
A row whose inputs are bad, or whose run traps or hits a limit, gets an error record (the
``error`` column) instead of failing the job (``on_error="raise"`` fails it instead). Actors
are restartable and their tasks retried, so a worker process that dies is replaced and its
rows are run again. Ray is imported here only; the rest of the runtime never needs it.
"""

from __future__ import annotations

import faulthandler
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from .batch import ERROR_COLUMN, BatchRunner, ModelPayload

# NOTE: read by Ray when it is imported: keeps absl's crash handler out of this process,
# where it would sit on top of wasmtime's trap handlers (see ``init``).
os.environ.setdefault("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")

ROW_COLUMN = "row"
"""The column ``read_inputs`` adds: each row's index in the inputs, kept in the outputs."""


def init(**options: Any) -> Any:
    """``ray.init(**options)`` that leaves wasmtime's trap handling in place in this process.

    wasmtime turns a guest's faults (out-of-bounds access, ``unreachable``, division by
    zero) into traps with signal handlers installed when it first runs. ``ray.init``
    installs crash handlers of its own on top (Python's ``faulthandler``, and absl's failure
    handler), after which a trap in a session of this process kills it. This turns both off
    (absl's only if this module is imported before ``ray``): use it instead of ``ray.init``
    in a process that also runs wasm itself. Actor processes need nothing: their sessions
    start after Ray's handlers.
    """
    import ray

    # NOTE: if faulthandler was on before (pytest turns it on), Ray's enable is a no-op and
    # disabling it would restore what was there before wasmtime, not wasmtime's handlers.
    enabled_before = faulthandler.is_enabled()
    context = ray.init(**options)
    if not enabled_before:
        faulthandler.disable()
    return context


class WasmnnPredictor:
    """A callable class for ``Dataset.map_batches``: one session per actor.

    Args:
        payload: the model (a ``ModelPayload``, or a Ray object reference to one).
        inputs, outputs, on_error: as for ``runtime.batch.BatchRunner``.
        options: ``runtime.load`` options: ``max_memory``, ``timeout``, ``fuel``,
            ``kernels``.
    """

    def __init__(self, payload: Any, *, inputs: Mapping[str, str] | None = None,
                 outputs: Mapping[str, str] | None = None, on_error: str = "record",
                 **options: Any):
        if not isinstance(payload, ModelPayload):
            import ray

            payload = ray.get(payload)
        # NOTE: Ray gives an actor one CPU: one thread, whatever "auto" would pick.
        session = payload.load(**{"instances": 1, "threads": 1, **options})
        self.runner = BatchRunner(session, inputs, outputs, on_error)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        out = self.runner(batch)
        for column, values in batch.items():
            if column not in self.runner.inputs and column not in out:
                out[column] = values
        return out


def map_model(dataset: Any, payload: ModelPayload, *, concurrency: int = 1,
              batch_size: int = 4096, inputs: Mapping[str, str] | None = None,
              outputs: Mapping[str, str] | None = None, on_error: str = "record",
              **options: Any) -> Any:
    """``dataset`` with the model's outputs (and ``error``) in place of its input columns.

    Args:
        concurrency: how many actors (one CPU each).
        batch_size: rows per batch handed to an actor (the runner cuts it to what the
            model accepts per call). Ray spends ~20 ms per batch: at 1024 rows of the MLP an
            actor ran at 0.78x a plain `Session.run` loop, at 4096 at 1.13x
            (`bench/ray_batch.py`).
        options: ``max_memory``, ``timeout``, ``fuel``, ``kernels`` for each actor's session.

    Raises:
        ValueError: ``concurrency`` or ``batch_size`` is not positive.
    """
    import ray

    if concurrency < 1 or batch_size < 1:
        raise ValueError(f"concurrency and batch_size must be positive, got {concurrency} "
                         f"and {batch_size}")
    reference = ray.put(payload)
    return dataset.map_batches(
        WasmnnPredictor, batch_size=batch_size, batch_format="numpy",
        zero_copy_batch=True,  # NOTE: the runner only reads its inputs
        compute=ray.data.ActorPoolStrategy(size=concurrency), num_cpus=1,
        fn_constructor_args=(reference,),
        fn_constructor_kwargs={"inputs": inputs, "outputs": outputs, "on_error": on_error,
                               **options},
        # NOTE: a dead actor is restarted and its unfinished batches re-run.
        max_restarts=-1, max_task_retries=-1)


def read_inputs(sources: Mapping[str, str], rows_per_block: int | None = None) -> Any:
    """A dataset with one column per model input and ``ROW_COLUMN``.

    Args:
        sources: ``{input: "FILE.npy"}`` (rows on axis 0) for every input, or
            ``{input: "FILE.parquet:COLUMN"}`` (a file or folder) with one Parquet source
            for all of them.
        rows_per_block: rows per block of ``.npy`` inputs (blocks are what actors share;
            default: an eighth of the rows, at most 1024).

    Raises:
        ValueError: sources that mix kinds, Parquet columns from several sources, or
            ``.npy`` files with different row counts.
        FileNotFoundError: a file does not exist.
    """
    import pyarrow as pa
    import ray
    from ray.data.extensions import ArrowTensorArray

    parquet = {name: src.rpartition(":") for name, src in sources.items()
               if ":" in src and src.rpartition(":")[0].endswith(".parquet")}
    if parquet and len(parquet) != len(sources):
        raise ValueError("inputs must all be .npy files or all Parquet columns "
                         "(NAME=FILE.parquet:COLUMN)")
    if parquet:
        paths = {path for path, _, _ in parquet.values()}
        if len(paths) != 1:
            raise ValueError(f"Parquet inputs must come from one file or folder, got "
                             f"{sorted(paths)}")
        path = paths.pop()
        if not os.path.exists(path):
            raise FileNotFoundError(f"input file {path!r} does not exist")
        columns = {column: name for name, (_, _, column) in parquet.items()}
        dataset = ray.data.read_parquet(path).select_columns(list(columns))
        dataset = dataset.rename_columns(columns)
        return _with_row_numbers(dataset)
    arrays = {}
    for name, path in sources.items():
        if not os.path.exists(path):
            raise FileNotFoundError(f"input file {path!r} does not exist")
        arrays[name] = np.load(path, mmap_mode="r")
    rows = {len(a) for a in arrays.values()}
    if len(rows) != 1:
        raise ValueError(f"the .npy inputs have different row counts: "
                         f"{ {n: len(a) for n, a in arrays.items()} }")
    count = rows.pop()
    rows_per_block = rows_per_block or max(1, min(1024, -(-count // 8)))
    tables = [pa.table({ROW_COLUMN: np.arange(start, min(start + rows_per_block, count),
                                              dtype=np.int64),
                        **{n: ArrowTensorArray.from_numpy(
                            np.ascontiguousarray(a[start:start + rows_per_block]))
                           for n, a in arrays.items()}})
              for start in range(0, count, rows_per_block)]
    return ray.data.from_arrow(tables)


def _with_row_numbers(dataset: Any) -> Any:
    """Number the rows of ``dataset`` in order (one pass to count each block's rows)."""
    import ray

    refs = dataset.materialize().to_arrow_refs()

    @ray.remote
    def rows(table: Any) -> int:
        return int(table.num_rows)

    @ray.remote
    def number(table: Any, start: int) -> Any:
        return table.append_column(ROW_COLUMN, _arange(start, table.num_rows))

    counts = ray.get([rows.remote(r) for r in refs])
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    numbered: list[Any] = [number.remote(r, int(s)) for r, s in zip(refs, starts)]
    return ray.data.from_arrow_refs(numbered)


def _arange(start: int, count: int) -> Any:
    import pyarrow as pa

    return pa.array(np.arange(start, start + count, dtype=np.int64))


__all__ = ["ERROR_COLUMN", "ROW_COLUMN", "ModelPayload", "WasmnnPredictor", "init", "map_model",
           "read_inputs"]
