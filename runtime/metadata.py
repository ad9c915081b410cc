"""Reads and checks the model metadata custom section (format written by ``modelc``).

The section ``wasmnn.model`` holds one UTF-8 JSON object, format 1:

    {"format": 1, "producer": "wasmnn 0.1.0",
     "abi": {"module": "wasmnn_kernels_v3", "version": 3},
     "entry": "run",                          # export called with one i32 per dim, in order
     "dims": [{"name": "batch", "min": 1, "max": 64}],
     "inputs":  [{"name": "x", "dtype": "float32", "shape": ["batch", 64], "offset": 1024}],
     "outputs": [{"name": "output0", "dtype": "float32", "shape": ["batch", 10], "offset": 9216}],
     "ops": ["linear", "relu"], "arena_bytes": 8192, "weights_bytes": 4096,
     "memory_bytes": 131072,                  # at the dims' smallest values
     "memory_bytes_max": 524288,              # optional: at their largest
     "layout": {"entry": "layout", "need_at": 4096}}     # optional, see below

Tensors are dense, C-order, at byte ``offset`` in linear memory. A model whose memory
follows its dims has ``layout``: its ``entry`` export, called with the dims, grows memory to
what they need and writes that size (a u32) at ``need_at``; a tensor with ``offset_at`` is
then at the u32 address written there (its ``offset`` is the one at the smallest dims). An
output with ``rows_from`` (e.g. NonMaxSuppression's selected indices, whose row count
depends on the data) holds values in its first rows only: as many as the one-element integer
output it names holds after a run, at most its first dim. The
file is untrusted: every field is type-checked and every tensor must fit in
``memory_bytes_max`` (else ``memory_bytes``) at the largest dims, or ``ModelFormatError``
names the field; addresses a ``layout`` call writes are checked when they are read.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import ModelFormatError

SECTION = "wasmnn.model"
FORMAT = 1
DTYPES = ("float32", "int64", "int32", "int16", "uint16", "int8", "uint8", "bool")
MAX_RANK = 8


@dataclass(frozen=True)
class Dim:
    """A symbolic dimension and the inclusive range of values the model accepts."""

    name: str
    min: int
    max: int


@dataclass(frozen=True)
class TensorInfo:
    """An input or output: name, dtype, and shape whose entries are ints or dim names."""

    name: str
    dtype: str
    shape: tuple[int | str, ...]
    offset: int
    offset_at: int | None = None
    rows_from: str | None = None
    """The output holding how many leading rows of this one hold values, if not all."""

    def resolve(self, dims: dict[str, int]) -> tuple[int, ...]:
        return tuple(d if isinstance(d, int) else dims[d] for d in self.shape)

    def nbytes(self, dims: dict[str, int]) -> int:
        return math.prod(self.resolve(dims)) * np.dtype(self.dtype).itemsize

    def __str__(self) -> str:
        return f"{self.name}: {self.dtype}[{', '.join(str(d) for d in self.shape)}]"


@dataclass(frozen=True)
class Sidecar:
    """Weights kept outside the module: the file (a plain name in the model's directory),
    where its bytes go in memory, how many there are and their SHA-256."""

    file: str
    offset: int
    bytes: int
    sha256: str


_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,254}$")


def _sidecar(raw: Any) -> Sidecar | None:
    if raw is None:
        return None
    file = _field(raw, "file", str, "sidecar")
    if not _PLAIN_NAME.match(file) or ".." in file:
        raise ModelFormatError(f"model metadata: sidecar file {file!r} must be a plain file "
                               "name in the model's directory (no path, no '..')")
    digest = _field(raw, "sha256", str, "sidecar")
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise ModelFormatError(f"model metadata: sidecar sha256 {digest!r} is not a hex digest")
    return Sidecar(file, _count(raw, "offset", "sidecar"), _count(raw, "bytes", "sidecar"),
                   digest)


@dataclass(frozen=True)
class LayoutEntry:
    """The export that lays out memory for given dims, and where it writes their need."""

    entry: str
    need_at: int


@dataclass(frozen=True)
class ModelMetadata:
    raw: dict[str, Any]
    producer: str
    abi_module: str
    abi_version: int
    entry: str
    dims: tuple[Dim, ...]
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    ops: tuple[str, ...]
    arena_bytes: int
    weights_bytes: int
    memory_bytes: int
    memory_bytes_max: int
    sidecar: Sidecar | None = None
    layout: LayoutEntry | None = None

    def max_dims(self) -> dict[str, int]:
        return {d.name: d.max for d in self.dims}


def _field(obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise ModelFormatError(f"model metadata: {where} has no {key!r} field")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        expected = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise ModelFormatError(f"model metadata: {where}.{key} should be {expected}, "
                               f"got {value!r}")
    return value


def _count(obj: Any, key: str, where: str) -> int:
    value = _field(obj, key, int, where)
    if value < 0 or value >= 1 << 32:
        raise ModelFormatError(f"model metadata: {where}.{key} = {value} is out of range")
    return value


def _tensor(obj: Any, where: str, dim_names: set[str]) -> TensorInfo:
    name = _field(obj, "name", str, where)
    dtype = _field(obj, "dtype", str, where)
    if dtype not in DTYPES:
        raise ModelFormatError(f"model metadata: {where} ({name!r}) has dtype {dtype!r}; "
                               f"supported: {list(DTYPES)}")
    shape = _field(obj, "shape", list, where)
    if len(shape) > MAX_RANK:
        raise ModelFormatError(f"model metadata: {where} ({name!r}) has rank {len(shape)} "
                               f"> {MAX_RANK}")
    for d in shape:
        if isinstance(d, bool) or not (isinstance(d, int) and 0 <= d < 1 << 31
                                       or isinstance(d, str) and d in dim_names):
            raise ModelFormatError(f"model metadata: {where} ({name!r}) has shape entry "
                                   f"{d!r}; expected a size or one of {sorted(dim_names)}")
    offset_at = _count(obj, "offset_at", where) if "offset_at" in obj else None
    rows_from = _field(obj, "rows_from", str, where) if "rows_from" in obj else None
    return TensorInfo(name, dtype, tuple(shape), _count(obj, "offset", where), offset_at,
                      rows_from)


def _layout(raw: Any) -> LayoutEntry | None:
    if raw is None:
        return None
    return LayoutEntry(_field(raw, "entry", str, "layout"), _count(raw, "need_at", "layout"))


def _check_row_counts(inputs: tuple[TensorInfo, ...], outputs: tuple[TensorInfo, ...]) -> None:
    by_name = {t.name: t for t in outputs}
    for t in inputs + outputs:
        if t.rows_from is None:
            continue
        count = by_name.get(t.rows_from)
        if (t in inputs or not t.shape or count is None or count.rows_from is not None
                or not count.dtype.startswith(("int", "uint")) or count.shape not in ((), (1,))):
            raise ModelFormatError(f"model metadata: tensor {t.name!r} has rows_from "
                                   f"{t.rows_from!r}; expected an output with rows naming "
                                   "another output of one integer")


def row_counted(outputs: dict[str, np.ndarray], infos: tuple[TensorInfo, ...]
                ) -> dict[str, np.ndarray]:
    """``outputs`` with each output that has ``rows_from`` cut to the rows that hold values.

    Raises:
        ModelFormatError: the count the model wrote is negative or over the rows it has.
    """
    for t in infos:
        if t.rows_from is not None and t.name in outputs:
            rows = int(outputs[t.rows_from].reshape(-1)[0])
            if not 0 <= rows <= outputs[t.name].shape[0]:
                raise ModelFormatError(f"the model wrote {rows} as the row count of output "
                                       f"{t.name!r}, which has {outputs[t.name].shape[0]} rows")
            outputs[t.name] = outputs[t.name][:rows]
    return outputs


def parse(payload: bytes | None) -> ModelMetadata:
    """Parse and check the metadata section payload.

    Raises:
        ModelFormatError: the section is missing, not JSON, of another format version, or
            describes tensors that do not fit in the model's memory.
    """
    if payload is None:
        raise ModelFormatError(f"not a wasmnn model: no {SECTION!r} custom section "
                               "(is this a plain WebAssembly module? try 'wasmnn inspect')")
    try:
        raw = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ModelFormatError(f"model metadata is not valid JSON: {err}") from None
    except RecursionError:
        raise ModelFormatError("model metadata is nested too deeply to read") from None
    if not isinstance(raw, dict):
        raise ModelFormatError("model metadata must be a JSON object")
    fmt = _field(raw, "format", int, "metadata")
    if fmt != FORMAT:
        raise ModelFormatError(f"model metadata format {fmt} is not supported (this wasmnn "
                               f"reads format {FORMAT}); re-export the model")
    abi = _field(raw, "abi", dict, "metadata")
    dims = []
    for i, d in enumerate(_field(raw, "dims", list, "metadata")):
        where = f"dims[{i}]"
        dim = Dim(_field(d, "name", str, where), _count(d, "min", where), _count(d, "max", where))
        if dim.min > dim.max:
            raise ModelFormatError(f"model metadata: {where} ({dim.name!r}) has min {dim.min} "
                                   f"> max {dim.max}")
        dims.append(dim)
    names = {d.name for d in dims}
    if len(names) != len(dims):
        raise ModelFormatError("model metadata: dims has duplicate names")
    inputs = tuple(_tensor(t, f"inputs[{i}]", names)
                   for i, t in enumerate(_field(raw, "inputs", list, "metadata")))
    outputs = tuple(_tensor(t, f"outputs[{i}]", names)
                    for i, t in enumerate(_field(raw, "outputs", list, "metadata")))
    _check_row_counts(inputs, outputs)
    memory_bytes = _count(raw, "memory_bytes", "metadata")
    meta = ModelMetadata(
        raw=raw, producer=_field(raw, "producer", str, "metadata"),
        abi_module=_field(abi, "module", str, "abi"), abi_version=_count(abi, "version", "abi"),
        entry=_field(raw, "entry", str, "metadata"), dims=tuple(dims),
        inputs=inputs, outputs=outputs,
        ops=tuple(_field(raw, "ops", list, "metadata")),
        arena_bytes=_count(raw, "arena_bytes", "metadata"),
        weights_bytes=_count(raw, "weights_bytes", "metadata"),
        memory_bytes=memory_bytes,
        # NOTE: only memory that a layout call grows may exceed the minimum.
        memory_bytes_max=(max(memory_bytes, _count(raw, "memory_bytes_max", "metadata"))
                          if "memory_bytes_max" in raw and "layout" in raw else memory_bytes),
        sidecar=_sidecar(raw.get("sidecar")), layout=_layout(raw.get("layout")))
    if meta.sidecar and meta.sidecar.offset + meta.sidecar.bytes > meta.memory_bytes:
        raise ModelFormatError(f"model metadata: sidecar weights span bytes "
                               f"[{meta.sidecar.offset}, "
                               f"{meta.sidecar.offset + meta.sidecar.bytes}) but the model's "
                               f"memory has {meta.memory_bytes} bytes")
    slots = [("layout.need_at", meta.layout.need_at)] if meta.layout else []
    slots += [(f"tensor {t.name!r} offset_at", t.offset_at) for t in inputs + outputs
              if t.offset_at is not None]
    for what, at in slots:
        if meta.layout is None or at + 4 > meta.memory_bytes:
            raise ModelFormatError(f"model metadata: {what} = {at} needs a 'layout' entry and "
                                   f"a u32 inside the model's {meta.memory_bytes} bytes")
    largest = meta.max_dims()
    for tensor in inputs + outputs:
        end = tensor.offset + tensor.nbytes(largest)
        if end > meta.memory_bytes_max:
            raise ModelFormatError(f"model metadata: tensor {tensor.name!r} spans bytes "
                                   f"[{tensor.offset}, {end}) but the model's memory has "
                                   f"{meta.memory_bytes_max} bytes")
    if len({t.name for t in inputs}) != len(inputs) or not inputs or not outputs:
        raise ModelFormatError("model metadata: inputs must be non-empty with unique names, "
                               "and outputs non-empty")
    return meta
