"""What cranelift made of the dense tile's unrolled k loop inside each kernel: instructions and
stack accesses per loop, kernel by kernel, from the machine code (no timing, load-proof).

    .venv/bin/python bench/tile_code.py [--isa relaxed] [--prefix f32_conv2d]

Each kernel whose name starts with ``--prefix`` is built and compiled as a session compiles
it (its opt level, the module that owns the memory), serialized, and disassembled by binutils'
``objdump``. A loop of the dense tile is a backward jump whose body holds one unrolled
iteration of ``dense_tile.UNROLL`` steps: ``UNROLL * rows * 2`` multiply-adds for a 5 or 4 row
tile. Printed per such loop, in code order: ``instructions/stack accesses``. The relaxed 5x8
tile's 32 steps are ~900 instructions with a few stack accesses when cranelift keeps the
instance's context (``vmctx``, whence each load reloads the memory's base at opt level
``none``) in a register; ~1035 with ~140 when it keeps it in a stack slot and loads it again
before every load (bench/README.md, "f32_conv2d_im2col"). Which of the two a function gets
depends on the whole function: in a long one the register allocator gives up splitting
``vmctx``'s live range, so a change anywhere in a kernel can move its tile's speed by 5-10%.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tempfile

import wasm_kernels
from runtime.compartment import Compartment
from wasm_kernels import abi
from wasm_kernels.templates.dense_tile import UNROLL

_INSTRUCTION = re.compile(r"\s+([0-9a-f]+):")
_JUMP = re.compile(r"\tj\w+\s+([0-9a-f]+)")
_FUNCTION = re.compile(r"[0-9a-f]+ <wasm\[0\]::function\[\d+\]::([^>]*)>")


def disassembly(isa: str, names: frozenset[str]) -> str:
    """``objdump -d`` of the kernels ``names`` compiled at their opt level.

    Raises:
        RuntimeError: no ``objdump`` on the PATH.
    """
    objdump = shutil.which("objdump")
    if objdump is None:
        raise RuntimeError("bench/tile_code.py needs binutils' objdump on the PATH")
    levels = {wasm_kernels.opt_level(name) for name in names}
    text = []
    for level in sorted(levels):
        group = frozenset(n for n in names if wasm_kernels.opt_level(n) == level)
        wasm = wasm_kernels.build(isa, group, level == "none")
        module, _ = Compartment().compile(wasm, level)
        with tempfile.NamedTemporaryFile(suffix=".elf") as elf:
            elf.write(bytes(module.serialize()))
            elf.flush()
            text.append(subprocess.run([objdump, "-d", "--no-show-raw-insn", "-M", "intel",
                                        elf.name], capture_output=True, text=True,
                                       check=True).stdout)
    return "\n".join(text)


def tile_loops(function: str) -> list[tuple[int, int]]:
    """(instructions, stack accesses) of each loop of ``function``'s disassembly holding one
    unrolled iteration of a 5- or 4-row dense tile, in code order."""
    addresses = [(match.group(1), line) for line in function.splitlines()
                 if (match := _INSTRUCTION.match(line))]
    lines = [line for _, line in addresses]
    at = {int(address, 16): i for i, (address, _) in enumerate(addresses)}
    loops = []
    for end, line in enumerate(lines):
        jump = _JUMP.search(line)
        start = at.get(int(jump.group(1), 16), end) if jump else end
        if start >= end:
            continue
        body = lines[start:end + 1]
        updates = sum("vfmadd" in b or "mulps" in b for b in body)
        if updates in (UNROLL * 2 * 5, UNROLL * 2 * 4):
            loops.append((len(body), sum("rsp" in b for b in body)))
    return loops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--isa", default="relaxed", choices=[
        isa for isa in wasm_kernels.ISA_NAMES if isa != "scalar"])
    parser.add_argument("--prefix", default="f32_conv2d",
                        help="kernels whose names start with this")
    args = parser.parse_args()
    names = frozenset(k.name for k in abi.KERNELS if k.name.startswith(args.prefix))
    if not names:
        parser.error(f"no kernel starts with {args.prefix!r}")
    print(f"{args.isa}: per kernel, its size in instructions, then each dense tile loop as "
          "instructions/stack accesses")
    for chunk in re.split(r"\n(?=[0-9a-f]+ <)", disassembly(args.isa, names)):
        function = _FUNCTION.match(chunk)
        if function and function.group(1) in names:
            size = sum(1 for line in chunk.splitlines() if _INSTRUCTION.match(line))
            loops = " ".join(f"{n}/{stack}" for n, stack in tile_loops(chunk))
            print(f"{function.group(1):<36}{size:>7}  {loops}")


if __name__ == "__main__":
    main()
