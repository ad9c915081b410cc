"""Writes the model metadata custom section (format 1; read back by ``runtime.metadata``)."""

from __future__ import annotations

import json

from wasm_kernels import abi

from .graph import Graph, Value

SECTION = "wasmnn.model"
FORMAT = 1


def _tensor(name: str, value: Value, offset: int) -> dict[str, object]:
    return {"name": name, "dtype": value.dtype, "shape": list(value.shape), "offset": offset}


def encode_metadata(graph: Graph, *, producer: str, input_offsets: dict[str, int],
                    output_offsets: dict[str, int], weights_bytes: int,
                    memory_bytes: int, **extra: object) -> bytes:
    """The UTF-8 JSON payload describing ``graph``'s interface and memory use; ``extra``
    keys (e.g. ``standalone``) are added as they are."""
    meta = {
        "format": FORMAT,
        "producer": producer,
        "abi": {"module": abi.MODULE, "version": abi.VERSION},
        "entry": "run",
        "dims": [{"name": n, "min": lo, "max": hi} for n, (lo, hi) in graph.dims.items()],
        "inputs": [_tensor(n, v, input_offsets[n]) for n, v in graph.inputs.items()],
        "outputs": [_tensor(n, v, output_offsets[n]) for n, v in graph.outputs.items()],
        "ops": graph.ops(),
        "arena_bytes": graph.meta["arena_bytes"],
        "activation_bytes": graph.meta["activation_bytes"],
        "weights_bytes": weights_bytes,
        "memory_bytes": memory_bytes,
        "graph": str(graph).splitlines(),
        **extra,
    }
    return json.dumps(meta, separators=(",", ":")).encode()
