"""gather_one_hot: a linear over a one-hot encoding becomes a row gather.

``linear(cast(eq(i[..., None], arange(n)), float32), w, b)`` multiplies a matrix that is
zero but for one 1 per row: the result is row ``i`` of ``w.T + b``, or ``b`` where ``i`` is
outside ``[0, n)`` (an all-zero one-hot row). Exporters write categorical inputs this way
(magika's byte embedding: 2048 bytes one-hot over 257 values, then a 257 -> 64 matmul),
and the gemm does ``n`` times the work of the copy, on an ``n`` times larger operand.

It becomes ``embedding(where(0 <= i < n, i, n), table)``, where ``table`` is ``w.T + b``
with ``b`` appended as row ``n``, so the result is the same to the bit. It applies when the
compared constant is ``arange(n)`` along the last axis, ``i`` is an int32 or int64 tensor
of static shape whose last axis is 1, the linear's weight and bias are constant and it has
no epilogue, and the comparison and the cast have no other user.

ONNX's OneHot arrives as an ``embedding`` of a constant table (one row per value and a row
for indices out of range, see the importer). A linear over such an embedding, directly or
behind a reshape that keeps the last axis, becomes one embedding of the table
``table @ w.T + b``, gathered by the same rows: one row per index instead of a gemm over
``n``-wide one-hot rows.
"""

from __future__ import annotations

import numpy as np

from ..graph import Graph, Node, Value


def _one_hot(graph: Graph, linear: Node) -> tuple[Value, list[Node]] | None:
    """The index tensor one-hot encoded into ``linear``'s input, and the eq and cast."""
    cast = linear.inputs[0].producer
    if cast is None or cast.op != "cast" or not _single_use(graph, cast.output):
        return None
    eq = cast.inputs[0].producer
    if eq is None or eq.op != "eq" or len(eq.inputs) != 2 or not _single_use(graph, eq.output):
        return None
    for indices, values in (eq.inputs, eq.inputs[::-1]):
        n = linear.inputs[1].shape[1]
        if (values.data is None or indices.data is not None
                or indices.dtype not in ("int32", "int64")
                or not all(isinstance(d, int) for d in indices.shape)
                or not indices.shape or indices.shape[-1] != 1
                or values.data.shape[-1:] != (n,) or any(d != 1 for d in values.data.shape[:-1])
                or len(values.data.shape) > len(indices.shape)
                or not np.array_equal(values.data.reshape(-1), np.arange(n))):
            continue
        return indices, [eq, cast]
    return None


def _single_use(graph: Graph, value: Value) -> bool:
    return len(value.users) == 1 and value not in graph.outputs.values()


def _table(linear: Node) -> np.ndarray | None:
    """``w.T + b`` with the row ``b`` appended, for a constant weight and bias."""
    named = linear.named_inputs()
    weight = named["weight"].data
    if weight is None or weight.dtype != np.float32 or linear.attrs.get("epilogue"):
        return None
    if "bias" in named:
        bias = named["bias"].data
        if bias is None:
            return None
    else:
        bias = np.zeros(weight.shape[0], np.float32)
    return np.concatenate([weight.T + bias, bias[None]]).astype(np.float32)


