"""Reading CLI inputs and writing outputs: ``.npy``, ``.npz`` and JSON (nested lists), from
files or stdin.

JSON is strict (RFC 8259) both ways: NaN and infinities, which it cannot spell, are the
strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``. A JSON object holds arrays by name,
like ``.npz``.
"""

from __future__ import annotations

import io
import json
import math
import sys
import tokenize
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any, BinaryIO

import numpy as np

from .errors import one_line

Arrays = dict[str, np.ndarray] | np.ndarray
_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK\x03\x04"


DtypeOf = Callable[[str | None], np.dtype]
"""The dtype a JSON array becomes, by the input name it is given for (``None``: unnamed)."""


def _number(value: Any) -> Any:
    if isinstance(value, list):
        return [_number(v) for v in value]
    if isinstance(value, str) and value in _NONFINITE:
        return _NONFINITE[value]
    if not isinstance(value, (int, float)):
        raise ValueError(f"expected numbers, booleans, nested lists or {sorted(_NONFINITE)}, "
                         f"got {value!r}")
    return value


def _exactly(wide: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``wide`` (what numpy makes of the JSON values) as ``dtype``, refusing values it
    cannot hold: fractions or out-of-range numbers for an integer, anything but 0/1 or
    booleans for bool, numbers past a float's range."""
    if wide.dtype.kind == "b" and dtype.kind != "b":
        raise ValueError("expected numbers, got booleans")
    if dtype.kind == "f":
        wide = wide.astype(np.float64)
        if np.any(np.abs(wide[np.isfinite(wide)]) > np.finfo(dtype).max):
            raise ValueError(f"a number is outside the {dtype} range")
        return wide.astype(dtype)
    if dtype.kind == "b":
        if wide.dtype.kind != "b" and not np.isin(wide, (0, 1)).all():
            raise ValueError("expected booleans (or 0/1)")
        return wide.astype(dtype)
    if wide.dtype.kind == "f" and not (np.isfinite(wide) & (wide == np.floor(wide))).all():
        raise ValueError("expected integers, got a fraction or a non-finite number")
    info = np.iinfo(dtype)
    if wide.size and (wide.min() < info.min or wide.max() > info.max):
        raise ValueError(f"a number is outside the {dtype} range [{info.min}, {info.max}]")
    return wide.astype(dtype)


def _from_json(text: str, dtype_of: DtypeOf) -> Arrays:
    def array(value: Any, name: str | None) -> np.ndarray:
        numbers = _number(value)
        wide = np.asarray(numbers)
        if wide.dtype == object:  # integers past int64
            wide = np.asarray(numbers, dtype=np.float64)
        dtype = np.dtype(dtype_of(name))
        try:
            return _exactly(wide, dtype)
        except ValueError as err:
            what = "the array" if name is None else f"input {name!r}"
            raise ValueError(f"{what} ({dtype}): {err}") from None

    data = json.loads(text, parse_constant=lambda name: _NONFINITE[name])
    if isinstance(data, dict):
        return {str(name): array(value, str(name)) for name, value in data.items()}
    return array(data, None)


def _float32(name: str | None) -> np.dtype:
    return np.dtype(np.float32)


def _declared(stream: IO[bytes], available: int, what: str, max_bytes: int | None) -> None:
    """Check a ``.npy`` header's declared size against the bytes that follow it and against
    ``max_bytes``, before numpy allocates that size.

    Raises:
        ValueError: it declares more than either.
    """
    version = np.lib.format.read_magic(stream)
    header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
              else np.lib.format.read_array_header_2_0)
    shape, _, dtype = header(stream, max_header_size=10_000)
    declared = math.prod(shape) * dtype.itemsize
    left = available - stream.tell()
    if declared > left:
        raise ValueError(f"{what} declares shape {list(shape)} {dtype} ({declared} bytes) "
                         f"but holds {left} bytes")
    if max_bytes is not None and declared > max_bytes:
        raise ValueError(f"{what} declares shape {list(shape)} {dtype} ({declared} bytes), "
                         f"over the limit of {max_bytes} bytes for this model's inputs")


