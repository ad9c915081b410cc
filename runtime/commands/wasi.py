"""``wasmnn wasi run [--dir HOST::GUEST]... [--env K=V]... PROG.wasm [ARGS...]``: run a WASI
command in the sandbox, with wasmtime's flag spelling, exiting with the program's exit code."""

from __future__ import annotations

import argparse
import os
import sys

from wasi_intrinsics.wasi import LEGACY_MODULE, MODULE, Preopen, WasiConfig, WasiState, preview1

from ..compartment import Compartment, ResourceLimits
from ..errors import ExitTrap, ModelFormatError
from ..linker import RegistryResolver
from .options import add_limit_options, limits_from


def run_command(wasm: bytes, config: WasiConfig, limits: ResourceLimits | None = None) -> int:
    """Instantiate WASI command ``wasm`` against ``config``, call ``_start`` and return the
    exit code (``proc_exit``'s, or 0 when ``_start`` returns). Host files the program left
    open are closed.

    Raises:
        ModelFormatError: ``wasm`` is not valid WebAssembly or has no ``_start`` export.
        LinkError: imports other than WASI preview1 (or ``wasi_unstable``) are needed.
        Trap: the program trapped or hit a limit.
    """
    compartment = Compartment(limits)
    module, info = compartment.compile(wasm)
    compartment.plan([info])
    state = WasiState(config, compartment.deadline)
    try:
        registry = RegistryResolver()
        for name in (MODULE, LEGACY_MODULE):
            registry.register(name, preview1(name).instantiate(compartment.store, state))
        instance = compartment.instantiate(module, info, registry)
        start = instance.exports(compartment.store).get("_start")
        if start is None:
            raise ModelFormatError("not a WASI command: the module exports no '_start'")
        compartment.call(start, compartment.store)
    except ExitTrap as exit_trap:
        return exit_trap.exit_code
    finally:
        state.close()
    return 0


def parse_dir(spec: str) -> Preopen:
    """``HOST::GUEST`` (or ``DIR``, meaning ``DIR::DIR``) as a ``Preopen``.

    Raises:
        ValueError: a part is empty or the host directory does not exist.
    """
    host, sep, guest = spec.partition("::")
    guest = guest if sep else host
    if not host or not guest:
        raise ValueError(f"--dir {spec!r}: expected HOST::GUEST or DIR")
    if not os.path.isdir(host):
        raise ValueError(f"--dir {spec!r}: host directory {host!r} does not exist")
    return Preopen(host, guest)


def parse_env(spec: str) -> tuple[str, str]:
    """``K=V`` as a pair.

    Raises:
        ValueError: no ``=`` or an empty name.
    """
    key, sep, value = spec.partition("=")
    if not sep or not key:
        raise ValueError(f"--env {spec!r}: expected K=V")
    return key, value


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``wasi run`` to the ``wasmnn`` CLI (an entry point in ``wasmnn.commands``)."""
    parser = subparsers.add_parser("wasi", help="run WASI programs in the sandbox",
                                   description="Run WASI (preview1) programs in the sandbox.")
    commands = parser.add_subparsers(dest="wasi_command", metavar="COMMAND", required=True)
    run = commands.add_parser(
        "run", help="run a WASI command (its _start) and exit with its exit code",
        description="Run a WASI command. Deny by default: it sees no directory, environment "
                    "variable or argument beyond those given here, and no network.",
        epilog="example:\n  wasmnn wasi run --dir data::/data --env MODE=fast prog.wasm a b",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("--dir", metavar="HOST::GUEST", action="append", default=[],
                     help="preopen host directory HOST as GUEST (DIR alone: DIR::DIR); "
                          "repeatable")
    run.add_argument("--env", metavar="K=V", action="append", default=[],
                     help="set environment variable K to V; repeatable")
    add_limit_options(run)
    run.add_argument("program", metavar="PROG.wasm", help="the WASI command to run")
    run.add_argument("args", metavar="ARGS", nargs=argparse.REMAINDER,
                     help="arguments for the program (argv[0] is PROG.wasm)")
    run.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    config = WasiConfig(args=[args.program, *args.args], env=dict(map(parse_env, args.env)),
                        stdin=sys.stdin.buffer, stdout=sys.stdout.buffer,
                        stderr=sys.stderr.buffer, preopens=[parse_dir(d) for d in args.dir])
    with open(args.program, "rb") as file:
        wasm = file.read()
    sys.stdout.flush()
    return run_command(wasm, config, limits_from(args))
