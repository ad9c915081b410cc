"""Python control flow in a traced forward, and what export says when it stops: branches on
static values and on symbolic dims decided by their range are taken; data-dependent Python,
unsupported calls and index forms raise TraceError naming the call, the user's line and
the alternative; what traces but does not lower raises CompileError."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from executors import Lambda

import modelc
import runtime
from modelc import CompileError, TraceError

X = np.random.default_rng(3).standard_normal((6, 4, 8)).astype(np.float32)
LINE = r"at .*test_trace_guards.py:\d+"


def _trace(fn: Callable[..., Any], low: int = 1, high: int = 8) -> Any:
    return modelc.trace(Lambda(fn), (X,), dynamic={"input0": {0: ("batch", low, high)}})


def _branch_on_batch(h: Any) -> Any:
    if h.shape[0] > 4:
        return h * 2
    return h - 1


def test_branch_on_a_dim_decided_by_its_range_is_taken() -> None:
    wasm = modelc.export(Lambda(_branch_on_batch), (X,),
                         dynamic={"input0": {0: ("batch", 5, 16)}})
    with runtime.load(wasm) as session:
        for batch in (5, 16):
            x = np.random.default_rng(batch).standard_normal((batch, 4, 8)).astype(np.float32)
            np.testing.assert_allclose(session.run(x)["output0"], x * 2, rtol=1e-6)
    graph = _trace(_branch_on_batch, 1, 4)
    assert [n.op for n in graph.nodes] == ["sub"]


@pytest.mark.parametrize("fn, message", [
    (_branch_on_batch, r"branch on the symbolic dim 'batch' > 4: 'batch' ranges over \[1, 8\], "
                       r"and the answer differs within it \(False for \[1, 4\], True for "
                       r"\[5, 8\]\); export one model per range that decides it, dynamic "
                       r"\('batch', 1, 4\), \('batch', 5, 8\)"),
    (lambda h: h if h.shape[0] == 3 else -h, r"'batch' == 3.*\('batch', 1, 2\), "
                                             r"\('batch', 3, 3\), \('batch', 4, 8\)"),
    (lambda h: h.squeeze(), r"'batch' == 1: .*False for \[2, 8\]"),
])
def test_branch_on_a_dim_its_range_does_not_decide(fn: Callable[..., Any], message: str) -> None:
    with pytest.raises(TraceError, match=rf"{message}.*{LINE}"):
        _trace(fn)


def test_branches_between_two_dims_and_on_numpy_ints() -> None:
    y = np.zeros((2, 3), np.float32)
    dynamic = {"input0": {0: ("batch", 1, 4)}, "input1": {0: ("rows", 5, 9)}}
    model = Lambda(lambda h, g: h if h.shape[0] < g.shape[0] and h.shape[0] <= np.int64(4)
                   else -h)
    assert [n.op for n in modelc.trace(model, (X, y), dynamic=dynamic).nodes] == []
    dynamic["input1"][0] = ("rows", 3, 9)
    with pytest.raises(TraceError, match=r"'batch' < 'rows', symbolic dims in \[1, 4\] and "
                                         rf"\[3, 9\]: the ranges overlap.*{LINE}"):
        modelc.trace(model, (X, y), dynamic=dynamic)


def test_static_dims_branch_as_python() -> None:
    graph = _trace(lambda h: h.sum(-1) if h.shape[2] == 8 and h.ndim == 3 else h)
    assert [n.op for n in graph.nodes] == ["sum"]


@pytest.mark.parametrize("fn, what", [
    (lambda h: h if h else -h, r"the truth value of a traced tensor"),
    (lambda h: h if float(h.sum()) > 0 else -h, r"float\(\) of a traced tensor"),
    (lambda h: h * h.max().item(), r"x.item\(\) of a traced tensor"),
    (lambda h: h * int(h[0, 0, 0]), r"int\(\) of a traced tensor"),
    (lambda h: h if (h > 0).any() else -h, r"the truth value"),
    (lambda h: h[:, 0].tolist(), r"x.tolist\(\)"),
    (lambda h: sum(row for row in h), r"iteration over the symbolic axis 'batch'"),
    (lambda h: h[0, 0, range(h[0, 0, 0])], r"a traced tensor \(%\w+\) used as a Python int"),
])
def test_python_that_needs_values_names_the_line_and_np_where(fn: Callable[..., Any],
                                                              what: str) -> None:
    with pytest.raises(TraceError, match=rf"data-dependent control flow: {what}.*depends on "
                                         rf"the input's values.*np.where.*{LINE}"):
        _trace(fn)


@pytest.mark.parametrize("fn, message", [
    (lambda h: h.cumprod(0), r"ndarray.cumprod is not supported on a traced tensor; supported: "
                            r"\['T', 'all'.*'var'\]"),
    (lambda h: h.frobnicate(), r"attribute 'frobnicate' \(ndarray has none either\)"),
    (lambda h: np.cumprod(h, 0), r"np.cumprod is not supported.*supported numpy functions: "
                                r"\[.*'concatenate'.*\] and the ufuncs \[.*'tanh'"),
    (lambda h: np.logaddexp2(h, h), r"np.logaddexp2 is not supported.*supported ufuncs"),
    (lambda h: np.add.accumulate(h), r"np.add.accumulate is not supported"),
    (lambda h: np.exp(h, out=h), r"np.exp\(..., out=\) is not supported"),
    (lambda h: h.sum(0, out=h), r"sum\(out=...\) is not supported"),
    (lambda h: h.argmax(0, out=h), r"argmax\(out=...\) is not supported"),
    (lambda h: np.where(h > 0), r"np.where\(condition\) with one argument"),
    (lambda h: h[h > 0], r"boolean mask that is a traced tensor.*np.where\(mask, x, 0\)"),
    (lambda h: h[1:], r"the slice slice\(1, None, None\) of the symbolic axis 0 \('batch' in "
                      r"\[1, 8\]\) is not supported.*fixed window a:b with 0 <= a < b <= 1"),
    (lambda h: h[-1], r"the index -1 on the symbolic axis 0.*0 <= i < 1"),
    (lambda h: h[:, [0, 1], [2, 3]], r"several index arrays in one subscript"),
    (lambda h: h[[0, 1]], r"the index array \[0, 1\] on the symbolic axis 0 \('batch' in "
                          r"\[1, 8\]\).*pick rows 0 <= i < 1"),
    (lambda h: h.mean(-1, where=h > 0), r"mean\(where=...\) is not supported"),
    (lambda h: np.zeros((h.shape[0], 4)), r"the symbolic dim 'batch' \(in \[1, 8\]\) was "
                                          r"used as a Python int.*broadcasting"),
    (lambda h: h[:, :, :0], r"empty slice"),
    (lambda h: h.reshape(h.shape[0] * 4, 8), r"arithmetic on the symbolic dim 'batch' "
                                             r"\('batch' \* 4\).*reshape\(batch, -1\)"),
    (lambda h: h.reshape(-1, 8), r"reshape \['batch', 4, 8\] -> \[-1, 8\]: a shape holds a "
                                 r"symbolic dim \('batch'\) only as an axis of its own"),
    (lambda h: np.linalg.norm(h, ord=3, axis=1), r"np.linalg.norm\(ord=3, axis=1\)"),
    (lambda h: np.pad(h, 1, mode="mean"), r"np.pad\(mode='mean'\).*modes that trace"),
    (lambda h: h.round(2), r"round\(decimals/out\)"),
    (lambda h: np.cumsum(h, axis=0), r"np.cumsum over the symbolic axis 0 \('batch' in "
                                     r"\[1, 8\]\)"),
    (lambda h: np.tril(h.transpose(1, 2, 0)), r"np.tril of a tensor whose last two axes "
                                              r"\[8, 'batch'\] are not fixed"),
    (lambda h: h * h.size, r"x.size of a traced tensor with symbolic dims \['batch'\]"),
    (lambda h: np.einsum("bii->bi", h), r"repeated index in 'bii' \(a diagonal\)"),
    (lambda h: h.prod(0), r"prod over the symbolic axis 0 \('batch' in \[1, 8\]\)"),
    (lambda h: h << 1, r"operator '<<' is not supported"),
    (lambda h: h & h, r"operator '&' on \['float32', 'float32'\].*bool tensors only"),
    (lambda h: np.dot(h, X), r"np.dot with a right operand of rank > 2.*a @ b"),
    (lambda h: np.asarray(h), r"converted to a numpy array.*nn.functional.embedding"),
])
def test_unsupported_python_names_the_call_line_and_alternative(fn: Callable[..., Any],
                                                                message: str) -> None:
    with pytest.raises(TraceError, match=rf"{message}.*{LINE}"):
        _trace(fn)


def test_unsupported_method_is_also_an_attribute_error_for_hasattr() -> None:
    seen: list[bool] = []
    _trace(lambda h: seen.append(hasattr(h, "cumprod")) or h)
    assert seen == [False]


@pytest.mark.parametrize("fn, error, message", [
    (lambda h: h[:, 4], IndexError, r"index 4 is out of bounds for axis 1 with size 4"),
    (lambda h: h[:, [0, 9]], IndexError, r"index array spans \[0, 9\], out of bounds for "
                                         r"axis 1 with size 4"),
    (lambda h: h[0, 0, 0, 0], IndexError, r"too many indices: 4 for a tensor of rank 3"),
    (lambda h: h[..., ...], IndexError, r"single ellipsis"),
    (lambda h: h[:, np.array([True, False])], IndexError, r"boolean mask of shape \(2,\) does "
                                                          r"not match the axes 1..1"),
    (lambda h: h[:, np.array([0.5])], IndexError, r"integer or bool dtype, got float64"),
    (lambda h: h.sum(axis=3), np.exceptions.AxisError, r"axis 3 is out of bounds"),
    (lambda h: h.transpose(0, 0, 1), ValueError, r"axes \[0, 0, 1\] do not permute"),
    (lambda h: h[:, :2].squeeze(1), ValueError, r"cannot squeeze axis 1.*size is not 1"),
    (lambda h: np.broadcast_to(h, (2, 4, 8)), ValueError,
     r"cannot broadcast a tensor of shape \['batch', 4, 8\] to \[2, 4, 8\]"),
    (lambda h: np.einsum("bs,d->bsd", h, h), ValueError, r"term 'bs' has 2 indices for an "
                                                         r"operand of rank 3"),
])
def test_bad_indices_and_axes_fail_as_numpy_does(fn: Callable[..., Any], error: type,
                                                message: str) -> None:
    with pytest.raises(error, match=message):
        _trace(fn)
    with pytest.raises(error):
        fn(X)


@pytest.mark.parametrize("fn, message", [
    (lambda h: h.astype(np.uint32).astype(np.float32), r"cast float32 -> uint32 is not lowered"),
    (lambda h: h.astype(np.float16).astype(np.float32), r"cast float32 -> float16 is not lowered"),
])
def test_what_traces_but_does_not_lower_is_a_compile_error(fn: Callable[..., Any],
                                                          message: str) -> None:
    graph = _trace(fn)
    expected = fn(X[:2])
    got = modelc.interpret(graph, {"input0": X[:2]})["output0"]
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    with pytest.raises(CompileError, match=message):
        modelc.compile_graph(graph)


def test_reductions_over_non_adjacent_axes_lower_as_one_per_axis() -> None:
    graph = _trace(lambda h: h.sum(axis=(0, 2)) + h.max(axis=(0, 2)))
    reductions = [(n.op, n.attrs["dim"]) for n in graph.nodes if n.op in ("sum", "amax")]
    assert reductions == [("sum", 2), ("sum", 0), ("amax", 2), ("amax", 0)]
