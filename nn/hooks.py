"""``RemovableHandle``: the handle a hook registration returns, as in torch.utils.hooks."""

from __future__ import annotations

import itertools
import weakref
from collections import OrderedDict
from typing import Any

_next_id = itertools.count()


class RemovableHandle:
    """Removes one hook from the dicts it was registered in; usable as a context manager."""

    def __init__(self, hooks_dict: OrderedDict[int, Any], *,
                 extra_dicts: tuple[OrderedDict[int, Any], ...] = ()) -> None:
        self.id = next(_next_id)
        self._hooks = weakref.ref(hooks_dict)
        self._extra = [weakref.ref(extra) for extra in extra_dicts]

    def remove(self) -> None:
        """Unregister the hook; removing twice is harmless."""
        for ref in (self._hooks, *self._extra):
            store = ref()
            if store is not None and self.id in store:
                del store[self.id]

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()
