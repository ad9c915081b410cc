"""ONNX's own operator conformance cases (``onnx.backend.test.case.node``) through wasmnn.

Each case is a small ``ModelProto`` with inputs and the outputs onnx's numpy reference
computed. ``run_case`` imports it with ``modelc.from_onnx`` (input shapes fixed from the
case's inputs), compiles it, runs it in wasm and sorts the outcome into one of:

- ``pass``: every output matches (floats within 1e-4 relative + absolute, integers and
  bools exactly, NaN where the reference has NaN);
- ``pass-const``: refused as given (a weight, shape or axes computed at run time), but
  passes with the inputs after the first as initializers, as real models hold them;
- ``ort-agrees``: differs from onnx's reference but equals onnxruntime (the two references
  disagree, e.g. Resize align_corners when downsampling by a non-integral scale);
- ``refused``: the compiler refused it with one of its errors naming the op;
- ``WRONG``: a mismatch, a crash, or an error that does not name the op (defects);
- ``out-of-scope``: the case needs what wasmnn does not aim at (sequence or optional
  values, training ops, float16/bfloat16/float8/string/complex/4-bit tensors), with why.

Run as a script to print the counts per op::

    python tests/cases/conformance.py [--kernels relaxed] [--ops Abs,Conv] [--show WRONG]
"""

from __future__ import annotations

import argparse
import collections
import importlib
import pkgutil
import sys
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import modelc

PASS, PASS_CONST, ORT_AGREES = "pass", "pass-const", "ort-agrees"
REFUSED, WRONG, OUT = "refused", "WRONG", "out-of-scope"
STATUSES = (PASS, PASS_CONST, ORT_AGREES, REFUSED, WRONG, OUT)

_OUT_DTYPES = {"FLOAT16", "BFLOAT16", "STRING", "COMPLEX64", "COMPLEX128", "INT4", "UINT4",
               "FLOAT4E2M1", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
               "FLOAT8E8M0", "INT2", "UINT2"}
"""Tensor element types wasmnn does not take as inputs or give as outputs."""
_TRAINING_DOMAINS = {"ai.onnx.preview.training"}


@dataclass
class Case:
    """One conformance case: its name, the op it exercises, the model and one data set."""

    name: str
    op: str
    model: Any
    inputs: list[Any]
    outputs: list[Any]


@dataclass
class Outcome:
    """What happened to one case: a status of ``STATUSES`` and, unless it passed, why."""

    case: str
    op: str
    status: str
    detail: str = ""


def modules() -> list[str]:
    """The names of the case modules of ``onnx.backend.test.case.node`` (not imported)."""
    import onnx.backend.test.case.node as package

    return sorted(m.name for m in pkgutil.iter_modules(package.__path__))


def _main_op(model: Any, module: str) -> str:
    nodes = model.graph.node
    return nodes[0].op_type if len(nodes) == 1 else module


def _arrays(values: Sequence[Any]) -> list[Any]:
    """Numpy scalars as 0-D arrays; anything else (lists for sequences, None) as it is."""
    return [np.asarray(v) if isinstance(v, np.generic) else v for v in values]


def collect(names: Iterable[str] | None = None) -> list[Case]:
    """The cases of the given ``onnx.backend.test.case.node`` modules (default: all), each
    labelled with the op of its module (the op type of its single-node cases)."""
    import onnx.backend.test.case.node as package

    found = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for module in modules() if names is None else names:
            start = len(package._NodeTestCases)
            importlib.import_module(f"{package.__name__}.{module}")
            made = package._NodeTestCases[start:]
            single = collections.Counter(c.model.graph.node[0].op_type for c in made
                                         if len(c.model.graph.node) == 1)
            label = single.most_common(1)[0][0] if single else module
            for case in made:
                inputs, outputs = case.data_sets[0]
                found.append(Case(case.name, label, case.model, _arrays(inputs),
                                  _arrays(outputs)))
    return found


DATA_KINDS = ("pytorch-converted", "pytorch-operator", "simple")
"""The model folders of ``onnx/backend/test/data`` with ``test_data_set_0`` protobufs."""


