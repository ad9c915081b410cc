"""The ONNX importer's op table and what it checks of a model before importing it: which ops
and opsets it covers (``OPS``, ``DOMAIN_OPS``, ``OPSETS``), loading a model from bytes or a
file, the opset its op functions follow, and every unsupported node listed at once."""

from __future__ import annotations

import os
from typing import Any

from ..errors import CompileError, UnsupportedOpError
from . import (
    fused,
    merged_transpose,
    onnx_ml,
    ops_activation,
    ops_bitshift,
    ops_control,
    ops_deform_conv,
    ops_detection,
    ops_einsum,
    ops_index,
    ops_layout,
    ops_math,
    ops_nn,
    ops_pool,
    ops_quantized,
    ops_resize,
    ops_rnn,
    ops_roi_align,
    ops_shape,
    ops_spectral,
    set_value,
)
from .functions import expandable
from .newer_opsets import changed_ops

OPS = {**ops_activation.OPS, **ops_layout.OPS, **ops_math.OPS, **ops_nn.OPS, **ops_pool.OPS,
       **ops_resize.OPS, **ops_rnn.OPS, **ops_shape.OPS, **ops_control.OPS, **ops_einsum.OPS,
       **ops_index.OPS, **ops_quantized.OPS, **ops_detection.OPS,
       **ops_spectral.OPS, **ops_bitshift.OPS,
       **ops_roi_align.OPS, **ops_deform_conv.OPS}
"""Every supported ONNX op type (default domain) and its import function."""
DOMAIN_OPS: dict[str, dict[str, Any]] = {"com.microsoft": {**ops_quantized.MICROSOFT,
                                                           **fused.MICROSOFT},
                                         onnx_ml.DOMAIN: onnx_ml.OPS,
                                         set_value.DOMAIN: {**set_value.OPS,
                                                            **merged_transpose.OPS}}
"""Supported ops of other domains (onnxruntime's contrib ops, and the importer's own rewrites),
by domain."""
OPSETS = (9, 23)
"""The default-domain opset versions the importer follows (inclusive)."""
CONVERTED = (1, 8)
"""Older opsets the importer first converts to ``OPSETS[0]`` (inclusive), unless every op of
the model is the version it is there."""
_DOMAINS = ("", "ai.onnx")


def load(model: Any) -> Any:
    import onnx

    if isinstance(model, onnx.ModelProto):
        return model
    try:
        if isinstance(model, bytes):
            return onnx.load_from_string(model)
        if isinstance(model, (str, os.PathLike)):
            return onnx.load(os.fspath(model))
    except (OSError, MemoryError):
        raise
    except Exception as err:  # noqa: BLE001 - protobuf's DecodeError and friends
        raise ValueError(f"not a valid ONNX model: {type(err).__name__}: {err}") from None
    raise TypeError(f"expected an onnx.ModelProto, its bytes or a .onnx file path, got "
                    f"{type(model).__name__}")


def opset_of(proto: Any) -> int:
    """The opset the op functions follow for ``proto``: its own, or ``OPSETS[1]`` for a newer
    one whose ops differ from theirs at ``OPSETS[1]`` only by element types, or ``OPSETS[0]``
    for an older one that ``upgrade`` left as it is (its ops are the versions opset 9 has).

    Raises:
        CompileError: the opset is outside ``OPSETS`` and ``CONVERTED``, or newer with ops
            that changed.
    """
    versions = [o.version for o in proto.opset_import if o.domain in _DOMAINS]
    if versions and CONVERTED[0] <= versions[0] < OPSETS[0]:
        return OPSETS[0]
    if versions and versions[0] > OPSETS[1]:
        changed = changed_ops(proto, OPSETS[1], versions[0])
        if not changed:
            return OPSETS[1]
        raise CompileError(f"ONNX opset {versions[0]}: the importer follows opsets up to "
                           f"{OPSETS[1]}, and these ops of the model changed (or are new) "
                           f"since then: {changed}; export the model at opset {OPSETS[1]}")
    if not versions or not OPSETS[0] <= versions[0] <= OPSETS[1]:
        raise CompileError(f"ONNX opset {versions[0] if versions else None} is not supported; "
                           f"expected {OPSETS[0]} to {OPSETS[1]}, or {CONVERTED[0]} to "
                           f"{CONVERTED[1]} (converted on import); re-export the model or "
                           "convert it with onnx.version_converter")
    return versions[0]


def _unsupported(graph: Any, opset: int, where: str = "") -> list[tuple[str, str, str]]:
    """``(node, op, where)`` for every node of ``graph`` and its subgraphs (If branches,
    Loop and Scan bodies) whose op the importer does not cover, nor its ONNX function at
    ``opset``; ``where`` names the enclosing subgraph attribute, empty at the top level."""
    found = []
    for i, node in enumerate(graph.node):
        op = f"{node.domain + '.' if node.domain else ''}{node.op_type}"
        name = node.name or f"#{i}"
        if op_function(node) is None and not expandable(node, opset):
            found.append((name, op, where))
        for attr in node.attribute:
            for body in [attr.g] if attr.HasField("g") else list(attr.graphs):
                found += _unsupported(body, opset, f"{where}{name!r}.{attr.name} > ")
    return found


def op_function(node: Any) -> Any:
    """The import function of ``node``'s op (by domain and type), or None."""
    if node.domain in _DOMAINS:
        return OPS.get(node.op_type)
    return DOMAIN_OPS.get(node.domain, {}).get(node.op_type)


def check_supported(proto: Any) -> None:
    """Raise once, listing every node whose op the importer does not cover, control-flow
    subgraphs included, and which of those ops appear only inside such a subgraph.

    Raises:
        UnsupportedOpError: naming each such node and its op type.
    """
    versions = [o.version for o in proto.opset_import if o.domain in _DOMAINS]
    bad = _unsupported(proto.graph, min(versions[0] if versions else OPSETS[1], OPSETS[1]))
    if not bad:
        return
    nodes = ", ".join(f"{where}{name!r} ({op})" for name, op, where in bad)
    top = {op for _, op, where in bad if not where}
    nested = sorted({op for _, op, where in bad if where} - top)
    inside = (f"; only inside control-flow subgraphs (If/Loop/Scan): {nested}" if nested
              else "")
    raise UnsupportedOpError(f"the ONNX model uses {len(bad)} unsupported node(s): {nodes}"
                             f"{inside}; supported ops: {sorted(OPS)} and "
                             f"{ {d: sorted(ops) for d, ops in DOMAIN_OPS.items()} }")
