"""Reading CLI inputs and writing outputs: ``.npy``, ``.npz`` and JSON (nested lists)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Mapping

import numpy as np


def read_arrays(path: str | Path) -> dict[str, np.ndarray] | np.ndarray:
    """One array from ``.npy`` or ``.json``, or a dict of arrays from ``.npz``.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is not a readable array of the type its suffix names.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"input file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            return np.load(path, allow_pickle=False)
        if suffix == ".npz":
            with np.load(path, allow_pickle=False) as archive:
                return {name: archive[name] for name in archive.files}
        if suffix == ".json":
            return np.asarray(json.loads(path.read_text()), dtype=np.float32)
    except (ValueError, OSError, zipfile.BadZipFile, json.JSONDecodeError, EOFError) as err:
        raise ValueError(f"cannot read {str(path)!r} as {suffix}: {err}") from None
    raise ValueError(f"unsupported input file type {suffix!r} for {str(path)!r}; "
                     "expected .npy, .npz or .json")


def write_arrays(path: str | Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write outputs: ``.npz`` (all by name), ``.npy`` (exactly one) or ``.json`` (by name).

    Raises:
        ValueError: the suffix is unsupported, or ``.npy`` for several outputs.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npz":
        np.savez(path, **arrays)
    elif suffix == ".npy":
        if len(arrays) != 1:
            raise ValueError(f"{str(path)!r}: .npy holds one array but the model has "
                             f"{len(arrays)} outputs {sorted(arrays)}; use .npz or .json")
        np.save(path, next(iter(arrays.values())))
    elif suffix == ".json":
        path.write_text(json.dumps({k: v.tolist() for k, v in arrays.items()}))
    else:
        raise ValueError(f"unsupported output file type {suffix!r}; use .npz, .npy or .json")


def summary(name: str, array: np.ndarray) -> str:
    """A readable few lines about one output: shape, dtype, statistics and leading values."""
    head = f"{name}: {array.dtype}[{', '.join(map(str, array.shape))}]"
    if array.size == 0:
        return head + " (empty)"
    finite = array[np.isfinite(array)]
    stats = (f"  min {finite.min():.6g}  max {finite.max():.6g}  mean {finite.mean():.6g}"
             if finite.size else "  no finite values")
    nonfinite = array.size - finite.size
    if nonfinite:
        stats += f"  ({nonfinite} NaN/inf)"
    body = np.array2string(array, precision=4, threshold=20, edgeitems=3, suppress_small=True)
    lines = [head + stats, "  " + body.replace("\n", "\n  ")]
    if array.ndim == 2 and array.shape[1] > 1:
        lines.append(f"  argmax per row: {np.array2string(array.argmax(axis=1), threshold=20)}")
    return "\n".join(lines)
