"""Calibration: the range of every float32 tensor of a graph over example inputs, seen by
observers while the numpy interpreter runs the graph (the compiler's reference semantics).

``MinMax`` keeps the extremes; ``Percentile`` clips outliers, taking the ``percentile``-th
and ``100 - percentile``-th percentiles of a bounded, seeded sample of the values seen.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..graph import Graph, Value
from ..interpreter import interpret

FLOAT = "float32"


class MinMax:
    """The smallest and largest value seen."""

    def __init__(self) -> None:
        self.low = np.inf
        self.high = -np.inf

    def update(self, values: np.ndarray) -> None:
        if values.size:
            self.low = min(self.low, float(values.min()))
            self.high = max(self.high, float(values.max()))

    def range(self) -> tuple[float, float]:
        """``(low, high)``; ``(0, 0)`` when nothing was seen."""
        return (self.low, self.high) if self.low <= self.high else (0.0, 0.0)


class Percentile(MinMax):
    """The ``100 - percentile`` and ``percentile`` percentiles of the values seen, from a
    uniform sample of at most ``samples`` of them per update (seeded: calibration is
    reproducible)."""

    def __init__(self, percentile: float, samples: int = 1 << 16, seed: int = 0) -> None:
        super().__init__()
        self.percentile = percentile
        self.samples = samples
        self.rng = np.random.default_rng(seed)
        self.kept: list[np.ndarray] = []

    def update(self, values: np.ndarray) -> None:
        super().update(values)
        flat = values.ravel()
        if flat.size > self.samples:
            flat = self.rng.choice(flat, self.samples, replace=False)
        self.kept.append(flat.astype(np.float32))

    def range(self) -> tuple[float, float]:
        if not self.kept:
            return 0.0, 0.0
        values = np.concatenate(self.kept)
        low, high = np.percentile(values, [100 - self.percentile, self.percentile])
        return float(low), float(high)


def observer_factory(percentile: float | None) -> Callable[[], MinMax]:
    """Observers of min/max ranges, or of percentile-clipped ones.

    Raises:
        ValueError: ``percentile`` is not in (50, 100].
    """
    if percentile is None:
        return MinMax
    if not 50 < percentile <= 100:
        raise ValueError(f"percentile must be in (50, 100], got {percentile!r}")
    return lambda: Percentile(percentile)


def feeds(graph: Graph, example: Any) -> dict[str, np.ndarray]:
    """One calibration example as the graph's inputs: an array (the only input), a tuple or
    list of arrays (in input order) or a ``{name: array}`` mapping.

    Raises:
        ValueError: the example does not give every input of the graph.
    """
    names = list(graph.inputs)
    if isinstance(example, Mapping):
        given = {str(k): np.asarray(v) for k, v in example.items()}
    elif isinstance(example, (tuple, list)):
        given = {name: np.asarray(v) for name, v in zip(names, example)}
        if len(example) != len(names):
            raise ValueError(f"a calibration example has {len(example)} arrays; the graph "
                             f"takes {len(names)} inputs {names}")
    else:
        given = {names[0]: np.asarray(example)} if len(names) == 1 else {}
    missing = sorted(set(names) - set(given))
    if missing:
        raise ValueError(f"a calibration example lacks inputs {missing}; the graph takes "
                         f"{names} (give a tuple of arrays or a {{name: array}} dict)")
    return given


def calibrate(graph: Graph, calibration: Iterable[Any],
              percentile: float | None = None) -> dict[int, tuple[float, float]]:
    """The range ``(low, high)`` of every float32 tensor of ``graph`` (by ``id`` of its
    value) over the examples of ``calibration``.

    Raises:
        ValueError: ``calibration`` is empty, an example lacks an input, or ``percentile``
            is out of range.
    """
    make = observer_factory(percentile)
    observers: dict[int, MinMax] = {}

    def observe(value: Value, array: np.ndarray) -> None:
        if value.dtype == FLOAT and array.dtype.kind == "f":
            observers.setdefault(id(value), make()).update(array)

    count = 0
    for example in calibration:
        interpret(graph, feeds(graph, example), observe=observe)
        count += 1
    if not count:
        raise ValueError("calibration is empty: give at least one example input")
    return {key: observer.range() for key, observer in observers.items()}


def examples_from_npz(path: str | os.PathLike[str]) -> list[dict[str, np.ndarray]]:
    """Calibration examples from an ``.npz`` file: one array per model input, named after
    it, whose first axis indexes the examples.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file holds no arrays, or their first axes differ.
    """
    if not Path(path).is_file():
        raise FileNotFoundError(f"calibration data {str(path)!r} does not exist")
    with np.load(path) as data:
        arrays = {name: data[name] for name in data.files}
    counts = {name: (len(a) if a.ndim else 0) for name, a in arrays.items()}
    if not arrays or len(set(counts.values())) != 1 or 0 in counts.values():
        raise ValueError(f"calibration data {str(path)!r} must hold one array per model input "
                         f"with the same number of examples along the first axis; found "
                         f"{ {n: list(a.shape) for n, a in arrays.items()} }")
    return [{name: a[i] for name, a in arrays.items()} for i in range(next(iter(counts.values())))]
