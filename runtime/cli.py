"""The ``wasmnn`` command: parses arguments, dispatches to subcommands, maps errors to exit
codes. Subcommands are entry points in the ``wasmnn.commands`` group, each a
``register(subparsers)`` that adds one parser whose ``handler(args) -> int`` does the work.
"""

from __future__ import annotations

import argparse
import errno
import io
import sys
import traceback
from collections.abc import Sequence
from importlib.metadata import entry_points
from typing import Any

from .errors import ExitTrap, LimitExceeded, LinkError, ModelFormatError, Trap, one_line
from .signals import Interrupted, stop_on_signals

# Exception -> exit code; the first matching row wins (subclasses before their bases).
EXIT_CODES: tuple[tuple[type[BaseException], int, str], ...] = (
    (ModelFormatError, 3, "bad model file"),
    (FileNotFoundError, 3, "a file does not exist"),
    (LinkError, 4, "link error"),
    (LimitExceeded, 6, "limit hit (memory, time or fuel)"),
    (Trap, 5, "the model trapped"),
    (ValueError, 7, "bad input (shape, dtype, value, option or file content)"),
    (TypeError, 7, "wrong input type"),
    (NotImplementedError, 8, "not supported"),
    (OSError, 9, "host I/O error (a file or stream cannot be read or written)"),
    (MemoryError, 10, "out of host memory"),
)
INTERNAL_ERROR = 1  # anything else: a bug (--debug shows where)
USAGE_EXIT = 2


def _epilog() -> str:
    meanings: dict[int, list[str]] = {}
    for _, code, meaning in EXIT_CODES:
        meanings.setdefault(code, []).append(meaning)
    rows = "\n".join(f"  {code}  {'; '.join(m)}" for code, m in sorted(meanings.items()))
    return (f"exit codes:\n  0  success\n  {INTERNAL_ERROR}  internal error (a bug); for "
            "'wasmnn wast': a script command failed\n"
            f"  {USAGE_EXIT}  usage error\n{rows}\n"
            "  130  interrupted (SIGINT); 143  stopped (SIGTERM)\n"
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


class _ClosedStream(io.RawIOBase):
    """Stands in for a standard stream the shell closed (``<&-``, ``>&-``), where Python
    leaves ``None``: using it is an ``OSError`` (exit 9) naming the stream."""

    def __init__(self, name: str):
        super().__init__()
        self.name = name
        self.buffer = self

    def _closed(self) -> OSError:
        return OSError(errno.EBADF, f"standard {self.name} is closed")

    def readinto(self, buffer: Any) -> int:
        raise self._closed()

    def write(self, data: Any) -> int:
        raise self._closed()

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True


def _stand_in_for_closed_streams() -> None:
    for name in ("stdin", "stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, _ClosedStream(name))


def _report(error: BaseException, debug: bool) -> None:
    try:
        if debug:
            traceback.print_exc()
        print(f"wasmnn: error: {one_line(str(error))}", file=sys.stderr)
    except OSError:
        pass  # NOTE: stderr is closed; the exit code still tells


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (see ``wasmnn --help``)."""
    _stand_in_for_closed_streams()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return USAGE_EXIT
    try:
        with stop_on_signals():
            return int(args.handler(args) or 0)
    except ExitTrap as exit_trap:
        return exit_trap.exit_code
    except Interrupted as interrupted:
        print(f"wasmnn: {interrupted}", file=sys.stderr)
        return interrupted.exit_code
    except KeyboardInterrupt:
        print("wasmnn: interrupted by SIGINT", file=sys.stderr)
        return 130
    except Exception as error:  # noqa: BLE001 - every error becomes a one-line message
        code = next((code for kind, code, _ in EXIT_CODES if isinstance(error, kind)),
                    INTERNAL_ERROR)
        _report(error, args.debug)
        return code


if __name__ == "__main__":
    sys.exit(main())
