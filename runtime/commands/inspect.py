"""``wasmnn inspect MODEL.wasm``: imports, exports and model metadata, without running it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from wasm_kernels.wasm import WasmFormatError, read_module
from wasm_kernels.wasm.text import module_text

from .. import metadata as md
from ..errors import ModelFormatError, one_line


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "inspect", help="show a .wasm file's imports, exports and model metadata",
        description="Describe a WebAssembly file without running it: what it imports and "
                    "exports with their types and, for a wasmnn model, its inputs, outputs, "
                    "ops and memory use.")
    parser.add_argument("model", metavar="MODEL.wasm")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (metadata plus imports and exports)")
    parser.add_argument("--graph", action="store_true",
                        help="print the optimised graph the model was compiled from")
    parser.add_argument("--wat", action="store_true",
                        help="print the whole module in the WebAssembly text format "
                             "(names from its name section; wat2wasm reads it back)")
    parser.set_defaults(handler=inspect)


def inspect(args: argparse.Namespace) -> int:
    path = Path(args.model)
    if not path.is_file():
        raise FileNotFoundError(f"file {str(path)!r} does not exist")
    data = path.read_bytes()
    try:
        info = read_module(data)
        if args.wat:
            print(module_text(data), end="")
            return 0
    except WasmFormatError as err:
        raise ModelFormatError(f"{str(path)!r} is not valid WebAssembly: {err}") from None
    payload = info.custom(md.SECTION)
    meta = md.parse(payload) if payload is not None else None
    imports = [{"module": i.module, "name": i.name, "type": str(i.type)} for i in info.imports]
    exports = [{"name": e.name, "kind": e.kind, "type": str(e.type)} for e in info.exports]
    if args.graph:
        if meta is None or not isinstance(meta.raw.get("graph"), list):
            raise ModelFormatError(f"{str(path)!r} carries no graph listing")
        print("\n".join(one_line(str(line)) for line in meta.raw["graph"]))
        return 0
    if args.json:
        out: dict[str, object] = dict(meta.raw) if meta else {"model": None}
        out.update(imports=imports, exports=exports, size_bytes=len(data))
        print(json.dumps(out, indent=2))
        return 0
    lines = [f"{path}: {len(data)} bytes"]
    if meta is None:
        lines.append("  not a wasmnn model (no 'wasmnn.model' metadata section)")
    else:
        lines.append(f"  producer: {meta.producer}; kernel ABI: {meta.abi_module}")
        lines += [f"  dim {dim.name}: {dim.min}..{dim.max}" for dim in meta.dims]
        for kind, tensors in (("input", meta.inputs), ("output", meta.outputs)):
            lines += [f"  {kind} {tensor}" for tensor in tensors]
        lines.append(f"  ops: {', '.join(meta.ops)}")
        lines.append(f"  weights: {meta.weights_bytes} bytes; activation arena: "
                     f"{meta.arena_bytes} bytes (of {meta.raw.get('activation_bytes', '?')} "
                     f"without sharing); memory: {meta.memory_bytes} bytes")
        if meta.dims:
            smallest = ", ".join(f"{d.name}={d.min}" for d in meta.dims)
            largest = ", ".join(f"{d.name}={d.max}" for d in meta.dims)
            lines.append(f"  memory at the smallest dims ({smallest}): {meta.memory_bytes} "
                         f"bytes; at the largest ({largest}): {meta.memory_bytes_max} bytes")
    lines.append(f"  imports ({len(imports)}):")
    lines += [f"    {imp['module']}.{imp['name']}: {imp['type']}" for imp in imports]
    lines.append(f"  exports ({len(exports)}):")
    lines += [f"    {exp['name']}: {exp['type']}" for exp in exports]
    # NOTE: every name comes from the file: escaped, so it cannot drive the terminal.
    print("\n".join(one_line(line) for line in lines))
    return 0