def collect_data(kind: str) -> list[Case]:
    """The cases of one ``DATA_KINDS`` folder (a model and the tensors of its first data
    set), labelled with the model's first op; a model with a non-tensor input or output
    gets no tensors (it is out of scope)."""
    import onnx
    from onnx import numpy_helper

    found = []
    for folder in sorted((Path(onnx.__file__).parent / "backend" / "test" / "data" / kind)
                         .iterdir()):
        model = onnx.load(folder / "model.onnx")
        data = folder / "test_data_set_0"
        values: dict[str, list[Any]] = {"input": [], "output": []}
        if not any(_value_scope(v) for v in [*model.graph.input, *model.graph.output]):
            for side in values:
                for file in sorted(data.glob(f"{side}_*.pb"),
                                   key=lambda f: int(f.stem.split("_")[1])):
                    values[side].append(numpy_helper.to_array(
                        onnx.TensorProto.FromString(file.read_bytes())))
        op = model.graph.node[0].op_type if model.graph.node else kind
        found.append(Case(folder.name, op, model, values["input"], values["output"]))
    return found


def _value_scope(info: Any) -> str | None:
    from onnx import TensorProto

    kind = info.type.WhichOneof("value")
    if kind != "tensor_type":
        return f"{kind} value {info.name!r}"
    elem = TensorProto.DataType.Name(info.type.tensor_type.elem_type)
    return f"{elem.lower()} tensor {info.name!r}" if elem in _OUT_DTYPES else None


def out_of_scope(case: Case) -> str | None:
    """Why wasmnn does not aim to run ``case``, or None when it should."""
    graph = case.model.graph
    domains = {o.domain for o in case.model.opset_import} | {n.domain for n in graph.node}
    if domains & _TRAINING_DOMAINS:
        return "training op"
    for info in [*graph.input, *graph.output]:
        reason = _value_scope(info)
        if reason:
            return reason
    if any(v is None or not isinstance(v, np.ndarray) for v in case.inputs + case.outputs):
        return "a sequence, optional or missing value"
    return None


def _mismatch(name: str, got: np.ndarray, want: np.ndarray) -> str | None:
    got = np.asarray(got)
    if got.shape != want.shape:
        return f"{name}: shape {got.shape} != {want.shape}"
    if want.dtype.kind in "fc":
        g, w = got.astype(np.float64), want.astype(np.float64)
        nan = np.isnan(w)
        if (np.isnan(g) != nan).any():
            return f"{name}: NaN at {int((np.isnan(g) != nan).sum())} other positions"
        g, w = np.where(nan, 0.0, g), np.where(nan, 0.0, w)
        inf = np.isinf(w)
        if (g[inf] != w[inf]).any():
            return f"{name}: infinities differ"
        with np.errstate(invalid="ignore"):  # inf - inf where the infinities match
            err = np.abs(np.where(inf, 0.0, g - w))
        bad = err > 1e-4 * (1.0 + np.abs(np.where(inf, 0.0, w)))
        if bad.any():
            return (f"{name}: {int(bad.sum())} of {w.size} values off, max error "
                    f"{float(err.max()):.3g}")
        return None
    if got.dtype.kind not in "biu" or not np.array_equal(got, want):
        return f"{name}: {got.dtype} {got.ravel()[:6]} != {want.dtype} {want.ravel()[:6]}"
    return None


def _refusal(err: Exception, case: Case) -> bool:
    """A clear refusal: a compiler error whose message names an op type of the model, its
    opset, or one of its inputs or outputs."""
    graph = case.model.graph
    names = ({n.op_type for n in graph.node}
             | {f"{v.name!r}" for v in [*graph.input, *graph.output]})
    return isinstance(err, modelc.CompileError) and (
        str(err).startswith("ONNX opset") or any(name in str(err) for name in names))


def run_case(case: Case, kernels: str = "relaxed") -> Outcome:
    """Import, compile and run ``case`` on ``kernels``, and sort the outcome. A case refused
    as given is tried again with its inputs after the first as initializers (how real
    models hold weights, shapes and axes): ``PASS_CONST`` if that passes."""
    reason = out_of_scope(case)
    if reason:
        return Outcome(case.name, case.op, OUT, reason)
    graph = case.model.graph
    init = {t.name for t in graph.initializer}
    names = [i.name for i in graph.input if i.name not in init]
    outcome = _attempt(case, case.model, dict(zip(names, case.inputs)), kernels)
    if outcome.status != REFUSED or len(names) < 2:
        return outcome
    from onnx import numpy_helper

    model = type(case.model)()
    model.CopyFrom(case.model)
    model.graph.initializer.extend(numpy_helper.from_array(value, name)
                                   for name, value in zip(names[1:], case.inputs[1:]))
    again = _attempt(case, model, {names[0]: case.inputs[0]}, kernels)
    if again.status == PASS:
        return Outcome(case.name, case.op, PASS_CONST, outcome.detail)
    if again.status == REFUSED:
        return Outcome(case.name, case.op, REFUSED, f"{outcome.detail[:200]}; with the inputs "
                       f"after the first as initializers: {again.detail[:200]}")
    return again if again.status in (WRONG, ORT_AGREES) else outcome


