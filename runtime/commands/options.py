"""Options shared by the subcommands that run guest code: the sandbox limits."""

from __future__ import annotations

import argparse

from ..compartment import ResourceLimits, parse_size


def add_limit_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("sandbox limits")
    group.add_argument("--max-memory", metavar="SIZE", default="1GiB",
                       help="cap on linear memory, e.g. 64MiB (default: %(default)s)")
    group.add_argument("--timeout", metavar="SECONDS", type=float, default=None,
                       help="wall-clock limit per call (default: none)")
    group.add_argument("--fuel", metavar="N", type=int, default=None,
                       help="instruction budget per call (default: none)")


def limits_from(args: argparse.Namespace) -> ResourceLimits:
    return ResourceLimits(max_memory=parse_size(args.max_memory), timeout=args.timeout,
                          fuel=args.fuel)
