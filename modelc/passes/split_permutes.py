"""split_permutes: a permute whose axes do not merge into the 4 the strided copy kernel
takes (torch's PixelShuffle exported as a 6-D Transpose; a 5-D one whose batch of 1 keeps
its neighbours from merging) becomes a reshape to its canonical form, one permute per
block move, and a reshape back.

The canonical form drops the size-1 axes and merges the axes that stay together (adjacent
in the input and in the output). A block move takes one run of axes to an earlier place,
so it has at most 4 runs of axes that move together: each lowers to one strided copy.
Moves are chosen as in insertion sort: place the next output axis, with the longest run of
axes that follow it in both orders. Reshapes are views, so only the moves copy.
"""

from __future__ import annotations

import math

from ..graph import Dim, Graph, Node, Value
from ..ops._strided import RANK, _merge, dense_strides


def _independent_axes(shape: tuple[Dim, ...], dims: list[int]) -> int:
    """How many axes the permute's strided copy keeps after merging (``permute.lower``)."""
    strides = dense_strides(shape)
    source = [None if shape[d] == 1 else strides[d] for d in dims]
    out, _ = _merge([(shape[d],) for d in dims], [source, [None] * len(dims)])
    return len(out)


def _canonical(shape: tuple[Dim, ...], dims: list[int]) -> tuple[list[Dim], list[int]]:
    """(shape, dims) with size-1 axes dropped and axes adjacent in both orders merged, but
    a symbolic axis kept apart (no IR dim is a product with a name; the strided copy
    merges it with its neighbours by strides anyway)."""
    kept = [a for a in range(len(shape)) if shape[a] != 1]
    number = {axis: i for i, axis in enumerate(kept)}
    runs: list[list[int]] = []  # runs of kept input axes, in output order
    for axis in (number[d] for d in dims if shape[d] != 1):
        if runs and runs[-1][-1] + 1 == axis and not any(
                isinstance(shape[kept[a]], str) for a in (runs[-1][-1], axis)):
            runs[-1].append(axis)
        else:
            runs.append([axis])
    by_input = sorted(range(len(runs)), key=lambda r: runs[r][0])
    sizes = [math.prod(int(shape[kept[a]]) for a in runs[r]) if len(runs[r]) > 1
             else shape[kept[runs[r][0]]] for r in by_input]
    return sizes, [by_input.index(r) for r in range(len(runs))]


def _block_moves(target: list[int]) -> list[list[int]]:
    """Permutes (each ``dims`` of the current tensor) that reach ``target`` by block moves."""
    current = list(range(len(target)))
    moves = []
    for i in range(len(target)):
        if current[i] == target[i]:
            continue
        j = current.index(target[i])
        end = j + 1
        while end < len(current) and end - j + i < len(target) \
                and current[end] == target[end - j + i]:
            end += 1
        order = [*range(i), *range(j, end), *range(i, j), *range(end, len(current))]
        moves.append(order)
        current = [current[d] for d in order]
    return moves


def _rewrite(graph: Graph, node: Node, sizes: list[Dim], target: list[int]) -> None:
    """Replace ``node`` by reshape -> block moves -> reshape, writing its output value."""
    source, result = node.inputs[0], node.output
    position = graph.nodes.index(node)
    graph.remove(node)
    value = graph.insert(position, f"{node.name}_flat", "reshape", [source], ("input",),
                         {"shape": tuple(sizes)}, node.meta,
                         Value(f"{node.name}_flat", tuple(sizes), source.dtype))
    for step, dims in enumerate(_block_moves(target)):
        position += 1
        shape = tuple(value.shape[d] for d in dims)
        value = graph.insert(position, f"{node.name}_move{step}", "permute", [value],
                             ("input",), {"dims": tuple(dims)}, node.meta,
                             Value(f"{node.name}_move{step}", shape, source.dtype))
    graph.insert(position + 1, node.name, "reshape", [value], ("input",),
                 {"shape": tuple(result.shape)}, node.meta, result)


def split_permutes(graph: Graph) -> Graph:
    for node in list(graph.nodes):
        if node.op != "permute":
            continue
        shape = tuple(node.inputs[0].shape)
        dims = [d % len(shape) for d in node.attrs["dims"]]
        if _independent_axes(shape, dims) <= RANK:
            continue
        _rewrite(graph, node, *_canonical(shape, dims))
    return graph
