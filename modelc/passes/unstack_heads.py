"""unstack_heads: the query, key and value heads cut from one stacked (3, B, H, T, D) permute
(ViT's and Whisper's attention as torch exports it) become one head permute each.

The pattern (``qkv.reshape(B, T, 3, H, D).permute(2, 0, 3, 1, 4)`` then ``unbind(0)``, which
torch's exporters write as three slices or one split along axis 0, each reshaped to
(B, H, T, D))::

    x = permute(qkv, (2, 0, 3, 1, 4)); q = reshape(slice(x, 0, 0, 1), (B, H, T, D)) ...

becomes, for each piece ``i``::

    q = permute(reshape(slice(qkv, 2, i, i + 1), (B, T, H, D)), (0, 2, 1, 3))

the head permute ``fuse_attention`` matches (the slice is a copy of one piece's rows, as the
stacked permute was a copy of all three). Only a permute whose every user cuts one piece
along axis 0 that only a reshape to that piece's (B, H, T, D) reads is rewritten.
"""

from __future__ import annotations

from ..graph import Graph, Node, Value
from .fuse_attention import HEADS

STACKED = (2, 0, 3, 1, 4)
"""The permute from (B, T, S, H, D) to (S, B, H, T, D): S stacked heads tensors first."""


def _pieces(graph: Graph, node: Node) -> list[tuple[int, Value, Node]] | None:
    """(index along axis 0, piece, the reshape reading it) for every piece users of the
    stacked permute ``node`` cut, or None when a user is anything else."""
    stacked = node.output
    count = stacked.shape[0]
    if not isinstance(count, int) or any(out is stacked for out in graph.outputs.values()):
        return None
    pieces = []
    for user in stacked.users:
        if user.op == "slice" and user.attrs["dim"] % 5 == 0 and user.attrs["step"] == 1:
            start = user.attrs["start"] + (count if user.attrs["start"] < 0 else 0)
            if user.output.shape[0] != 1 or not 0 <= start < count:
                return None
            pieces.append((start, user.output))
        elif user.op == "split" and user.attrs["dim"] % 5 == 0 and all(
                out.shape[0] == 1 for out in user.outputs):
            pieces.extend(enumerate(user.outputs))
        else:
            return None
    found = []
    for index, piece in pieces:
        reader = piece.users[0] if len(piece.users) == 1 else None
        if reader is None or reader.op != "reshape" or any(
                out is piece for out in graph.outputs.values()) \
                or tuple(reader.output.shape) != tuple(piece.shape[1:]):
            return None
        found.append((index, piece, reader))
    return found


def _rewrite(graph: Graph, node: Node, pieces: list[tuple[int, Value, Node]]) -> None:
    """Replace ``node``, its cuts and their reshapes by a slice, reshape and head permute
    per piece, each writing its reshape's output."""
    source = node.inputs[0]
    b, t, _, h, d = source.shape
    cuts = {piece.producer for _, piece, _ in pieces}
    for _, _, reader in pieces:
        graph.remove(reader)
    for cutter in cuts:
        if cutter is not None:
            graph.remove(cutter)
    position = graph.nodes.index(node)
    graph.remove(node)
    for index, _, reader in pieces:
        name = f"{node.name}_{index}"
        cut = graph.insert(position, f"{name}_cut", "slice", [source], ("input",),
                           {"dim": 2, "start": index, "end": index + 1, "step": 1},
                           node.meta, Value(f"{name}_cut", (b, t, 1, h, d), source.dtype))
        rows = graph.insert(position + 1, f"{name}_rows", "reshape", [cut], ("input",),
                            {"shape": (b, t, h, d)}, node.meta,
                            Value(f"{name}_rows", (b, t, h, d), source.dtype))
        position += 2
        graph.insert(position, f"{name}_heads", "permute", [rows], ("input",),
                     {"dims": HEADS}, node.meta, reader.output)
        position += 1


def unstack_heads(graph: Graph) -> Graph:
    for node in list(graph.nodes):
        if node.op != "permute" or tuple(node.attrs["dims"]) != STACKED \
                or len(node.inputs[0].shape) != 5:
            continue
        pieces = _pieces(graph, node)
        if pieces:
            _rewrite(graph, node, pieces)
    return graph