def _attempt(case: Case, model: Any, feeds: dict[str, np.ndarray], kernels: str) -> Outcome:
    import runtime

    graph = model.graph
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            imported = modelc.from_onnx(model, input_shapes={k: v.shape
                                                                  for k, v in feeds.items()})
            wasm = modelc.export(imported)
    except Exception as err:  # noqa: BLE001 - every failure is an outcome to sort
        status = REFUSED if _refusal(err, case) else WRONG
        return Outcome(case.name, case.op, status, f"{type(err).__name__}: {err}"[:300])
    try:
        with runtime.load(wasm, kernels=kernels, threads=1) as session:
            got = session.run(feeds)
    except Exception as err:  # noqa: BLE001
        return Outcome(case.name, case.op, WRONG, f"run: {type(err).__name__}: {err}"[:300])
    missing = [o.name for o in graph.output if o.name not in got]
    if missing:
        return Outcome(case.name, case.op, WRONG, f"no outputs {missing}")
    problem = _first_mismatch(graph, got, case.outputs)
    if problem is None:
        return Outcome(case.name, case.op, PASS)
    ort = _onnxruntime(model, feeds)
    if ort is not None and _first_mismatch(graph, got, ort) is None:
        return Outcome(case.name, case.op, ORT_AGREES, problem)
    return Outcome(case.name, case.op, WRONG, problem)


def _first_mismatch(graph: Any, got: dict[str, np.ndarray], wants: Sequence[np.ndarray]
                    ) -> str | None:
    for info, want in zip(graph.output, wants):
        problem = _mismatch(info.name, got[info.name], np.asarray(want))
        if problem:
            return problem
    return None


def _onnxruntime(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray] | None:
    """onnxruntime's outputs for ``model``, or None when it cannot run it."""
    try:
        import onnxruntime

        copy = type(model)()
        copy.CopyFrom(model)
        copy.ir_version = min(copy.ir_version, 10)
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        session = onnxruntime.InferenceSession(copy.SerializeToString(), options,
                                               providers=["CPUExecutionProvider"])
        return list(session.run(None, feeds))
    except Exception:  # noqa: BLE001 - no second opinion, then
        return None


def table(outcomes: Sequence[Outcome]) -> str:
    """Counts per op (ops with a WRONG case first), then the totals."""
    per_op: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for outcome in outcomes:
        per_op[outcome.op][outcome.status] += 1
    rows = [f"{'op':28} " + " ".join(f"{s:>12}" for s in STATUSES)]
    for op, counts in sorted(per_op.items(), key=lambda kv: (-kv[1][WRONG], kv[0])):
        rows.append(f"{op:28} " + " ".join(f"{counts[s]:>12}" for s in STATUSES))
    total = collections.Counter(o.status for o in outcomes)
    rows.append(f"{'total':28} " + " ".join(f"{total[s]:>12}" for s in STATUSES))
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", default="relaxed", help="relaxed, simd128, scalar, host")
    parser.add_argument("--modules", help="comma-separated onnx case modules or DATA_KINDS "
                        "folders (default: all)")
    parser.add_argument("--show", default="WRONG,refused",
                        help="comma-separated statuses whose cases are listed with why")
    parser.add_argument("--expectations", action="store_true", help="print only 'case status' "
                        "for every case that neither passes nor is out of scope, sorted")
    args = parser.parse_args(argv)
    names = args.modules.split(",") if args.modules else None
    cases = collect([m for m in names if m not in DATA_KINDS] if names else None)
    cases += [case for kind in DATA_KINDS if names is None or kind in names
              for case in collect_data(kind)]
    outcomes = [run_case(case, args.kernels) for case in cases]
    if args.expectations:
        print("\n".join(sorted(f"{o.case} {o.status}" for o in outcomes
                               if o.status not in (PASS, OUT))))
        return
    show = set(args.show.split(","))
    for outcome in outcomes:
        if outcome.status in show:
            print(f"{outcome.status:8} {outcome.op:20} {outcome.case}: {outcome.detail}")
    print(table(outcomes))


if __name__ == "__main__":
    sys.exit(main())
