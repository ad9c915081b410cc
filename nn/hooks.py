"""Forward hooks: ``RemovableHandle`` (the handle a registration returns, as in
torch.utils.hooks), registration into a module's hook dicts, and the call that runs them
around ``forward``."""

from __future__ import annotations

import itertools
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .module import Module

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


def register(hooks: OrderedDict[int, Any], with_kwargs_ids: OrderedDict[int, Any],
             hook: Callable[..., Any], prepend: bool, with_kwargs: bool) -> RemovableHandle:
    """Add ``hook`` to ``hooks`` (first if ``prepend``), marked in ``with_kwargs_ids`` when
    it takes the kwargs too."""
    handle = RemovableHandle(hooks, extra_dicts=(with_kwargs_ids,))
    hooks[handle.id] = hook
    if with_kwargs:
        with_kwargs_ids[handle.id] = True
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def call(module: Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``Module.__call__``: the pre-hooks, ``forward`` and the forward hooks, in order.

    Raises:
        RuntimeError: as ``Module.__call__``.
    """
    for hook_id, hook in list(module._forward_pre_hooks.items()):
        if hook_id in module._forward_pre_hooks_with_kwargs:
            result = hook(module, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError("forward pre-hook must return None or a tuple of "
                                       f"(new_args, new_kwargs), but got {result}.")
                args, kwargs = result
        else:
            result = hook(module, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
    output = module.forward(*args, **kwargs)
    for hook_id, hook in list(module._forward_hooks.items()):
        if hook_id in module._forward_hooks_with_kwargs:
            result = hook(module, args, kwargs, output)
        else:
            result = hook(module, args, output)
        if result is not None:
            output = result
    return output
