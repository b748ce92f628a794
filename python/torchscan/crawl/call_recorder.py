"""The module calls of the analysed forward.

A stand-in ``forward`` or two global hooks record them (``_core.CallRecorder``,
``_core.ModuleForward``).
"""

from __future__ import annotations

import threading
import types
from collections.abc import Iterable
from typing import Any

from .. import _core
from .._values import freeze


def all_named_modules(model: Any) -> list[tuple[str, Any]]:
    """``list(model.named_modules(remove_duplicate=False))``, walked without a generator per module.

    A module reachable under several paths is listed under each. A class that defines its own
    ``named_modules`` is asked for what lies under it, as PyTorch's walk would.
    """
    from torch import nn

    walk = nn.Module.named_modules
    found: list[tuple[str, Any]] = []
    stack: list[tuple[str, Any]] = [("", model)]
    while stack:
        prefix, module = stack.pop()
        if type(module).named_modules is not walk:
            found.extend(module.named_modules(prefix=prefix, remove_duplicate=False))
            continue
        found.append((prefix, module))
        children = module._modules
        if children:
            dot = f"{prefix}." if prefix else ""
            stack.extend(
                [
                    (dot + name, child)
                    for name, child in reversed(children.items())
                    if child is not None
                ]
            )
    return found


# Module classes whose ``forward`` cannot be wrapped per instance: scripted modules (their
# attributes live in C++), wrappers that copy a module's ``__dict__`` into replicas, and compiled
# modules (their guards watch the attributes). Any of them in a model makes the recorder use
# forward hooks instead.
_HOOKED_TYPE_NAMES = frozenset(
    {
        "ScriptModule",
        "RecursiveScriptModule",
        "TopLevelTracedModule",
        "TracedModule",
        "DataParallel",
        "DistributedDataParallel",
        "FullyShardedDataParallel",
        "OptimizedModule",
    }
)


_NO_FORWARD = object()


_HOOKED_BY_TYPE: dict[type, bool] = {}


def _needs_hooks(modules: Iterable[Any]) -> bool:
    for module in modules:
        kind = type(module)
        hooked = _HOOKED_BY_TYPE.get(kind)
        if hooked is None:
            hooked = _HOOKED_BY_TYPE[kind] = any(
                klass.__name__ in _HOOKED_TYPE_NAMES for klass in kind.__mro__
            )
        if hooked:
            return True
    return False


class ModuleCallRecorder:
    """Records every module call of one forward: the call tree, with frozen inputs and outputs.

    The recording itself is compiled (``_core.CallRecorder``): it runs between the forward's
    kernels, where little of it is still in the processor's caches. Each module's ``forward`` is
    replaced for the duration by a ``_core.ModuleForward`` (the instance attribute is set and
    then restored): it costs a fraction of PyTorch's hook machinery and, like the absence of
    hooks, leaves PyTorch's fused inference paths on. Models holding modules that cannot be
    wrapped (scripted, replicated or compiled) get two process-wide forward hooks instead,
    filtered to the model's modules. Either way the call records the positional and keyword
    arguments its ``forward`` received and what it returned, also when it raised. Once the
    forward is over, ``_core.Assembler`` builds the report's layers from the records. Only calls
    on the thread that built the recorder are recorded: a stand-in or a hook called from any
    other thread passes straight through to the real forward.
    """

    def __init__(self, named_modules: list[tuple[str, Any]], log: list[Any] | None) -> None:
        import torch

        # A module reachable under several paths is recorded under the first.
        self.positions: dict[int, int] = {}
        self.modules: list[Any] = []
        known: list[tuple[Any, str, int]] = []
        for path, module in named_modules:
            if id(module) not in self.positions:
                self.positions[id(module)] = len(self.modules)
                self.modules.append(module)
                known.append((module, path, 0 if path == "" else path.count(".") + 1))
        # The forward's events in order (full mode only): the positions of the calls as they
        # close and the operators they ran (see the crawl counter's ``_after``).
        self.log = log
        self.core = _core.CallRecorder(known, log, torch.Tensor, freeze)
        self.handles: list[Any] = []
        self.wrapped: list[Any] = []
        self.thread = threading.get_ident()

    @property
    def top(self) -> int | None:
        """Position of the innermost open call (``None`` outside every call)."""
        return self.core.top

    def __enter__(self) -> ModuleCallRecorder:
        try:
            if _needs_hooks(self.modules):
                from torch.nn.modules import module as torch_module

                self.handles.append(torch_module.register_module_forward_pre_hook(self._pre))
                self.handles.append(
                    torch_module.register_module_forward_hook(
                        self._post_hook, with_kwargs=True, always_call=True
                    )
                )
            else:
                for position, module in enumerate(self.modules):
                    self._wrap(position, module)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove the hooks and put every module's own ``forward`` back (safe to call twice)."""
        if self.handles:
            from torch.nn.modules import module as torch_module

            for handle in self.handles:
                handle.remove()
                # ``RemovableHandle.remove`` leaves the hook's ``with_kwargs`` mark behind.
                torch_module._global_forward_hooks_with_kwargs.pop(handle.id, None)
            self.handles.clear()
        for wrapper in reversed(self.wrapped):
            module, previous = wrapper.module, wrapper.previous
            if previous is _NO_FORWARD:
                module.__dict__.pop("forward", None)
            else:
                module.__dict__["forward"] = previous
        self.wrapped.clear()

    def _wrap(self, position: int, module: Any) -> None:
        previous = module.__dict__.get("forward", _NO_FORWARD)
        inner = module.forward  # the bound method, or a forward already set on the instance
        # A plain method is called as its function with the module: nothing bound is kept.
        method = type(inner) is types.MethodType and inner.__self__ is module
        forward = _core.ModuleForward(
            self.core, position, module, inner.__func__ if method else inner, method, previous
        )
        self.wrapped.append(forward)
        module.__dict__["forward"] = forward

    def _pre(self, module: Any, inputs: tuple[Any, ...]) -> None:
        if threading.get_ident() != self.thread:
            return  # the model run by another thread: not part of the analysed forward
        position = self.positions.get(id(module))
        if position is not None:  # else a module of another model, or not reachable from this one
            self.core.enter(position)

    def _post_hook(
        self, module: Any, inputs: tuple[Any, ...], kwargs: dict[str, Any], output: Any
    ) -> None:
        if id(module) in self.positions and threading.get_ident() == self.thread:
            _core.CallRecorder.leave(self.core, module, inputs, output, kwargs)
