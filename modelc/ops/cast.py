"""cast: elementwise conversion to ``dtype``."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import OpDef


class Cast(OpDef):
    name = "cast"

    def infer(self, shapes: list, dtypes: list[str], attrs: dict[str, Any]) -> list:
        return [(shapes[0], str(np.dtype(attrs["dtype"])))]


OP = Cast()
