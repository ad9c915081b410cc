"""Batch inference over rows, independent of any distributed engine.

``ModelPayload`` is a model as bytes that travel to workers (its sidecar weights with it),
checked by size and SHA-256 before a worker loads it. ``BatchRunner`` maps a batch of rows
(named columns, rows on axis 0) to output columns: it cuts the batch into chunks the model
accepts, and when a chunk fails it runs that chunk's rows one by one, so that only the rows
that fail get an error record (an ``error`` column; empty for rows that succeeded).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import ModelFormatError, Trap
from .metadata import TensorInfo
from .session import Session, load

ERROR_COLUMN = "error"
"""The output column that holds each row's error message ("" when the row succeeded)."""
ROW_ERRORS = (Trap, ValueError, TypeError)
"""What a bad row can raise: a trap or limit hit, or inputs the model refuses."""


@dataclass(frozen=True)
class ModelPayload:
    """A model's bytes, their SHA-256, and its sidecar weights when it has them."""

    wasm: bytes
    sha256: str
    weights: bytes | None = None
    weights_sha256: str | None = None

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> ModelPayload:
        """Read a ``.wasm`` model and, if ``model.weights`` lies beside it, its weights.

        Raises:
            FileNotFoundError: the model file does not exist.
        """
        with open(path, "rb") as file:
            wasm = file.read()
        sidecar = os.path.splitext(os.fspath(path))[0] + ".weights"
        weights = None
        if os.path.exists(sidecar):
            with open(sidecar, "rb") as file:
                weights = file.read()
        return cls.from_bytes(wasm, weights)

    @classmethod
    def from_bytes(cls, wasm: bytes, weights: bytes | None = None) -> ModelPayload:
        return cls(wasm, hashlib.sha256(wasm).hexdigest(), weights,
                   hashlib.sha256(weights).hexdigest() if weights is not None else None)

    def verify(self) -> None:
        """Check that the bytes are the ones that were sent.

        Raises:
            ModelFormatError: a size or SHA-256 does not match.
        """
        if hashlib.sha256(self.wasm).hexdigest() != self.sha256:
            raise ModelFormatError(f"the model's {len(self.wasm)} bytes do not match their "
                                   f"SHA-256 {self.sha256}")
        if self.weights is not None and hashlib.sha256(self.weights).hexdigest() != \
                self.weights_sha256:
            raise ModelFormatError(f"the model's {len(self.weights)} bytes of weights do not "
                                   f"match their SHA-256 {self.weights_sha256}")

    def load(self, **options: Any) -> Session:
        """Verify, then load a session (``options`` as for ``runtime.load``).

        Raises:
            ModelFormatError: a checksum does not match, or the model is not valid.
        """
        self.verify()
        return load(self.wasm, weights=self.weights, **options)


def _batch_limit(infos: tuple[TensorInfo, ...], dims: Mapping[str, tuple[int, int]]) -> int:
    """How many rows one call takes: the largest value of axis 0's dim, or its fixed size."""
    limits = []
    for info in infos:
        first = info.shape[0] if info.shape else 1
        limits.append(dims[first][1] if isinstance(first, str) else first)
    return max(1, min(limits))


