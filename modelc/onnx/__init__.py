"""ONNX import: ``from_onnx(model)`` turns an ONNX model into the graph IR.

``onnx`` is an optional dependency, imported when a model is imported. The op tables
(``ops_math``, ``ops_nn``, ``ops_shape``) map each ONNX op to ``nn.functional`` calls.
"""

from .importer import DEFAULT_DIM_RANGE, from_onnx
from .op_table import OPS, OPSETS, check_supported

__all__ = ["DEFAULT_DIM_RANGE", "OPS", "OPSETS", "check_supported", "from_onnx"]
