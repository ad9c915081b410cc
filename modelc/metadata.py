"""Writes the model metadata custom section (format 1; read back by ``runtime.metadata``)."""

from __future__ import annotations

import json

from wasm_kernels import abi

from .errors import CompileError
from .graph import Graph, Value

SECTION = "wasmnn.model"
FORMAT = 1
DTYPES = ("float32", "int64", "int32", "int16", "uint16", "int8", "uint8", "bool")
"""The element types of model inputs and outputs (those ``runtime.metadata`` accepts)."""


def check_interface(graph: Graph) -> None:
    """Raise once if the graph has no run-time input or an input or output of a dtype
    outside ``DTYPES``.

    Raises:
        CompileError: naming each such tensor.
    """
    if not graph.inputs:
        raise CompileError(f"the model has no run-time inputs: its outputs "
                           f"{sorted(graph.outputs)} are constants; a model needs an input")
    bad = [f"{kind} {name!r} ({value.dtype})"
           for kind, tensors in (("input", graph.inputs), ("output", graph.outputs))
           for name, value in tensors.items() if value.dtype not in DTYPES]
    if bad:
        raise CompileError(f"unsupported dtype of {', '.join(bad)}; model inputs and outputs "
                           f"must be one of {list(DTYPES)}")


def _tensor(name: str, value: Value, offset: tuple[int, int | None],
            rows_from: str | None = None) -> dict[str, object]:
    address, offset_at = offset
    tensor = {"name": name, "dtype": value.dtype, "shape": list(value.shape), "offset": address}
    if offset_at is not None:
        tensor["offset_at"] = offset_at
    if rows_from is not None:
        tensor["rows_from"] = rows_from
    return tensor


def encode_metadata(graph: Graph, *, producer: str, offsets: dict[str, tuple[int, int | None]],
                    weights_bytes: int, memory_bytes: int, memory_bytes_max: int,
                    **extra: object) -> bytes:
    """The UTF-8 JSON payload describing ``graph``'s interface and memory use; ``extra``
    keys (e.g. ``standalone``) are added as they are. ``offsets`` gives each input and
    output's address at the dims' smallest values and, when it moves with the dims, the
    address of the ``u32`` where the ``layout`` export writes it."""
    meta = {
        "format": FORMAT,
        "producer": producer,
        "abi": {"module": abi.MODULE, "version": abi.VERSION},
        "entry": "run",
        "dims": [{"name": n, "min": lo, "max": hi} for n, (lo, hi) in graph.dims.items()],
        "inputs": [_tensor(n, v, offsets[n]) for n, v in graph.inputs.items()],
        "outputs": [_tensor(n, v, offsets[n], graph.meta.get("row_counts", {}).get(n))
                    for n, v in graph.outputs.items()],
        "ops": graph.ops(),
        "arena_bytes": graph.meta["arena_bytes"],
        "arena_bytes_min": graph.meta["arena_bytes_min"],
        "activation_bytes": graph.meta["activation_bytes"],
        "weights_bytes": weights_bytes,
        "memory_bytes": memory_bytes,
        "memory_bytes_max": memory_bytes_max,
        "graph": str(graph).splitlines(),
        **extra,
    }
    return json.dumps(meta, separators=(",", ":")).encode()
