"""``wasmnn export``: compile a Python model (or later an ONNX file) to a ``.wasm`` model."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

_DYNAMIC = re.compile(r"^(\w+):(-?\d+)=(\w+):(\d+):(\d+)$")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "export", help="compile a model to a .wasm file",
        description="Compile an nn.Module to a WebAssembly model module. MODEL names a "
                    "factory (or Module) as 'path/to/file.py:name' or 'package.module:name'; "
                    "it is called with no arguments and must return an nn.Module.",
        epilog="example:\n  wasmnn export examples/digits/model.py:load_trained -o digits.wasm "
               "\\\n      --input input0=1x64 --dynamic input0:0=batch:1:256",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", metavar="MODEL", help="FILE.py:NAME or module:NAME")
    parser.add_argument("-o", "--output", metavar="OUT.wasm", required=True)
    parser.add_argument("--input", metavar="NAME=SHAPE", action="append", default=[],
                        help="an input and its example shape, e.g. input0=8x64 (float32); "
                             "repeat in forward's argument order")
    parser.add_argument("--dynamic", metavar="NAME:AXIS=DIM:MIN:MAX", action="append",
                        default=[], help="make an axis symbolic, e.g. input0:0=batch:1:64")
    parser.add_argument("--standalone", action="store_true",
                        help="link the kernels in and import only WASI: the module reads .npy "
                             "inputs on stdin and writes .npy outputs on stdout under any WASI "
                             "engine (wasmtime, Node, wasmnn wasi run)")
    parser.add_argument("--isa", choices=("simd128", "relaxed", "scalar"), default="simd128",
                        help="kernel variant for --standalone (default: %(default)s, which "
                             "every SIMD engine runs; relaxed needs relaxed-SIMD support)")
    parser.set_defaults(handler=export_command)


def load_model(spec: str) -> Any:
    """The Module named by ``FILE.py:NAME`` or ``module:NAME`` (called if it is a factory).

    Raises:
        ValueError: ``spec`` is malformed or names nothing.
    """
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name:
        raise ValueError(f"model {spec!r}: expected FILE.py:NAME or module:NAME")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise FileNotFoundError(f"model file {target!r} does not exist")
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        if module_spec is None or module_spec.loader is None:
            raise ValueError(f"cannot import {target!r}")
        module = importlib.util.module_from_spec(module_spec)
        sys.path.insert(0, str(path.parent.resolve()))
        try:
            module_spec.loader.exec_module(module)
        finally:
            sys.path.pop(0)
    else:
        module = importlib.import_module(target)
    if not hasattr(module, name):
        raise ValueError(f"{target!r} has no attribute {name!r}")
    obj = getattr(module, name)
    return obj() if callable(obj) and not hasattr(obj, "forward") else obj


def _shape(text: str, spec: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(d) for d in text.lower().split("x"))
    except ValueError:
        shape = ()
    if not shape or any(d < 1 for d in shape):
        raise ValueError(f"--input {spec!r}: expected NAME=SHAPE like x=8x64")
    return shape


def export_command(args: argparse.Namespace) -> int:
    from .export import export

    model = load_model(args.model)
    if hasattr(model, "eval"):
        model.eval()
    if not args.input:
        raise ValueError("give each input's example shape with --input NAME=SHAPE")
    inputs = {}
    for spec in args.input:
        name, sep, text = spec.partition("=")
        if not sep:
            raise ValueError(f"--input {spec!r}: expected NAME=SHAPE like x=8x64")
        inputs[name] = np.zeros(_shape(text, spec), np.float32)
    dynamic: dict[str, dict[int, tuple[str, int, int]]] = {}
    for spec in args.dynamic:
        match = _DYNAMIC.match(spec)
        if not match:
            raise ValueError(f"--dynamic {spec!r}: expected NAME:AXIS=DIM:MIN:MAX like "
                             "x:0=batch:1:64")
        name, axis, dim, low, high = match.groups()
        dynamic.setdefault(name, {})[int(axis)] = (dim, int(low), int(high))
    positional = all(re.fullmatch(r"input\d+", n) for n in inputs)
    wasm = export(model, tuple(inputs.values()) if positional else inputs, args.output,
                  dynamic=dynamic or None, standalone=args.standalone, isa=args.isa)
    print(f"wrote {args.output} ({len(wasm)} bytes)")
    return 0