def _parse(data: bytes, kind: str, max_bytes: int | None, dtype_of: DtypeOf) -> Arrays:
    if kind == ".npy":
        _declared(io.BytesIO(data), len(data), "the array", max_bytes)
        return np.load(io.BytesIO(data), allow_pickle=False)
    if kind == ".npz":
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for member in archive.infolist():
                with archive.open(member) as stream:
                    _declared(stream, member.file_size, f"member {member.filename!r}",
                              max_bytes)
        with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
            return {name: arrays[name] for name in arrays.files}
    return _from_json(data.decode("utf-8"), dtype_of)


def _sniff(data: bytes) -> str:
    if data.startswith(_NPY_MAGIC):
        return ".npy"
    return ".npz" if data.startswith(_ZIP_MAGIC) else ".json"


def read_arrays(path: str | Path, stdin: BinaryIO | None = None,
                max_bytes: int | None = None, dtype_of: DtypeOf = _float32) -> Arrays:
    """One array from ``.npy`` or a JSON list, or a dict of arrays from ``.npz`` or a JSON
    object. ``-`` reads ``stdin`` (default ``sys.stdin.buffer``) and tells the format from
    its first bytes. A ``.npy`` array (or ``.npz`` member) is refused from its header, before
    its data is read, when it declares more bytes than it holds or than ``max_bytes``.
    JSON carries no dtype: each array becomes ``dtype_of(its name)`` (float32 by default),
    exactly or not at all.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the data is not a readable array of the type its suffix names.
    """
    if str(path) == "-":
        data = (stdin or sys.stdin.buffer).read()
        kind, where = _sniff(data), "stdin"
    else:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"input file {str(path)!r} does not exist")
        kind, where = path.suffix.lower(), repr(str(path))
        if kind not in (".npy", ".npz", ".json"):
            raise ValueError(f"unsupported input file type {kind!r} for {where}; "
                             "expected .npy, .npz or .json")
        data = path.read_bytes()
    try:
        return _parse(data, kind, max_bytes, dtype_of)
    except (ValueError, OSError, zipfile.BadZipFile, EOFError, KeyError, UnicodeDecodeError,
            RecursionError, SyntaxError, tokenize.TokenError, MemoryError, OverflowError) as err:
        # NOTE: numpy tokenizes and literal_evals a .npy header: a bad one raises either.
        raise ValueError(f"cannot read {where} as {kind}: {err}") from None


def to_json(array: np.ndarray) -> Any:
    """Nested lists for ``json.dumps``, with NaN and infinities as strings (strict JSON)."""
    if array.dtype.kind != "f" or np.isfinite(array).all():
        return array.tolist()
    names = np.where(np.isnan(array), "NaN", np.where(array > 0, "Infinity", "-Infinity"))
    return np.where(np.isfinite(array), array.astype(object), names).tolist()


def _write_npz(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """What ``np.savez`` writes, but for any output names: ``np.savez(path, **arrays)`` takes
    ``file`` and ``allow_pickle`` as its own arguments, not as names."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)


def write_arrays(path: str | Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write outputs: ``.npz`` (all by name), ``.npy`` (exactly one) or ``.json`` (by name).

    Raises:
        ValueError: the suffix is unsupported, or ``.npy`` for several outputs.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npz":
        _write_npz(path, arrays)
    elif suffix == ".npy":
        if len(arrays) != 1:
            raise ValueError(f"{str(path)!r}: .npy holds one array but the model has "
                             f"{len(arrays)} outputs {sorted(arrays)}; use .npz or .json")
        np.save(path, next(iter(arrays.values())))
    elif suffix == ".json":
        path.write_text(json.dumps({k: to_json(v) for k, v in arrays.items()},
                                   allow_nan=False))
    else:
        raise ValueError(f"unsupported output file type {suffix!r}; use .npz, .npy or .json")


def summary(name: str, array: np.ndarray) -> str:
    """A readable few lines about one output: shape, dtype, statistics and leading values."""
    head = f"{one_line(name)}: {array.dtype}[{', '.join(map(str, array.shape))}]"
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
