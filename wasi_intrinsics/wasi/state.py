"""Per-instance WASI state: what the host granted (args, environment, streams)."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import BinaryIO


@dataclass
class WasiConfig:
    """What a WASI program may see. Deny by default: no args, environment or directories.

    ``stdin`` is read from and ``stdout`` / ``stderr`` written to; by default stdin is empty
    and both output streams are captured in memory.
    """

    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    stdin: BinaryIO = field(default_factory=io.BytesIO)
    stdout: BinaryIO = field(default_factory=io.BytesIO)
    stderr: BinaryIO = field(default_factory=io.BytesIO)


class WasiState:
    """The live state behind one WASI instance: its config and open file descriptors."""

    def __init__(self, config: WasiConfig | None = None):
        self.config = config or WasiConfig()
        self.streams: dict[int, BinaryIO] = {0: self.config.stdin, 1: self.config.stdout,
                                             2: self.config.stderr}
