"""The model compiler: trace an ``nn.Module`` -> graph IR -> passes -> a ``.wasm`` module."""

from .errors import CompileError, TraceError, UnsupportedOpError
from .export import compile_graph, export
from .graph import Graph, Node, Value
from .interpreter import interpret
from .onnx import from_onnx
from .passes import optimize
from .quantize import quantize
from .trace import trace

__all__ = ["CompileError", "Graph", "Node", "TraceError", "UnsupportedOpError", "Value",
           "compile_graph", "export", "from_onnx", "interpret", "optimize", "quantize", "trace"]
