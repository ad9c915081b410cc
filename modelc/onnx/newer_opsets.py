"""Models at a default-domain opset newer than the importer follows.

Opsets 24 to 28 re-versioned many ops only to change their element types (admit
float8e8m0, int2, bfloat16, ...; ReduceLogSum dropped its integer ones) or to add an
attribute whose default keeps the old behaviour (Cast's ``round_mode``, SpaceToDepth's
``mode``). A node whose op differs from the version the importer follows only so (and which
leaves any new attribute unset) imports as at the importer's newest opset; a model with any
other node (an op whose inputs, outputs or old attributes changed, or an op new since then)
is refused, naming those ops. NOTE: that list was checked by hand against opsets 24-28.
Ops new or changed since opset 23 that the importer implements at a newer version
(``FOLLOWED``) import as that version. ``changed_ops(..., exact=True)`` also tells whether
a model older than opset 7 needs converting at all (``older_opsets``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

_DOMAINS = ("", "ai.onnx")
FOLLOWED = {"Swish": 24, "SwiGLU": 28, "SpaceToDepth": 28, "CumProd": 26,
            "BitShift": 28}
"""Ops new or changed since opset 23 that the importer implements at a newer version (which
it names)."""


def _attributes(schema: Any) -> dict[str, str]:
    return {name: str(attr.default_value) for name, attr in schema.attributes.items()}


def _unchanged(node: Any, followed: int, version: int, exact: bool) -> bool:
    """Whether ``node`` means the same at opset ``version`` as at ``followed``: its op has
    the same outputs, the same inputs (optional ones added after them, which ``node`` leaves
    out, aside), keeps every attribute (with its default), and ``node`` sets none of the
    attributes added since. Element types may differ: the importer checks the operands'
    own."""
    from onnx import defs

    try:
        new = defs.get_schema(node.op_type, version, "")
        old = defs.get_schema(node.op_type, followed, "")
    except defs.SchemaError:
        return False
    if new.since_version == old.since_version or exact:
        return new.since_version == old.since_version
    old_attrs, new_attrs = _attributes(old), _attributes(new)
    inputs = [(i.name, i.option) for i in old.inputs]
    added = new.inputs[len(inputs):]
    given = [name for name in node.input[len(inputs):] if name] if added else []
    return ([(i.name, i.option) for i in new.inputs[:len(inputs)]] == inputs
            and all(i.option == defs.OpSchema.FormalParameterOption.Optional for i in added)
            and not given
            and [o.name for o in new.outputs] == [o.name for o in old.outputs]
            and old_attrs.items() <= new_attrs.items()
            and not {a.name for a in node.attribute} - set(old_attrs))


def _nodes(graph: Any) -> Iterator[Any]:
    for node in graph.node:
        if node.domain in _DOMAINS:
            yield node
        for attr in node.attribute:
            for body in [attr.g] if attr.HasField("g") else list(attr.graphs):
                yield from _nodes(body)


def changed_ops(proto: Any, followed: int, version: int, exact: bool = False) -> list[str]:
    """The default-domain ops of ``proto``'s nodes (subgraphs included) that do not mean at
    opset ``version`` what they mean at ``followed`` (with ``exact``: that are not the same
    op version); an op unknown to ``onnx.defs`` counts as changed."""
    return sorted({node.op_type for node in _nodes(proto.graph)
                   if not _unchanged(node, followed, version, exact)
                   and not _followed_since(node.op_type, version)})


def _followed_since(op: str, version: int) -> bool:
    """Whether ``op`` at opset ``version`` is the version of it ``FOLLOWED`` names."""
    from onnx import defs

    if op not in FOLLOWED:
        return False
    try:
        return defs.get_schema(op, version, "").since_version == FOLLOWED[op]
    except defs.SchemaError:
        return False
