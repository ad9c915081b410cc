"""``modelc.export``: Module -> optimised graph -> model ``.wasm`` bytes."""

from __future__ import annotations

import json
import os
import warnings
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import nn
from wasm_kernels.wasm import read_module

from .codegen import generate
from .graph import Graph
from .metadata import SECTION
from .passes import PIPELINE, Pass, optimize, winograd_convs
from .standalone import generate_standalone
from .trace import DynamicSpec, trace

TARGETS = ("wasmnn", "wasi", "web")
"""Where an exported module runs: the wasmnn runtime (kernels linked at load time), any
WASI engine (``standalone``), or a web page / Worker / Node through ``wasmnn.js``."""
WEB_LOADER = Path(__file__).parent / "web" / "wasmnn.js"
"""The dependency-free ES module that runs a ``target="web"`` export in a browser."""


def producer() -> str:
    try:
        return f"wasmnn {version('wasmnn')}"
    except PackageNotFoundError:
        return "wasmnn (not installed)"


def pipeline(winograd: bool = True) -> tuple[Pass, ...]:
    """The passes an export runs: all of them, or all but ``winograd_convs``."""
    return PIPELINE if winograd else tuple(p for p in PIPELINE if p is not winograd_convs)


def compile_graph(graph: Graph, *, standalone: bool = False, isa: str = "simd128",
                  winograd: bool = True) -> bytes:
    """Optimise ``graph`` and generate its model module (linked or standalone)."""
    graph = optimize(graph, pipeline(winograd))
    if standalone:
        return generate_standalone(graph, producer(), isa)
    return generate(graph, producer())[0]


def warn_default_bounds(graph: Graph, wasm: bytes) -> None:
    """Warn about each symbolic dim the ONNX importer bounded by its default, not the user:
    the module's memory at the largest dims follows from that bound."""
    defaulted = graph.meta.get("default_dims", ())
    if not defaulted:
        return
    meta = json.loads(read_module(wasm).custom(SECTION) or b"{}")
    for name in defaulted:
        low, high = graph.dims[name]
        warnings.warn(f"symbolic dim {name!r} was bounded by the default range [{low}, {high}] "
                      f"(no bound given): at the largest dims the model needs "
                      f"{meta.get('memory_bytes_max')} bytes of memory "
                      f"({meta.get('memory_bytes')} at the smallest); bound it with export's "
                      f"dynamic= or --dynamic INPUT:AXIS={name}:MIN:MAX",
                      stacklevel=3)


def sidecar_path(path: str | os.PathLike[str]) -> Path:
    """Where the weights of a model written to ``path`` go: ``model.wasm`` -> ``model.weights``."""
    return Path(path).with_suffix(".weights")


def export(model: nn.Module | Graph | str | os.PathLike[str], example_inputs: Any = None,
           path: str | os.PathLike[str] | None = None, *, dynamic: DynamicSpec | None = None,
           standalone: bool = False, isa: str = "simd128", sidecar: bool = False,
           target: str | None = None, winograd: bool = True) -> bytes:
    """Compile ``model`` to a WebAssembly model module and return its bytes.

    Args:
        model: an ``nn.Module`` (traced on ``example_inputs``), an already built ``Graph``,
            or the path of an ``.onnx`` file (imported with ``modelc.from_onnx``).
        example_inputs: ``{name: ndarray}`` or a tuple of arrays (``input0``, ``input1``, ...);
            for ONNX, optional ``{input: shape}`` fixing those inputs' dims.
        path: also write the bytes to this file.
        dynamic: ``{input: {axis: (dim_name, min, max)}}`` for symbolic dimensions.
        standalone: link the kernels in and import only WASI: ``_start`` reads ``.npy``
            inputs from stdin and writes ``.npy`` outputs to stdout (see
            ``modelc.standalone``), so any WASI engine runs it.
        isa: kernel variant linked into a standalone module: ``"simd128"`` (portable,
            the default) or ``"relaxed"`` (relaxed SIMD) or ``"scalar"``.
        sidecar: keep the weights out of the module, in ``sidecar_path(path)`` (for models
            too large to embed comfortably); the runtime reads and checks that file at load.
        target: one of ``TARGETS``. ``"wasi"`` is ``standalone=True``. ``"web"`` is a
            standalone module for a web page, a Web Worker or Node; with ``path``, the
            loader ``wasmnn.js`` (``WEB_LOADER``) is written beside it.
        winograd: run dense 3x3 stride-1 convs as Winograd F(2x2, 3x3) or F(4x4, 3x3)
            (``passes.winograd_convs``, the default); False keeps them direct convs (bits
            closer to a direct conv's, smaller weights).

    Raises:
        TraceError, UnsupportedOpError, CompileError: the model cannot be compiled; the
            message names the op and the user's source line.
        ValueError: ``sidecar`` without ``path``, or with ``standalone``; an unknown
            ``target``.
        TypeError: ``model`` is none of a module, a graph or an ``.onnx`` path.
    """
    if target is not None and target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; available: {list(TARGETS)}")
    standalone = standalone or target in ("wasi", "web")
    if sidecar and (path is None or standalone):
        raise ValueError("sidecar=True needs a path to write next to, and a non-standalone "
                         "module (a standalone module carries its weights)")
    if isinstance(model, (str, os.PathLike)) and str(model).endswith(".onnx"):
        from .onnx import from_onnx

        graph = from_onnx(model, example_inputs, dynamic)
    elif isinstance(model, Graph):
        graph = model
    elif isinstance(model, nn.Module):
        graph = trace(model, example_inputs, dynamic)
    else:
        raise TypeError(f"expected an nn.Module, a Graph or a path to an .onnx file, got "
                        f"{model!r}")
    if sidecar:
        assert path is not None
        weights_file = sidecar_path(path)
        wasm, weights = generate(optimize(graph, pipeline(winograd)), producer(),
                                 sidecar=weights_file.name)
        weights_file.write_bytes(weights)
    else:
        wasm = compile_graph(graph, standalone=standalone, isa=isa, winograd=winograd)
    warn_default_bounds(graph, wasm)
    if path is not None:
        with open(path, "wb") as out:
            out.write(wasm)
        if target == "web":
            (Path(path).parent / WEB_LOADER.name).write_bytes(WEB_LOADER.read_bytes())
    return wasm
