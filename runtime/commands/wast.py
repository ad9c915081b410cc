"""``wasmnn wast SCRIPT.wast ...``: run WebAssembly spec test scripts through our linker."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import one_line
from ..wast import run_script, summary


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "wast", help="run WebAssembly spec test scripts (.wast) through the wasmnn linker",
        description="Run .wast spec test scripts (converted with wabt's wast2json) through "
                    "wasmnn's own linker, resolvers and compartments. Prints each failure, "
                    "one line per script, then 'N passed, M failed'; the exit status is 1 "
                    "when anything failed.",
        epilog="example:\n  wasmnn wast testsuite/imports.wast testsuite/linking.wast",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scripts", metavar="SCRIPT", nargs="+", type=Path,
                        help="a .wast script, or the .json that wast2json wrote for one")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="also list skipped commands and why")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    passed = failed = skipped = 0
    for path in args.scripts:
        report = run_script(path)
        for outcome in report.outcomes:
            if outcome.status == "failed" or (args.verbose and outcome.status == "skipped"):
                print(one_line(f"{report.script}:{outcome.line}: {outcome.status} "
                               f"{outcome.command}: {outcome.detail}"))
        print(f"{report.script}: {report.summary()}")
        passed += report.count("passed")
        failed += report.count("failed")
        skipped += report.count("skipped")
    print(summary(passed, failed, skipped))
    return 1 if failed else 0
