"""ONNX Einsum, rewritten into the ops it stands for: sums over letters only one operand
has, then pairwise contractions as (batched) matrix products between permutes and reshapes.

Covers the forms models export (``bij,bjk->bik``, ``bhqd,bhkd->bhqk``, ``...ij,jk->...ik``,
``ij->ji``, ``bij->b``); a letter repeated within one term (``ii->i``, ``...ii``) first takes
that operand's diagonal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nn import functional as F

from .fold import is_known, product
from .node import OnnxNode

OpFn = Callable[[OnnxNode], Any]
_SPARE = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
"""Letters that stand in for the axes of an ellipsis (ONNX equations use lower case)."""


def _terms(n: OnnxNode, equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """The input terms and the output term with every ``...`` spelled out in spare letters
    (right-aligned across operands, as numpy broadcasts them)."""
    lhs, arrow, out = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise n.error(f"equation {equation!r} has {len(terms)} terms for {len(ranks)} inputs")
    widest = max((rank - len(t.replace("...", "")) for t, rank in zip(terms, ranks)
                  if "..." in t), default=0)
    spare = _SPARE[:widest]
    spelled = [t.replace("...", spare[widest - (rank - len(t.replace("...", ""))):])
               for t, rank in zip(terms, ranks)]
    if not arrow:
        letters = "".join(spelled)
        out = spare + "".join(sorted(c for c in set(letters) if letters.count(c) == 1
                                     and c not in spare))
    out = out.replace("...", spare)
    for term, rank in zip(spelled, ranks):
        if len(term) != rank:
            raise n.error(f"term {term!r} of {equation!r} does not fit an operand of rank "
                          f"{rank}")
    return spelled, out


def _diagonal(n: OnnxNode, x: Any, term: str) -> tuple[Any, str]:
    """``x`` reduced to its diagonal along each letter ``term`` repeats: the two axes moved
    last, merged, and read every (size + 1)-th element; the letter then appears once."""
    if len(set(term)) != len(term) and is_known(x):
        unique = "".join(dict.fromkeys(term))
        return np.einsum(f"{term}->{unique}", x), unique
    while len(set(term)) != len(term):
        letter = next(c for c in term if term.count(c) > 1)
        first = term.index(letter)
        second = term.index(letter, first + 1)
        size = x.shape[first]
        if not isinstance(size, int) or x.shape[second] != size:
            raise n.error(f"the diagonal of {letter!r} in {term!r} needs one fixed size, got "
                          f"{x.shape[first]!r} and {x.shape[second]!r}")
        rest = [k for k in range(len(term)) if k not in (first, second)]
        moved = F.permute(x, (*rest, first, second))
        flat = _reshape(moved, [*moved.shape[:-2], size * size])  # (..., size * size)
        x = F.slice(flat, len(rest), 0, None, size + 1)  # (..., size)
        term = "".join(term[k] for k in rest) + letter
    return x, term


def _group(n: OnnxNode, sizes: dict[str, Any], letters: str) -> Any:
    size = product([sizes[c] for c in letters])
    if size is None:
        raise n.error(f"axes {letters!r} merge symbolic dims {[sizes[c] for c in letters]}; "
                      "fix them with input_shapes")
    return size


def _arrange(x: Any, have: str, want: str) -> Any:
    """``x`` with axes ``have`` permuted to ``want`` (the same letters)."""
    order = tuple(have.index(c) for c in want)
    if order == tuple(range(len(order))):
        return x
    return np.transpose(x, order) if is_known(x) else F.permute(x, order)


def _reshape(x: Any, shape: Sequence[Any]) -> Any:
    return x.reshape([int(d) for d in shape]) if is_known(x) else F.reshape(x, tuple(shape))


def _contract(n: OnnxNode, a: Any, ta: str, b: Any, tb: str, keep: set[str],
              sizes: dict[str, Any]) -> tuple[Any, str]:
    """``a`` and ``b`` multiplied and summed over the letters they share that ``keep`` does
    not hold: one (batched) matrix product."""
    batch = "".join(c for c in ta if c in tb and c in keep)
    summed = "".join(c for c in ta if c in tb and c not in keep)
    left = "".join(c for c in ta if c not in tb)
    right = "".join(c for c in tb if c not in ta)
    shape = [sizes[c] for c in batch + left + right]
    if not batch and is_known(b) and not is_known(a):
        # A weight: a linear over the summed axes, the left ones (symbolic too) untouched.
        a = _arrange(a, ta, left + summed)
        if len(summed) != 1:
            a = F.reshape(a, (*a.shape[:len(left)], _group(n, sizes, summed)))
        weight = _reshape(_arrange(b, tb, summed + right),
                          [_group(n, sizes, g) for g in (summed, right)])
        out = F.linear(a, np.ascontiguousarray(weight.T))
        return (out if len(right) == 1 else F.reshape(out, tuple(shape))), left + right
    a = _reshape(_arrange(a, ta, batch + left + summed),
                 [_group(n, sizes, g) for g in (batch, left, summed)])
    b = _reshape(_arrange(b, tb, batch + summed + right),
                 [_group(n, sizes, g) for g in (batch, summed, right)])
    out = np.matmul(a, b) if is_known(a, b) else F.matmul(a, b)
    return _reshape(out, shape), batch + left + right


def einsum(n: OnnxNode) -> Any:
    """Einsum: every operand first takes its diagonals (``_diagonal``) and sums the letters
    no other term or the output has, then the operands contract pairwise, left to right;
    the result is permuted to the output."""
    operands = [n.input(i) for i in range(len(n.inputs))]
    terms, out = _terms(n, n.attr("equation"), [len(x.shape) for x in operands])
    if is_known(*operands):
        return np.einsum(f"{','.join(terms)}->{out}", *operands).astype(operands[0].dtype)
    for i, (term, x) in enumerate(zip(terms, operands)):
        operands[i], terms[i] = _diagonal(n, x, term)
    sizes: dict[str, Any] = {}
    for term, x in zip(terms, operands):
        for c, d in zip(term, x.shape):
            if sizes.setdefault(c, d) != d:
                raise n.error(f"letter {c!r} stands for sizes {sizes[c]} and {d} (broadcasting "
                              "a size-1 axis in Einsum is not supported)")
    for i, (term, x) in enumerate(zip(terms, operands)):
        elsewhere = set(out).union(*(t for j, t in enumerate(terms) if j != i))
        alone = [k for k, c in enumerate(term) if c not in elsewhere]
        if alone:
            operands[i] = (x.sum(axis=tuple(alone)) if is_known(x)
                           else F.sum(x, dim=tuple(alone), keepdim=False))
            terms[i] = "".join(c for c in term if c in elsewhere)
    x, term = operands[0], terms[0]
    for i in range(1, len(operands)):
        keep = set(out).union(*terms[i + 1:])
        x, term = _contract(n, x, term, operands[i], terms[i], keep, sizes)
    return _arrange(x, term, out)


OPS: dict[str, OpFn] = {"Einsum": einsum}
