"""What cranelift made of the dense tile's unrolled k loop inside each kernel: instructions and
stack accesses per loop, kernel by kernel, from the machine code (no timing, load-proof).

    .venv/bin/python bench/tile_code.py [--isa relaxed] [--prefix f32_conv2d] [--madds N]

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
The third count tells the two kinds of stack access apart: the loads of ``vmctx`` from the
stack followed by a load of the memory's base through it (the rest are spilled values, e.g.
weights held across a tile when they outnumber the vector registers).

``--madds N`` takes every loop holding at least N multiply-adds instead (another family's
tiles: depthwise, the direct conv; an outer loop counts those of the loops inside it),
printed as ``instructions/multiply-adds/stack accesses/vmctx reloads``.
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
_STACK_LOAD = re.compile(r"mov\s+(r\w+),QWORD PTR \[rsp(?:\+0x\w+)?\]")
_MEMORY_BASE = "+0x38]"
"""The offset of the memory's base in ``vmctx`` (wasmtime's layout for a module importing
its one memory)."""


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


def vmctx_reloads(body: list[str]) -> int:
    """The loads of a register from the stack that the next two instructions use as
    ``vmctx`` (reading the memory's base through it)."""
    count = 0
    for i, line in enumerate(body):
        load = _STACK_LOAD.search(line)
        if load and any(f"[{load.group(1)}{_MEMORY_BASE}" in b for b in body[i + 1:i + 3]):
            count += 1
    return count


def tile_loops(function: str, madds: int | None = None) -> list[tuple[int, int, int, int]]:
    """(instructions, multiply-adds, stack accesses, vmctx reloads) of each loop of
    ``function``'s disassembly, in code order: loops holding one unrolled iteration of a 5-
    or 4-row dense tile, or with ``madds`` those holding at least that many multiply-adds."""
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
        if (updates in (UNROLL * 2 * 5, UNROLL * 2 * 4) if madds is None
                else updates >= madds):
            loops.append((len(body), updates, sum("rsp" in b for b in body),
                          vmctx_reloads(body)))
    return loops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--isa", default="relaxed", choices=[
        isa for isa in wasm_kernels.ISA_NAMES if isa != "scalar"])
    parser.add_argument("--prefix", default="f32_conv2d",
                        help="kernels whose names start with this")
    parser.add_argument("--madds", type=int,
                        help="every loop with at least this many multiply-adds")
    args = parser.parse_args()
    names = frozenset(k.name for k in abi.KERNELS if k.name.startswith(args.prefix))
    if not names:
        parser.error(f"no kernel starts with {args.prefix!r}")
    fields = ("instructions/multiply-adds/stack accesses/vmctx reloads" if args.madds
              else "instructions/stack accesses/vmctx reloads")
    loop = f"loop with >= {args.madds} multiply-adds" if args.madds else "dense tile loop"
    print(f"{args.isa}: per kernel, its size in instructions, then each {loop} as {fields}")
    for chunk in re.split(r"\n(?=[0-9a-f]+ <)", disassembly(args.isa, names)):
        function = _FUNCTION.match(chunk)
        if function and function.group(1) in names:
            size = sum(1 for line in chunk.splitlines() if _INSTRUCTION.match(line))
            loops = " ".join("/".join(map(str, (n, madds, stack, reloads) if args.madds
                                          else (n, stack, reloads)))
                             for n, madds, stack, reloads in tile_loops(chunk, args.madds))
            print(f"{function.group(1):<36}{size:>7}  {loops}")


if __name__ == "__main__":
    main()
