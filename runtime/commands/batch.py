"""``wasmnn batch MODEL.wasm --input NAME=DATA ... --output OUT_DIR``: a model over a data set
on Ray (the ``ray`` extra)."""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from .options import add_limit_options, limits_from


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "batch", help="run a model over a data set on a Ray cluster",
        description="Run a wasmnn model over every row of a data set with Ray Data: each "
                    "actor holds one sandboxed session (the limits below apply to each), "
                    "the model travels to the workers as bytes checked by SHA-256, and a "
                    "row that fails gets an error record instead of failing the job. "
                    "Needs the ray extra: pip install 'wasmnn[ray]'.",
        epilog="examples:\n"
               "  wasmnn batch mlp.wasm --input x=rows.npy --output scored/\n"
               "  wasmnn batch minilm.wasm --input input_ids=tok.parquet:ids \\\n"
               "      --input attention_mask=tok.parquet:mask --output emb/ --concurrency 8 "
               "--address auto\n\n"
               "OUT_DIR gets Parquet parts: a 'row' column (the input row's index), one "
               "column per output, and 'error' (empty when the row succeeded).",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", metavar="MODEL.wasm",
                        help="the model (its sidecar weights, if any, are sent along)")
    parser.add_argument("--input", "-i", metavar="NAME=DATA", action="append", default=[],
                        required=True,
                        help="a model input: NAME=FILE.npy (rows on axis 0) or "
                             "NAME=FILE.parquet:COLUMN (a file or folder) (repeatable)")
    parser.add_argument("--output", "-o", metavar="OUT_DIR", required=True,
                        help="folder for the Parquet parts of the results")
    parser.add_argument("--address", default=None,
                        help="Ray cluster to join ('auto': the running one; default: start "
                             "a local one on this machine)")
    parser.add_argument("--concurrency", type=int, default=None,
                        help="actors (one CPU each; default: the cluster's CPUs)")
    parser.add_argument("--batch-size", type=int, default=4096,
                        help="rows per batch sent to an actor (default: %(default)s)")
    parser.add_argument("--on-error", choices=("record", "fail"), default="record",
                        help="a failing row: record the error in its 'error' column and go "
                             "on (default), or fail the job")
    parser.add_argument("--kernels", choices=("auto", "simd128", "scalar"), default="auto",
                        help="kernel provider in each actor (default: %(default)s)")
    add_limit_options(parser)
    parser.set_defaults(handler=batch)


def _sources(specs: list[str]) -> dict[str, str]:
    sources: dict[str, str] = {}
    for spec in specs:
        name, sep, data = spec.partition("=")
        if not sep or not name or not data:
            raise ValueError(f"--input {spec!r}: expected NAME=FILE.npy or "
                             "NAME=FILE.parquet:COLUMN")
        if name in sources:
            raise ValueError(f"--input {name!r} is given twice")
        sources[name] = data
    return sources


def batch(args: argparse.Namespace) -> int:
    """Read the inputs, map the model over them on Ray, write Parquet parts, summarize.

    Raises:
        NotImplementedError: Ray is not installed (exit code 8).
    """
    try:
        import ray
    except ImportError:
        raise NotImplementedError("wasmnn batch needs Ray: pip install 'wasmnn[ray]'") \
            from None
    from ..batch import ModelPayload
    from ..ray_data import ERROR_COLUMN, init, map_model, read_inputs

    sources = _sources(args.input)
    limits = limits_from(args)
    payload = ModelPayload.from_file(args.model)
    payload.load(max_memory=limits.max_memory, instances=1).close()  # fail fast, here
    started = time.perf_counter()
    init(address=args.address, include_dashboard=False, log_to_driver=False,
         ignore_reinit_error=True)
    concurrency = args.concurrency or max(1, int(ray.cluster_resources().get("CPU", 1)))
    scored = map_model(read_inputs(sources), payload, concurrency=concurrency,
                       batch_size=args.batch_size,
                       on_error="raise" if args.on_error == "fail" else "record",
                       max_memory=limits.max_memory, timeout=limits.timeout,
                       fuel=limits.fuel, kernels=args.kernels).materialize()
    scored.write_parquet(args.output)
    rows = scored.count()
    failures = sum(int(np.count_nonzero(part[ERROR_COLUMN] != ""))
                   for part in scored.select_columns([ERROR_COLUMN]).iter_batches(
                       batch_format="numpy"))
    seconds = time.perf_counter() - started
    print(_summary(rows, failures, seconds, concurrency, args.output))
    return 0


def _summary(rows: int, failures: int, seconds: float, actors: int, out: Any) -> str:
    return (f"{rows} rows in {seconds:.1f} s ({rows / seconds:.0f} rows/s) on {actors} "
            f"actor(s); {failures} failed (see their 'error' column); wrote {out}")
