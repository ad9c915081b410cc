"""``np.einsum`` on traced tensors, as reductions, permutes, reshapes and one ``matmul`` (or
a broadcast ``mul`` when nothing is contracted) per pair of operands, left to right.

Written with ndarray methods, so an operand may be a traced tensor or a constant array.
Covered: explicit and implicit outputs, ``...`` (broadcast axes), any number of operands,
sums over indices one operand alone carries. Not covered: repeated indices within an operand
(diagonals), a ``TraceError``.
"""

from __future__ import annotations

import math
import string
from typing import Any

import numpy as np

from .trace_math import F, arithmetic, matmul
from .trace_source import unsupported


def _expand_ellipsis(inputs: str, output: str, arrow: str,
                     operands: tuple[Any, ...]) -> tuple[list[str], str]:
    """The terms and output with ``...`` replaced by letters no term uses, one per broadcast
    axis, aligned from the right as numpy aligns them."""
    terms = inputs.split(",")
    free = iter(sorted(set(string.ascii_letters) - set(inputs + output)))
    widths = [np.ndim(op) - len(t.replace("...", "")) for t, op in zip(terms, operands)
              if "..." in t]
    dots = "".join(next(free) for _ in range(max(widths, default=0)))
    terms = [t.replace("...", dots[len(dots) - (np.ndim(op) - len(t) + 3):]) if "..." in t
             else t for t, op in zip(terms, operands)]
    if not arrow:
        singles = ",".join(terms).replace(",", "")
        output = dots + "".join(sorted(c for c in set(singles) - set(dots)
                                       if singles.count(c) == 1))
    return terms, output.replace("...", dots)


def _parse(subscripts: Any, operands: tuple[Any, ...]) -> tuple[list[str], str]:
    if not isinstance(subscripts, str):
        raise unsupported("np.einsum in the interleaved (operand, axes) form",
                          "pass a subscripts string such as 'bij,bjk->bik'")
    inputs, arrow, output = subscripts.replace(" ", "").partition("->")
    if len(inputs.split(",")) != len(operands):
        raise ValueError(f"einsum {subscripts!r} names {len(inputs.split(','))} operands, "
                         f"got {len(operands)}")
    terms, output = _expand_ellipsis(inputs, output, arrow, operands)
    for term, operand in zip(terms, operands):
        if len(term) != np.ndim(operand) or "." in term:
            raise ValueError(f"einsum term {term!r} has {len(term)} indices for an operand "
                             f"of rank {np.ndim(operand)}")
        if len(set(term)) != len(term):
            raise unsupported(f"np.einsum({subscripts!r}) with a repeated index in {term!r} "
                              "(a diagonal)", "take the diagonal with a mask and a sum")
    return terms, output


def _sum_out(x: Any, term: str, keep: set[str]) -> tuple[Any, str]:
    axes = tuple(i for i, c in enumerate(term) if c not in keep)
    if not axes:
        return x, term
    return x.sum(axis=axes), "".join(c for c in term if c in keep)


def _arrange(x: Any, term: str, order: str) -> Any:
    """``x`` with its axes (named by ``term``) permuted into ``order``."""
    perm = [term.index(c) for c in order]
    return x if perm == sorted(perm) else x.transpose(perm)


def _merged(sizes: list[Any], what: str) -> Any:
    if len(sizes) <= 1:
        return sizes[0] if sizes else 1
    if any(isinstance(s, str) for s in sizes):
        raise unsupported(f"np.einsum merging the {what} indices of sizes {sizes}, one "
                          "symbolic", "give the symbolic axis its own index in both "
                          "operands (a batch index) or use matmul")
    return math.prod(sizes)


def _reshaped(x: Any, shape: list[Any]) -> Any:
    same = [str(d) for d in x.shape] == [str(d) for d in shape]
    return x if same else x.reshape(tuple(shape))


def _contract(a: Any, ia: str, b: Any, ib: str, needed: str) -> tuple[Any, str]:
    """The product of two operands, summed over the indices no later term needs."""
    a, ia = _sum_out(a, ia, set(ib) | set(needed))
    b, ib = _sum_out(b, ib, set(ia) | set(needed))
    batch = [c for c in ia if c in ib and c in needed]
    inner = [c for c in ia if c in ib and c not in needed]
    left = [c for c in ia if c not in ib]
    right = [c for c in ib if c not in ia]
    size_a, size_b = dict(zip(ia, a.shape)), dict(zip(ib, b.shape))
    # A batch index of size 1 in one operand broadcasts against the other's.
    size = {**size_a, **size_b, **{c: size_a[c] for c in batch if str(size_a[c]) != "1"}}
    a = _arrange(a, ia, "".join(batch + left + inner))
    b = _arrange(b, ib, "".join(batch + inner + right))
    lead_a, lead_b = [size_a[c] for c in batch], [size_b[c] for c in batch]
    out = "".join(batch + left + right)
    if not inner:
        a = _reshaped(a, lead_a + [size[c] for c in left] + [1] * len(right))
        b = _reshaped(b, lead_b + [1] * len(left) + [size[c] for c in right])
        return arithmetic(F.mul, a, b), out
    # Row indices stay separate axes (matmul broadcasts over them); the summed and column
    # indices merge into one axis each.
    rows = [size[c] for c in left] or [1]
    depth = _merged([size[c] for c in inner], "summed")
    cols = _merged([size[c] for c in right], "column")
    a = _reshaped(a, lead_a + rows + [depth])  # (*batch, *M, K)
    b = _reshaped(b, lead_b + [1] * (len(rows) - 1 if batch else 0) + [depth, cols])
    product = matmul(a, b)  # (*batch, *M, N)
    return _reshaped(product, [size[c] for c in batch + left + right]), out


def einsum(subscripts: Any, *operands: Any) -> Any:
    """``np.einsum(subscripts, *operands)`` written with primitives.

    Raises:
        TraceError: the interleaved form, or a repeated index within a term.
        ValueError: terms that do not match the operands.
    """
    terms, output = _parse(subscripts, operands)
    acc, term = operands[0], terms[0]
    for k in range(1, len(terms)):
        needed = "".join(terms[k + 1:]) + output
        acc, term = _contract(acc, term, operands[k], terms[k], needed)
    acc, term = _sum_out(acc, term, set(output))
    return _arrange(acc, term, output)
