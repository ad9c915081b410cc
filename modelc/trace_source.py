"""Where a traced call came from: the user's source line, and the errors that point at it."""

from __future__ import annotations

import os
import traceback

import numpy as np

import nn

from .errors import TraceError

_OWN_DIRS = tuple(os.path.dirname(os.path.abspath(m.__file__ or ""))
                  for m in (nn, __import__("modelc"), np))


def user_frame() -> str | None:
    """``file:line: code`` of the innermost stack frame outside ``nn``, ``modelc`` and numpy."""
    for frame in reversed(traceback.extract_stack()):
        path = os.path.abspath(frame.filename)
        if not path.startswith(_OWN_DIRS) and "/_pytest/" not in path:
            return f"{frame.filename}:{frame.lineno}: {(frame.line or '').strip()}"
    return None


def unsupported(call: str, alternative: str) -> TraceError:
    """The error for a call the tracer cannot record: the call, the user's line, and what to
    write instead."""
    return TraceError(f"{call} is not supported on a traced tensor; {alternative}; "
                      f"at {user_frame()}")


def data_dependent(what: str) -> TraceError:
    """The error for Python that needs a traced tensor's values, which exist only at run time."""
    return TraceError(f"data-dependent control flow: {what} depends on the input's values, "
                      "which are not known at export; compute both results and select with "
                      f"np.where(cond, a, b) (nn.functional.where); at {user_frame()}")
