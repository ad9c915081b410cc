"""``wasmnn export``: compile a Python model or an ONNX file to a ``.wasm`` model."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .export import TARGETS, WEB_LOADER
from .onnx import DEFAULT_DIM_RANGE

QUANTIZE_MODES = ("int8", "int8-dynamic")
_DYNAMIC = re.compile(r"^(\w+):(-?\d+)=(\w+):(\d+):(\d+)$")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "export", help="compile a model to a .wasm file",
        description="Compile an nn.Module or an ONNX model to a WebAssembly model module. "
                    "MODEL is a .onnx file, or names a factory (or Module) as "
                    "'path/to/file.py:name' or 'package.module:name'; a factory is called "
                    "with no arguments and must return an nn.Module.",
        epilog="examples:\n  wasmnn export examples/digits/model.py:load_trained -o digits.wasm "
               "\\\n      --input input0=1x64 --dynamic input0:0=batch:1:256\n"
               "  wasmnn export bert.onnx -o bert.wasm --input-shape input_ids=1x128 "
               "\\\n      --input-shape attention_mask=1x128",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", metavar="MODEL", help="MODEL.onnx, FILE.py:NAME or module:NAME")
    parser.add_argument("-o", "--output", metavar="OUT.wasm", required=True)
    parser.add_argument("--input", metavar="NAME=SHAPE", action="append", default=[],
                        help="an input and its example shape, e.g. input0=8x64 (float32); "
                             "repeat in forward's argument order (Python models)")
    parser.add_argument("--input-shape", metavar="NAME=SHAPE", action="append", default=[],
                        help="fix every dim of an ONNX model's input, e.g. input_ids=1x128 "
                             "(its symbolic dims otherwise stay symbolic, bounded by "
                             f"--dynamic or {DEFAULT_DIM_RANGE[0]}..{DEFAULT_DIM_RANGE[1]})")
    parser.add_argument("--dynamic", metavar="NAME:AXIS=DIM:MIN:MAX", action="append",
                        default=[], help="make an axis symbolic, e.g. input0:0=batch:1:64 "
                                         "(for ONNX: bound it, or rename its symbolic dim)")
    parser.add_argument("--standalone", action="store_true",
                        help="link the kernels in and import only WASI: the module reads .npy "
                             "inputs on stdin and writes .npy outputs on stdout under any WASI "
                             "engine (wasmtime, Node, wasmnn wasi run)")
    parser.add_argument("--target", choices=TARGETS, default=None,
                        help="where the module runs: wasmnn (the runtime links the kernels; "
                             "the default), wasi (= --standalone) or web (a standalone module "
                             "plus wasmnn.js, the ES module that runs it in a page, a Web "
                             "Worker or Node, written beside OUT.wasm)")
    parser.add_argument("--sidecar", action="store_true",
                        help="write the weights to OUT.weights beside the module instead of "
                             "embedding them (for large models); wasmnn run finds the file")
    parser.add_argument("--isa", choices=("simd128", "relaxed", "scalar"), default="simd128",
                        help="kernel variant for --standalone (default: %(default)s, which "
                             "every SIMD engine runs; relaxed needs relaxed-SIMD support)")
    parser.add_argument("--winograd", choices=("on", "off"), default="on",
                        help="run dense 3x3 stride-1 convs with >= 16 channels as Winograd "
                             "F(2x2, 3x3) or F(4x4, 3x3) (default: %(default)s; off keeps "
                             "them direct convs: smaller weights, bits closer to a direct "
                             "conv's)")
    parser.add_argument("--quantize", choices=QUANTIZE_MODES, default=None,
                        help="int8: linear/matmul/conv (and adds, concats) in integers with "
                             "activation scales calibrated on --calibrate; int8-dynamic: "
                             "int8 weights, activation scales computed per run (transformers)")
    parser.add_argument("--calibrate", metavar="DATA.npz", default=None,
                        help="calibration inputs for --quantize int8: one array per model "
                             "input, named after it, whose first axis indexes the examples")
    parser.add_argument("--percentile", type=float, default=None,
                        help="clip calibrated ranges to this percentile, e.g. 99.99 "
                             "(default: min/max)")
    parser.set_defaults(handler=export_command)


def load_model(spec: str) -> Any:
    """The Module named by ``FILE.py:NAME`` or ``module:NAME`` (called if it is a factory).

    Raises:
        ValueError: ``spec`` is malformed or names nothing.
    """
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name:
        raise ValueError(f"model {spec!r}: expected FILE.py:NAME or module:NAME")
    if target.endswith(".py") and not Path(target).is_file():
        raise FileNotFoundError(f"model file {target!r} does not exist")
    try:
        module = _import(target)
        if not hasattr(module, name):
            raise ValueError(f"{target!r} has no attribute {name!r}")
        obj = getattr(module, name)
        return obj() if callable(obj) and not hasattr(obj, "forward") else obj
    except ValueError:
        raise
    except Exception as err:  # noqa: BLE001 - the user's code failed, however it did
        raise ValueError(f"model {spec!r} failed to load: {type(err).__name__}: {err}") from None


def _import(target: str) -> Any:
    if not target.endswith(".py"):
        return importlib.import_module(target)
    path = Path(target)
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    if module_spec is None or module_spec.loader is None:
        raise ValueError(f"cannot import {target!r}")
    module = importlib.util.module_from_spec(module_spec)
    sys.path.insert(0, str(path.parent.resolve()))
    try:
        module_spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    return module


def _shape(text: str, spec: str, option: str = "--input") -> tuple[int, ...]:
    try:
        shape = tuple(int(d) for d in text.lower().split("x"))
    except ValueError:
        shape = ()
    if not shape or any(d < 1 for d in shape):
        raise ValueError(f"{option} {spec!r}: expected NAME=SHAPE like x=8x64")
    return shape


def _shapes(specs: list[str], option: str) -> dict[str, tuple[int, ...]]:
    shapes = {}
    for spec in specs:
        name, sep, text = spec.partition("=")
        if not sep:
            raise ValueError(f"{option} {spec!r}: expected NAME=SHAPE like x=8x64")
        shapes[name] = _shape(text, spec, option)
    return shapes


def _dynamic(specs: list[str]) -> dict[str, dict[int, tuple[str, int, int]]]:
    dynamic: dict[str, dict[int, tuple[str, int, int]]] = {}
    for spec in specs:
        match = _DYNAMIC.match(spec)
        if not match:
            raise ValueError(f"--dynamic {spec!r}: expected NAME:AXIS=DIM:MIN:MAX like "
                             "x:0=batch:1:64")
        name, axis, dim, low, high = match.groups()
        dynamic.setdefault(name, {})[int(axis)] = (dim, int(low), int(high))
    return dynamic


def _onnx_graph(args: argparse.Namespace) -> Any:
    from .onnx import from_onnx

    if args.input:
        raise ValueError("--input gives a Python model's example inputs; for an ONNX model "
                         "use --input-shape NAME=SHAPE (or nothing: the model's shapes)")
    if not Path(args.model).is_file():
        raise FileNotFoundError(f"ONNX model {args.model!r} does not exist")
    return from_onnx(args.model, _shapes(args.input_shape, "--input-shape"),
                     _dynamic(args.dynamic))


def _python_model(args: argparse.Namespace) -> tuple[Any, Any]:
    """The Module and its example inputs (a tuple when all are named inputN)."""
    if args.input_shape:
        raise ValueError("--input-shape is for ONNX models; give a Python model's example "
                         "inputs with --input NAME=SHAPE")
    model = load_model(args.model)
    if hasattr(model, "eval"):
        model.eval()
    if not args.input:
        raise ValueError("give each input's example shape with --input NAME=SHAPE")
    inputs = {name: np.zeros(shape, np.float32)
              for name, shape in _shapes(args.input, "--input").items()}
    positional = all(re.fullmatch(r"input\d+", n) for n in inputs)
    return model, tuple(inputs.values()) if positional else inputs


def _quantized(args: argparse.Namespace, model: Any, inputs: Any, dynamic: Any) -> Any:
    """``model`` quantized as ``--quantize`` asks (a graph), or ``model`` itself."""
    from .quantize import examples_from_npz, quantize

    if args.quantize is None:
        if args.calibrate is not None or args.percentile is not None:
            raise ValueError("--calibrate and --percentile need --quantize int8")
        return model
    if args.quantize == "int8-dynamic":
        if args.calibrate is not None:
            raise ValueError("--calibrate is for --quantize int8; int8-dynamic computes "
                             "activation scales per run")
        return quantize(model, [inputs] if inputs is not None else [], activations="dynamic",
                        dynamic=dynamic)
    if args.calibrate is None:
        raise ValueError("--quantize int8 needs --calibrate DATA.npz (example inputs, one "
                         "array per model input, first axis indexing the examples)")
    return quantize(model, examples_from_npz(args.calibrate), percentile=args.percentile,
                    dynamic=dynamic)


def export_command(args: argparse.Namespace) -> int:
    """Compile ``args.model`` (a ``.onnx`` file, or a Python model) to ``args.output``.

    Raises:
        NotImplementedError: the model uses ops the compiler does not cover (exit code 8).
        ValueError: the model cannot be loaded, traced or compiled as it is (exit code 7).
    """
    from .errors import CompileError, UnsupportedOpError
    from .export import export

    try:
        if args.model.endswith(".onnx"):
            model, inputs, dynamic = _onnx_graph(args), None, None
        else:
            (model, inputs), dynamic = _python_model(args), _dynamic(args.dynamic) or None
        model = _quantized(args, model, inputs, dynamic)
        wasm = export(model, inputs if args.quantize is None else None, args.output,
                      dynamic=dynamic,
                      standalone=args.standalone, isa=args.isa,
                      sidecar=args.sidecar, target=args.target,
                      winograd=args.winograd == "on")
    except UnsupportedOpError as err:
        raise NotImplementedError(str(err)) from err
    except CompileError as err:
        raise ValueError(str(err)) from err
    except (AttributeError, RecursionError) as err:
        # NOTE: raised by the model's own forward while it is traced.
        raise ValueError(f"cannot trace {args.model!r}: {type(err).__name__}: {err}") from err
    print(f"wrote {args.output} ({len(wasm)} bytes)")
    if args.target == "web":
        print(f"wrote {Path(args.output).parent / WEB_LOADER.name} (the loader)")
    return 0
