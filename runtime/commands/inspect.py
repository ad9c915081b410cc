"""``wasmnn inspect MODEL.wasm``: imports, exports and model metadata, without running it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from wasm_kernels.wasm import WasmFormatError, read_module

from .. import metadata as md
from ..errors import ModelFormatError


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
    parser.set_defaults(handler=inspect)


def inspect(args: argparse.Namespace) -> int:
    path = Path(args.model)
    if not path.is_file():
        raise FileNotFoundError(f"file {str(path)!r} does not exist")
    data = path.read_bytes()
    try:
        info = read_module(data)
    except WasmFormatError as err:
        raise ModelFormatError(f"{str(path)!r} is not valid WebAssembly: {err}") from None
    payload = info.custom(md.SECTION)
    meta = md.parse(payload) if payload is not None else None
    imports = [{"module": i.module, "name": i.name, "type": str(i.type)} for i in info.imports]
    exports = [{"name": e.name, "kind": e.kind, "type": str(e.type)} for e in info.exports]
    if args.graph:
        if meta is None or not isinstance(meta.raw.get("graph"), list):
            raise ModelFormatError(f"{str(path)!r} carries no graph listing")
        print("\n".join(str(line) for line in meta.raw["graph"]))
        return 0
    if args.json:
        out: dict[str, object] = dict(meta.raw) if meta else {"model": None}
        out.update(imports=imports, exports=exports, size_bytes=len(data))
        print(json.dumps(out, indent=2))
        return 0
    print(f"{path}: {len(data)} bytes")
    if meta is None:
        print("  not a wasmnn model (no 'wasmnn.model' metadata section)")
    else:
        print(f"  producer: {meta.producer}; kernel ABI: {meta.abi_module}")
        for dim in meta.dims:
            print(f"  dim {dim.name}: {dim.min}..{dim.max}")
        for kind, tensors in (("input", meta.inputs), ("output", meta.outputs)):
            for tensor in tensors:
                print(f"  {kind} {tensor}")
        print(f"  ops: {', '.join(meta.ops)}")
        print(f"  weights: {meta.weights_bytes} bytes; activation arena: {meta.arena_bytes} "
              f"bytes (of {meta.raw.get('activation_bytes', '?')} without sharing); memory: "
              f"{meta.memory_bytes} bytes")
    print(f"  imports ({len(imports)}):")
    for imp in imports:
        print(f"    {imp['module']}.{imp['name']}: {imp['type']}")
    print(f"  exports ({len(exports)}):")
    for exp in exports:
        print(f"    {exp['name']}: {exp['type']}")
    return 0