def _rewrite(graph: Graph, linear: Node, indices: Value, matched: list[Node],
             table: np.ndarray) -> None:
    n = table.shape[0] - 1
    position = graph.nodes.index(matched[0])
    for node in [linear, *matched[::-1]]:
        graph.remove(node)
    name, meta = linear.name, linear.meta
    shape = indices.shape[:-1]

    def add(op: str, inputs: list[Value], input_names: tuple[str, ...], attrs: dict,
            dtype: str, suffix: str) -> Value:
        nonlocal position
        out = Value(f"{name}_{suffix}", shape, dtype)
        graph.insert(position, f"{name}_{suffix}", op, inputs, input_names, attrs, meta, out)
        position += 1
        return out

    flat = add("reshape", [indices], ("input",), {"shape": shape}, indices.dtype, "index")
    if indices.dtype != "int64":
        flat = add("cast", [flat], ("input",), {"dtype": np.int64}, "int64", "index64")
    below = add("lt", [flat], ("input",), {"other": n}, "bool", "below")
    inside = add("where", [below, flat], ("condition", "input"), {"other": n}, "int64",
                 "inside")
    nonnegative = add("ge", [flat], ("input",), {"other": 0}, "bool", "nonnegative")
    row = add("where", [nonnegative, inside], ("condition", "input"), {"other": n}, "int64",
              "row")
    weight = Value(f"{name}_table", table.shape, "float32", data=table)
    graph.insert(position, name, "embedding", [row, weight], ("input", "weight"), {}, meta,
                 linear.output)


def _embedded(graph: Graph, linear: Node) -> list[Node] | None:
    """The embedding of a constant table into ``linear``'s input, and a reshape between."""
    chain: list[Node] = []
    value = linear.inputs[0]
    while (node := value.producer) is not None and _single_use(graph, value):
        chain.insert(0, node)
        if node.op == "embedding":
            table, batch = node.inputs[1], linear.output.shape[:-1]
            reshapes_symbols = len(chain) > 1 and sum(isinstance(d, str) for d in batch) > 1
            return chain if (table.data is not None and table.dtype == "float32"
                             and _is_one_hot_table(table.data) and not reshapes_symbols) \
                else None
        if node.op != "reshape" or len(chain) > 1 or node.inputs[0].shape[-1:] != \
                value.shape[-1:]:
            return None
        value = node.inputs[0]
    return None


def _is_one_hot_table(table: np.ndarray) -> bool:
    """Is ``table`` (n + 1, n), ``on`` on the diagonal and ``off`` elsewhere (OneHot's)?"""
    if table.ndim != 2 or table.shape[0] != table.shape[1] + 1:
        return False
    n = table.shape[1]
    expected = np.full(table.shape, table[-1, 0], table.dtype)
    expected[np.arange(n), np.arange(n)] = table[0, 0]
    return bool(np.array_equal(table, expected))


def _fold_into_embedding(graph: Graph, linear: Node, chain: list[Node],
                         table: np.ndarray) -> None:
    """``linear(reshape?(embedding(rows, t)))`` as ``embedding(reshape?(rows), t @ w.T + b)``,
    ``table`` being ``w.T + b`` with ``b`` appended."""
    embedding = chain[0]
    rows, data = embedding.inputs[0], embedding.inputs[1].data
    assert data is not None
    folded = (data.astype(np.float64) @ table[:-1].astype(np.float64)
              - (data.sum(axis=1, keepdims=True) - 1.0) * table[-1]).astype(np.float32)
    position = graph.nodes.index(embedding)
    for node in [linear, *chain[::-1]]:
        graph.remove(node)
    name, meta, shape = linear.name, linear.meta, linear.output.shape[:-1]
    if len(chain) > 1:
        rows = graph.insert(position, f"{name}_rows", "reshape", [rows], ("input",),
                            {"shape": tuple(-1 if isinstance(d, str) else d for d in shape)},
                            meta, Value(f"{name}_rows", shape, rows.dtype))
        position += 1
    weight = Value(f"{name}_table", folded.shape, "float32", data=folded)
    graph.insert(position, name, "embedding", [rows, weight], ("input", "weight"), {}, meta,
                 linear.output)


def gather_one_hot(graph: Graph) -> Graph:
    for linear in [n for n in graph.nodes if n.op == "linear"]:
        found = _one_hot(graph, linear)
        chain = _embedded(graph, linear) if found is None else None
        table = _table(linear) if found is not None or chain is not None else None
        if table is None:
            continue
        if found is not None:
            _rewrite(graph, linear, found[0], found[1], table)
        elif chain is not None:
            _fold_into_embedding(graph, linear, chain, table)
    return graph
