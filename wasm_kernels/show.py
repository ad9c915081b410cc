"""``python -m wasm_kernels.show KERNEL [--isa ISA]``: print one kernel's module (the
kernel alone, importing ``env.memory``) in the WebAssembly text format, which ``wat2wasm``
turns back into the same code."""

from __future__ import annotations

import argparse
import sys

from . import abi
from .build import ISA_NAMES, build
from .wasm.text import module_text


def main(argv: list[str] | None = None) -> int:
    """Print the kernel named on the command line; argparse exits with 2 on bad arguments."""
    parser = argparse.ArgumentParser(
        prog="python -m wasm_kernels.show",
        description="Print a kernel of the ABI as WebAssembly text, for one ISA.")
    parser.add_argument("kernel", help=f"an ABI kernel name, e.g. f32_linear ({abi.MODULE})")
    parser.add_argument("--isa", default="simd128", choices=ISA_NAMES,
                        help="the variant to generate (default: simd128)")
    args = parser.parse_args(argv)
    if args.kernel not in abi.BY_NAME:
        parser.error(f"unknown kernel {args.kernel!r}; available: {sorted(abi.BY_NAME)}")
    sys.stdout.write(module_text(build(args.isa, frozenset({args.kernel}))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