class BatchRunner:
    """Runs a session on batches of rows: ``{column: array}`` in, output columns out.

    Args:
        session: the loaded model.
        inputs: ``{column: model input}``; by default each model input reads the column of
            its own name.
        outputs: ``{model output: column}``; by default every output, under its own name.
        on_error: ``"record"`` (a failing row gets an error record) or ``"raise"``.
    """

    def __init__(self, session: Session, inputs: Mapping[str, str] | None = None,
                 outputs: Mapping[str, str] | None = None, on_error: str = "record"):
        if on_error not in ("record", "raise"):
            raise ValueError(f"on_error must be 'record' or 'raise', got {on_error!r}")
        names = [t.name for t in session.inputs]
        self.inputs = dict(inputs) if inputs is not None else {n: n for n in names}
        unknown = sorted(set(self.inputs.values()) - set(names))
        missing = sorted(set(names) - set(self.inputs.values()))
        if unknown or missing:
            raise ValueError(f"input columns: unknown model inputs {unknown}, unmapped model "
                             f"inputs {missing}; the model's inputs are {names}")
        out_names = [t.name for t in session.outputs]
        self.outputs = dict(outputs) if outputs is not None else {n: n for n in out_names}
        unknown = sorted(set(self.outputs) - set(out_names))
        if unknown:
            raise ValueError(f"output columns: unknown model outputs {unknown}; the model's "
                             f"outputs are {out_names}")
        self.session = session
        self.on_error = on_error
        dims = {d.name: (d.min, d.max) for d in session.metadata.dims}
        self.chunk = _batch_limit(session.inputs, dims)
        self._fixed_rows = not all(t.shape and isinstance(t.shape[0], str)
                                   for t in session.inputs)

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Run every row of ``batch``; returns the output columns and ``ERROR_COLUMN``."""
        columns = {model: _as_array(batch[column], column)
                   for column, model in self.inputs.items()}
        rows = {len(a) for a in columns.values()}
        if len(rows) != 1:
            raise ValueError(f"input columns have different row counts: {sorted(rows)}")
        count = rows.pop()
        pieces: list[Piece] = []
        errors = [""] * count
        step = 1 if self._fixed_rows else self.chunk
        for start in range(0, count, step):
            part = {k: v[start:start + step] for k, v in columns.items()}
            self._run_rows(part, start, pieces, errors)
        return self._columns(pieces, errors, count)

    def _run_rows(self, part: dict[str, np.ndarray], start: int, pieces: list[Piece],
                  errors: list[str]) -> None:
        size = len(next(iter(part.values())))
        try:
            pieces.append((start, size, self.session.run(part)))
        except ROW_ERRORS as error:
            if self.on_error == "raise":
                raise
            if size > 1:
                for row in range(size):
                    self._run_rows({k: v[row:row + 1] for k, v in part.items()}, start + row,
                                   pieces, errors)
                return
            errors[start] = f"{type(error).__name__}: {error}".replace("\n", " ")
            pieces.append((start, 1, None))

    def _columns(self, pieces: list[Piece], errors: list[str],
                 count: int) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {ERROR_COLUMN: np.array(errors, dtype=object)}
        infos = {t.name: t for t in self.session.outputs}
        for name, column in self.outputs.items():
            out[column] = _assemble([(size, o[name] if o is not None else None)
                                     for _, size, o in pieces], infos[name].dtype, count)
        return out


Piece = tuple[int, int, dict[str, np.ndarray] | None]
"""Rows ``start`` to ``start + size`` of a batch and their outputs (``None``: one failed row)."""


def _as_array(values: Any, column: str) -> np.ndarray:
    """A column as one array with rows on axis 0 (a column of equal-shaped arrays, as Ray
    gives a list column, is stacked)."""
    array = np.asarray(values)
    if array.dtype == object:
        try:
            array = np.stack([np.asarray(v) for v in values])
        except ValueError as error:
            raise ValueError(f"column {column!r}: rows have different shapes ({error})") \
                from None
    return array


def _assemble(pieces: list[tuple[int, np.ndarray | None]], dtype: str,
              count: int) -> np.ndarray:
    """One output's column from its pieces in row order, whole chunks at a time; a failed
    row is filled with NaN (floats) or 0. Rows of different shapes (a symbolic non-batch dim)
    make an object column of per-row arrays."""
    shapes = [p.shape[1:] for _, p in pieces if p is not None]
    if not shapes:
        return np.array([None] * count, dtype=object)
    fill = np.full((1, *shapes[0]), np.nan if np.dtype(dtype).kind == "f" else 0, dtype)
    filled = [p if p is not None else fill for _, p in pieces]
    if len(set(shapes)) == 1:
        return np.concatenate(filled)
    column = np.empty(count, dtype=object)
    column[:] = [row for piece in filled for row in piece]
    return column
