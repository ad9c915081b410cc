"""The ``wasmnn`` command: parses arguments, dispatches to subcommands, maps errors to exit
codes. Subcommands are entry points in the ``wasmnn.commands`` group, each a
``register(subparsers)`` that adds one parser whose ``handler(args) -> int`` does the work.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from importlib.metadata import entry_points

from .errors import ExitTrap, LimitExceeded, LinkError, ModelFormatError, Trap

# Exception -> exit code; the first matching row wins (subclasses before their bases).
EXIT_CODES: tuple[tuple[type[BaseException], int, str], ...] = (
    (ModelFormatError, 3, "bad model file"),
    (FileNotFoundError, 3, "a file does not exist"),
    (LinkError, 4, "link error"),
    (LimitExceeded, 6, "limit hit (memory, time or fuel)"),
    (Trap, 5, "the model trapped"),
    (ValueError, 7, "bad input (shape, dtype, value or option)"),
    (TypeError, 7, "wrong input type"),
    (NotImplementedError, 8, "not supported"),
)
USAGE_EXIT = 2


def _epilog() -> str:
    meanings: dict[int, list[str]] = {}
    for _, code, meaning in EXIT_CODES:
        meanings.setdefault(code, []).append(meaning)
    rows = "\n".join(f"  {code}  {'; '.join(m)}" for code, m in sorted(meanings.items()))
    return (f"exit codes:\n  0  success\n  {USAGE_EXIT}  usage error\n{rows}\n"
            "  a WASI program's own exit code passes through 'wasmnn wasi run'")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wasmnn", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Compile neural networks to WebAssembly and run them sandboxed.",
        epilog=_epilog())
    parser.add_argument("--debug", action="store_true",
                        help="show Python tracebacks for errors")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for entry in sorted(entry_points(group="wasmnn.commands"), key=lambda e: e.name):
        try:
            entry.load()(subparsers)
        except Exception as error:  # noqa: BLE001 - a broken plugin must not break the others
            _register_unavailable(subparsers, entry.name, error)
    return parser


def _register_unavailable(subparsers: argparse._SubParsersAction, name: str,
                          error: Exception) -> None:
    reason = f"the '{name}' command is unavailable: {type(error).__name__}: {error}"

    def unavailable(args: argparse.Namespace) -> int:
        raise RuntimeError(reason)

    parser = subparsers.add_parser(name, help=f"(unavailable: {type(error).__name__})",
                                   add_help=False)
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    parser.set_defaults(handler=unavailable)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (see ``wasmnn --help``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return USAGE_EXIT
    try:
        return int(args.handler(args) or 0)
    except ExitTrap as exit_trap:
        return exit_trap.exit_code
    except KeyboardInterrupt:
        print("wasmnn: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # noqa: BLE001 - every error becomes a one-line message
        code = next((code for kind, code, _ in EXIT_CODES if isinstance(error, kind)), 1)
        if args.debug:
            traceback.print_exc()
        message = str(error).replace("\n", "\n  ")
        print(f"wasmnn: error: {message}", file=sys.stderr)
        return code


if __name__ == "__main__":
    sys.exit(main())
