"""``wasmnn run MODEL.wasm --input NAME=FILE ...``: run a model in the sandbox."""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from ..session import KERNEL_CHOICES, Session, load
from ..tensor_io import DtypeOf, read_arrays, summary, to_json, write_arrays
from ..threads import MAX_THREADS
from .options import add_limit_options, limits_from


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run", help="run a .wasm model on inputs from files",
        description="Run a wasmnn model in a sandbox (memory, time and fuel capped; no host "
                    "access) on inputs read from .npy, .npz or .json files.",
        epilog="examples:\n  wasmnn run mlp.wasm --input input0=x.npy\n"
               "  wasmnn run mlp.wasm --input x.npy --output y.npz --timeout 5",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", metavar="MODEL.wasm", help="the model to run")
    parser.add_argument("--input", "-i", metavar="NAME=FILE", action="append", default=[],
                        help="an input: NAME=FILE.npy|.json, or FILE.npz (or a JSON object) "
                             "holding inputs by name, or FILE alone for a one-input model; "
                             "FILE '-' reads stdin (.npy, .npz or JSON, told apart by their "
                             "first bytes); a JSON array takes its input's dtype (integers "
                             "for an int64 input, true/false or 0/1 for bool) (repeatable)")
    parser.add_argument("--output", "-o", metavar="OUT",
                        help="write outputs to OUT.npz / .npy / .json instead of a summary")
    parser.add_argument("--json", action="store_true",
                        help="print outputs and timing as one JSON object")
    parser.add_argument("--kernels", choices=KERNEL_CHOICES, default="auto",
                        help="kernel provider (default: %(default)s = relaxed SIMD)")
    parser.add_argument("--threads", metavar="N", type=_threads, default="auto",
                        help="threads for the model's large kernels, or 'auto': the cores "
                             f"this process may use, at most {MAX_THREADS}, for a model of "
                             "32 MiB of weights or more, else 1 (default: %(default)s)")
    add_limit_options(parser)
    parser.set_defaults(handler=run)


def _threads(text: str) -> int | str:
    """``--threads``: ``auto`` or a whole number (its range is checked by ``load``).

    Raises:
        argparse.ArgumentTypeError: neither.
    """
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of threads or 'auto', "
                                         f"got {text!r}") from None


def _gather_inputs(specs: list[str], max_bytes: int | None, dtype_of: DtypeOf
                   ) -> dict[str, np.ndarray] | np.ndarray:
    """The ``--input`` options as arrays by name (or one unnamed array); an array declaring
    more than ``max_bytes`` is refused before it is read; a JSON array becomes
    ``dtype_of(the input's name)``.

    Raises:
        ValueError: an option is malformed, names an input twice, or reads stdin twice.
        FileNotFoundError: a file does not exist.
    """
    named: dict[str, np.ndarray] = {}
    sources = [spec.partition("=")[2] if "=" in spec else spec for spec in specs]
    if sources.count("-") > 1:
        raise ValueError("--input: stdin ('-') can be read by one --input only")
    for spec in specs:
        name, sep, path = spec.partition("=")
        if sep and not name:
            raise ValueError(f"--input {spec!r}: expected NAME=FILE with a non-empty NAME")
        given = (lambda _key, option_name=name: dtype_of(option_name)) if sep else dtype_of
        loaded = read_arrays(path if sep else name, max_bytes=max_bytes, dtype_of=given)
        if not sep and not isinstance(loaded, dict):
            if len(specs) == 1:
                return loaded
            raise ValueError(f"--input {spec!r}: name the input as NAME=FILE when giving "
                             "several inputs")
        if sep and isinstance(loaded, dict):
            raise ValueError(f"--input {spec!r}: a .npz or JSON object holds arrays by name; "
                             "pass it without NAME= to bind them by name")
        found = loaded if isinstance(loaded, dict) else {name: loaded}
        twice = sorted(set(found) & set(named))
        if twice:
            raise ValueError(f"--input {spec!r}: input(s) {twice} given twice")
        named.update(found)
    if not named:
        raise ValueError("no inputs given; use --input NAME=FILE.npy (see --help)")
    return named


READ_AT_LEAST = 1 << 24
"""Bytes an input file may declare whatever the model: a near miss still reaches the shape
check, which names the input and axis."""


def _input_limit(session: Session) -> int:
    """The most bytes an input array may declare: the model's largest input at its dims'
    maxima, or ``READ_AT_LEAST``."""
    largest = {d.name: d.max for d in session.metadata.dims}
    return max([READ_AT_LEAST] + [t.nbytes(largest) for t in session.inputs])


def _declared_dtypes(session: Session) -> DtypeOf:
    """The dtype of the input a JSON array is given for: by name, or the only input's for
    an unnamed array; float32 when the name matches no input (the session then says so)."""
    dtypes = {t.name: np.dtype(t.dtype) for t in session.inputs}
    only = next(iter(dtypes.values())) if len(dtypes) == 1 else np.dtype(np.float32)
    return lambda name: only if name is None else dtypes.get(name, np.dtype(np.float32))


def run(args: argparse.Namespace) -> int:
    limits = limits_from(args)
    start = time.perf_counter()
    with load(args.model, max_memory=limits.max_memory, timeout=limits.timeout,
              fuel=limits.fuel, kernels=args.kernels, threads=args.threads) as session:
        loaded = time.perf_counter()
        inputs = _gather_inputs(args.input, _input_limit(session), _declared_dtypes(session))
        read = time.perf_counter()
        outputs = session.run(inputs)
        done = time.perf_counter()
    if args.output:
        write_arrays(args.output, outputs)
    if args.json:
        print(json.dumps({"outputs": {k: to_json(v) for k, v in outputs.items()},
                          "shapes": {k: list(v.shape) for k, v in outputs.items()},
                          "load_ms": 1e3 * (loaded - start), "run_ms": 1e3 * (done - read)},
                         allow_nan=False))
    elif not args.output:
        for name, array in outputs.items():
            print(summary(name, array))
        print(f"(load {1e3 * (loaded - start):.1f} ms, run {1e3 * (done - read):.2f} ms)")
    else:
        print(f"wrote {sorted(outputs)} to {args.output}")
    return 0
