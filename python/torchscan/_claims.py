"""Which modules an analysis is using now: one registry, so two analyses never share a module.

``crawl_module`` and ``summary`` change a model while its forward runs (a stand-in ``forward``
on every module, evaluation mode): they take its modules *exclusively*. ``measure_flops`` with
``modules=`` only adds hooks filtered to its own thread: it takes them *shared*, so any number
of such counters can run at once, but none while an exclusive analysis holds one of the
modules. A claim is taken for all the modules at once, under one lock, before anything is
changed, or not at all: :class:`~torchscan.errors.ConcurrentAnalysisError` then names the module
and the analysis holding it. The registry is keyed by module identity and holds modules by weak
reference, so it never keeps a model alive, and a module that was freed while claimed (its
identity reused) is never mistaken for a new one.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .errors import ConcurrentAnalysisError

__all__ = ["Hold", "claimed", "holders"]

_LOCK = threading.Lock()


class _Claim:
    """One analysis's hold on its modules: what it is, whose thread, exclusive or shared."""

    __slots__ = ("exclusive", "thread_ident", "thread_name", "what")

    def __init__(self, what: str, exclusive: bool) -> None:
        thread = threading.current_thread()
        self.what = what
        self.exclusive = exclusive
        self.thread_ident = threading.get_ident()
        self.thread_name = thread.name


# id(module) -> (weak reference to the module, the claims holding it now).
_HELD: dict[int, tuple[Any, list[_Claim]]] = {}


def _reference(module: Any) -> Any:
    try:
        return weakref.ref(module)
    except TypeError:  # a module class with __slots__ and no __weakref__: hold it strongly
        return lambda: module


def _conflict(claim: _Claim, path: str, holder: _Claim) -> ConcurrentAnalysisError:
    subject = "this model" if path == "" else f"module '{path}' of this model"
    if holder.thread_ident != claim.thread_ident:
        return ConcurrentAnalysisError(
            f"{claim.what}: {subject} is being analysed in another thread ({holder.what} in "
            f"thread '{holder.thread_name}'); a module is analysed by one call at a time while "
            f"{'that call changes' if holder.exclusive else 'this call would change'} it: wait "
            "for the other call to return, or analyse a copy (copy.deepcopy(model))"
        )
    return ConcurrentAnalysisError(
        f"{claim.what} was started inside a forward that {holder.what} is analysing on this "
        f"thread ({subject} is in use by it); an analysis cannot run inside the forward of the "
        "modules it analyses: call it before or after that analysis"
    )


def _take(named_modules: list[tuple[str, Any]], claim: _Claim) -> None:
    """Claim every module or none: ``ConcurrentAnalysisError`` before anything is held."""
    with _LOCK:
        # Nothing held by anyone (the common case): there is no conflict to look for.
        for path, module in named_modules if _HELD else ():
            entry = _HELD.get(id(module))
            if entry is None or entry[0]() is not module:
                continue
            for holder in entry[1]:
                if claim.exclusive or holder.exclusive:
                    raise _conflict(claim, path, holder)
        for _path, module in named_modules:
            key = id(module)
            entry = _HELD.get(key)
            if entry is None or entry[0]() is not module:
                # A stale entry (its module freed, the identity reused) is replaced.
                entry = _HELD[key] = (_reference(module), [])
            if claim not in entry[1]:
                entry[1].append(claim)


def _give_back(named_modules: list[tuple[str, Any]], claim: _Claim) -> None:
    # Every module is looked at, not a list of what was taken: an interrupt in the middle of
    # ``_take`` cannot leave a hold behind.
    with _LOCK:
        for _path, module in named_modules:
            key = id(module)
            entry = _HELD.get(key)
            if entry is None or claim not in entry[1]:
                continue
            entry[1].remove(claim)
            if not entry[1]:
                del _HELD[key]


class Hold:
    """Modules held by one analysis until :meth:`release` (which is safe to call twice)."""

    def __init__(self, named_modules: list[tuple[str, Any]], what: str, exclusive: bool) -> None:
        """Claim every module of ``named_modules`` (``(path, module)`` pairs), or raise.

        Raises :class:`~torchscan.errors.ConcurrentAnalysisError` when another analysis holds
        one of them (any hold conflicts with an exclusive one); nothing is held then.
        """
        self._named_modules = named_modules
        self._claim = _Claim(what, exclusive)
        try:
            _take(named_modules, self._claim)
        except BaseException:
            _give_back(named_modules, self._claim)
            raise

    def release(self) -> None:
        """Give every module back."""
        _give_back(self._named_modules, self._claim)


@contextmanager
def claimed(
    named_modules: list[tuple[str, Any]], what: str, *, exclusive: bool = True
) -> Iterator[None]:
    """Hold ``named_modules`` (``(path, module)`` pairs) for ``what`` while the block runs.

    Raises :class:`~torchscan.errors.ConcurrentAnalysisError` before the block when another
    analysis holds one of them. The hold is given back on every path, ``KeyboardInterrupt``
    included.
    """
    hold = Hold(named_modules, what, exclusive)
    try:
        yield
    finally:
        hold.release()


def holders() -> dict[int, list[str]]:
    """The modules held now: ``id(module) -> ["crawl_module (exclusive)", ...]`` (for tests)."""
    with _LOCK:
        return {
            key: [f"{c.what} ({'exclusive' if c.exclusive else 'shared'})" for c in entry[1]]
            for key, entry in _HELD.items()
            if entry[0]() is not None
        }
