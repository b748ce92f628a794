"""The one loader of ``path/to/file.py:attr`` and ``module:attr`` references.

Every command of ``python -m torchscan`` (``measure``, ``compare``, ``summary``) and the process-RSS
child (:mod:`torchscan.measure.rss.worker`) import the code they run through this module:

* A file is imported once per process, under a private module name derived from its resolved
  path (``_torchscan_workload_<stem>_<hash>``), never as ``__main__``: two files named
  ``bench.py`` in two folders never share a module, and two references into one file (``compare
  variants.py:base variants.py:fast``) share one, whose top level runs once.
* While a file is imported its own folder is first on ``sys.path``, so ``import model`` finds the
  file's sibling ``model.py``, as when the file runs as a script. Afterwards the folder stays on
  ``sys.path``, at its end, so that imports the workload makes when it is called still find the
  siblings without shadowing anything else.
* The siblings of one referenced file never stand in for another's. While a file of folder ``B``
  is imported, every top-level module that lies in the folder of another file loaded before
  (``A``) is taken out of ``sys.modules`` when the file's own search path (``B`` first) would find
  another file or none for that name, together with its submodules; so are the other folders this
  loader appended to ``sys.path``. ``B``'s ``import model`` then imports ``B/model.py``. Afterwards
  ``sys.modules`` gets ``A``'s modules back under their names (the first file imported keeps the
  plain names), and ``B``'s stay with ``B``'s code, which bound them at import, and in this
  module's record of ``B``'s folder, which the next file of ``B`` imported gets.
* A module reference (``bench:workload``) is kept apart the same way, in the folder of
  ``sys.path`` where it lies (which stays where it is on ``sys.path``):
  ``compare bench:workload new/bench.py:workload`` has each ``bench`` import its own ``model``.
* An ``import`` statement that a referenced file runs later, inside the workload, finds the
  file's own siblings too: the file's module has builtins of its own whose ``__import__`` gives a
  name of the file's folder the module that folder's record holds (imported, apart, the first
  time), and hands every other name to ``builtins.__import__``. Its builtins are a copy taken at
  import; the siblings' own code imports as ``import`` does.
* ``SystemExit`` or ``KeyboardInterrupt`` raised while a reference is imported (an unguarded
  ``sys.exit(main())`` at a script's top level) is :class:`ImportInterruptedError`, which names the
  file and the line; it never ends the process silently.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import re
import sys
import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import ModuleType

__all__ = [
    "FILE_MODULE_PREFIX",
    "ImportInterruptedError",
    "LoaderError",
    "ReferenceNotFoundError",
    "file_module_name",
    "import_file",
    "import_module",
    "is_file_location",
    "is_file_module_name",
    "location_file",
    "missing_module",
]

#: The prefix of the private module names of imported files.
FILE_MODULE_PREFIX = "_torchscan_workload_"
# Characters of a file's stem that may stay in its module name (the rest become underscores).
_NOT_NAME = re.compile(r"[^0-9A-Za-z_]")
_DIGEST_CHARS = 16


class LoaderError(Exception):
    """An error of the loader whose message says everything (no class name needed before it)."""


class ReferenceNotFoundError(LoaderError):
    """The file a reference names is not there (nothing of the user's ran)."""


class ImportInterruptedError(LoaderError):
    """Importing a reference raised ``SystemExit`` or ``KeyboardInterrupt``.

    ``error`` is the original exception; the message names the file (or module) and the line.
    """

    def __init__(self, location: str, error: BaseException) -> None:
        where = _raised_at(error)
        at = f" at {where}" if where else ""
        if isinstance(error, SystemExit):
            message = (
                f"importing {location} raised SystemExit({error.code!r}){at}: its top level "
                "exits (an unguarded sys.exit() or exit()?), so it defines nothing to run; put "
                "the script's own work under 'if __name__ == \"__main__\":' so that importing it "
                "only defines the workload"
            )
        else:
            message = f"importing {location} was interrupted ({type(error).__name__}{at})"
        super().__init__(message)
        self.error = error


def _raised_at(error: BaseException) -> str | None:
    """``file.py, line N`` of the innermost frame outside the import machinery and this package."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    found = None
    for frame in traceback.extract_tb(error.__traceback__):
        name = frame.filename
        if name.startswith("<frozen ") or name.startswith(package):
            continue
        found = f"{os.path.basename(name)}, line {frame.lineno}"
    return found


def is_file_location(location: str) -> bool:
    """Whether the left side of a reference is a file path (else a dotted module name)."""
    separators = [os.sep] + ([os.altsep] if os.altsep else [])
    return location.endswith(".py") or any(sep in location for sep in separators)


def file_module_name(path: str | os.PathLike[str]) -> str:
    """The private module name of the file at ``path``: its stem and a hash of its real path."""
    real = os.path.realpath(path)
    stem = _NOT_NAME.sub("_", os.path.splitext(os.path.basename(real))[0])
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:_DIGEST_CHARS]
    return f"{FILE_MODULE_PREFIX}{stem}_{digest}"


def is_file_module_name(name: object) -> bool:
    """Whether ``name`` is a module name :func:`import_file` gives."""
    return isinstance(name, str) and name.startswith(FILE_MODULE_PREFIX)


@dataclass
class _Loaded:
    """What this process imported through :func:`import_file`."""

    folders: dict[str, dict[str, ModuleType]] = field(default_factory=dict)
    """Per real folder of an imported file: the modules of that folder its imports found."""
    appended: list[str] = field(default_factory=list)
    """The folders this loader appended to ``sys.path``, as appended."""


_LOADED = _Loaded()


def import_file(location: str, *, shown: str | None = None) -> ModuleType:
    """The module of the Python file ``location``, imported once per process.

    Raises :class:`ReferenceNotFoundError` when there is no such file,
    :class:`ImportInterruptedError` for ``SystemExit`` or ``KeyboardInterrupt`` at import, and
    whatever else the file's top level raises, unchanged (its module is then forgotten, as a
    failed import is). Messages name the file ``shown`` (default: ``location``).
    """
    if not os.path.exists(location):
        raise ReferenceNotFoundError(f"no such file: {shown or location}")
    if not os.path.isfile(location):
        raise ReferenceNotFoundError(f"not a Python file: {shown or location}")
    real = os.path.realpath(location)
    name = file_module_name(real)
    loaded = sys.modules.get(name)
    if isinstance(loaded, ModuleType) and _file_of(loaded) == real:
        return loaded
    spec = importlib.util.spec_from_file_location(name, real)
    if spec is None or spec.loader is None:
        raise ReferenceNotFoundError(f"cannot import {shown or location}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(real)
    # Set before its code runs: functions take their builtins from the module when defined.
    own_builtins = dict(vars(builtins))
    own_builtins["__import__"] = _FolderImport(folder)
    module.__dict__["__builtins__"] = own_builtins
    with _Isolated(folder) as isolated:
        # Registered before running, as a normal import does, so dataclasses and pickling inside
        # the module find it.
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except (SystemExit, KeyboardInterrupt) as error:
            _forget(name, module)
            raise ImportInterruptedError(shown or location, error) from error
        except BaseException:
            _forget(name, module)
            raise
        isolated.succeeded = True
    return module


def import_module(name: str) -> ModuleType:
    """The module ``name`` (``package.module``), imported as ``import`` does.

    Raises :class:`ImportInterruptedError` for ``SystemExit`` or ``KeyboardInterrupt`` at
    import, and whatever else the import raises, unchanged (see :func:`missing_module`).
    """
    folder = _module_folder(name)
    try:
        if folder is None:
            return importlib.import_module(name)
        # Kept apart from the referenced files' siblings as a file of ``folder`` is, without
        # moving ``folder`` on ``sys.path``: ``compare bench:workload new/bench.py:workload``
        # has each ``bench`` import its own ``model``.
        with _Isolated(folder, first=False) as isolated:
            module = importlib.import_module(name)
            isolated.succeeded = True
        return module
    except (SystemExit, KeyboardInterrupt) as error:
        raise ImportInterruptedError(name, error) from error


def _module_folder(name: str) -> str | None:
    """The real folder on ``sys.path`` where the top-level module of ``name`` lies, if any.

    The folders this loader appended for referenced files are not searched (a module reference
    is found as ``import`` finds it without them); ``None`` for a built-in module, one found
    nowhere else, or an unreadable path.
    """
    top = name.partition(".")[0]
    search = [entry for entry in sys.path if entry not in _LOADED.appended]
    try:
        spec = importlib.machinery.PathFinder.find_spec(top, search)
    except Exception:  # an unreadable folder or a broken path hook: imported as it is
        return None
    if spec is None:
        return None
    if spec.origin is not None and spec.has_location:
        folder = os.path.dirname(os.path.realpath(spec.origin))
        return os.path.dirname(folder) if spec.submodule_search_locations is not None else folder
    locations = list(spec.submodule_search_locations or [])
    return os.path.dirname(os.path.realpath(locations[0])) if locations else None


def missing_module(error: ModuleNotFoundError, name: str) -> str | None:
    """The module of ``name``'s own path that ``error`` says is missing (``None``: another one).

    ``None`` means the module exists and an import inside it failed: the user's error.
    """
    missing = error.name or ""
    return missing if missing and (name == missing or name.startswith(missing + ".")) else None


def location_file(location: str) -> str | None:
    """The file a reference's left side names, found without running anything; ``None`` if none.

    A file path is itself; a module name is looked up by the path finders (or in
    ``sys.modules`` when it is imported already), without importing a package on the way.
    """
    if is_file_location(location):
        return location if os.path.isfile(location) else None
    locations: Iterable[str] | None = None
    spec = None
    parts = location.split(".")
    for index in range(len(parts)):
        prefix = ".".join(parts[: index + 1])
        loaded = sys.modules.get(prefix)
        if loaded is not None:
            if index == len(parts) - 1:
                path = getattr(loaded, "__file__", None)
                return path if isinstance(path, str) else None
            locations = getattr(loaded, "__path__", None)
            continue
        try:
            spec = importlib.machinery.PathFinder.find_spec(
                prefix, list(locations) if locations is not None else None
            )
        except Exception:  # an unreadable folder or a broken path hook: no answer
            return None
        if spec is None:
            return None
        locations = spec.submodule_search_locations
    origin = getattr(spec, "origin", None)
    return origin if isinstance(origin, str) and os.path.isfile(origin) else None


def _forget(name: str, module: ModuleType) -> None:
    if sys.modules.get(name) is module:
        del sys.modules[name]


def _namespace(module: object) -> dict[str, object]:
    """A module's ``__dict__``, read without calling its ``__getattr__`` or a lazy loader."""
    try:
        namespace = object.__getattribute__(module, "__dict__")
    except Exception:  # not a module: some libraries put other objects in sys.modules
        return {}
    return namespace if isinstance(namespace, dict) else {}


def _file_of(module: object) -> str | None:
    path = _namespace(module).get("__file__")
    return os.path.realpath(path) if isinstance(path, str) else None


def _found_in(module: object) -> set[str]:
    """The folders the path finders found a top-level module in (none for a built-in one)."""
    namespace = _namespace(module)
    path = _file_of(module)
    if path is not None:
        folder = os.path.dirname(path)
        # A package's file is its __init__: the package folder lies in the folder searched.
        return {os.path.dirname(folder) if "__path__" in namespace else folder}
    locations = namespace.get("__path__")  # a namespace package: its folders, no file
    try:
        return {os.path.dirname(os.path.realpath(entry)) for entry in list(locations)}  # type: ignore[call-overload]
    except TypeError:
        return set()


def _same_module_found(name: str, module: object, search: list[str]) -> bool:
    """Whether importing ``name`` along ``search`` finds the file ``module`` was loaded from."""
    try:
        spec = importlib.machinery.PathFinder.find_spec(name, search)
    except Exception:  # an unreadable folder or a broken path hook: not the same
        return False
    if spec is None:
        return False
    if spec.origin is not None and spec.has_location:
        return os.path.realpath(spec.origin) == _file_of(module)
    found = spec.submodule_search_locations
    loaded = _namespace(module).get("__path__")
    if found is None or loaded is None:
        return False
    try:
        folders = {os.path.realpath(entry) for entry in list(loaded)}  # type: ignore[call-overload]
    except TypeError:
        return False
    return {os.path.realpath(entry) for entry in found} == folders


def _on_path(folder: str) -> bool:
    return any(os.path.realpath(entry or os.curdir) == folder for entry in sys.path)


class _Isolated:
    """``sys.path`` and ``sys.modules`` as the file of ``folder`` should see them while imported.

    On entry: ``folder`` first on ``sys.path``, the other folders this loader appended taken off
    it, the modules of other imported files' folders that ``folder``'s search path would not find
    taken out of ``sys.modules``, and ``folder``'s own recorded modules put in. On exit, on every
    path: ``sys.path`` as it was (``folder`` appended after a successful import, when it is not on
    it), the modules taken out back in, and ``folder``'s modules recorded after a success.
    """

    def __init__(self, folder: str, *, first: bool = True) -> None:
        self.folder = folder
        self.first = first
        # Whether ``folder`` goes first on sys.path (a file's; a module's stays in place).
        self.succeeded = False
        self._taken_off_path: list[str] = []
        self._set_aside: dict[str, object] = {}

    def __enter__(self) -> _Isolated:
        others = {folder for folder in _LOADED.folders if folder != self.folder}
        self._taken_off_path = [
            entry for entry in _LOADED.appended if entry != self.folder and entry in sys.path
        ]
        if self._taken_off_path:
            sys.path[:] = [entry for entry in sys.path if entry not in self._taken_off_path]
        if self.first:
            sys.path.insert(0, self.folder)
        own = _LOADED.folders.get(self.folder, {})
        if others:
            self._set_aside_others(others, own)
        for name, module in own.items():
            current = sys.modules.get(name)
            if current is module:
                continue
            if current is not None and name not in self._set_aside:
                self._set_aside[name] = current
            sys.modules[name] = module
        # Files written since a folder's contents were last listed (a test, an editor) count.
        importlib.invalidate_caches()
        return self

    def _set_aside_others(self, others: set[str], own: dict[str, ModuleType]) -> None:
        """Take out the modules of ``others`` that this file's imports must not find."""
        search = list(sys.path)
        conflicting = []
        for name, module in list(sys.modules.items()):
            if "." in name or is_file_module_name(name) or own.get(name) is module:
                continue
            if not _found_in(module) & others:
                continue
            if name in own or not _same_module_found(name, module, search):
                conflicting.append(name)
        for top in conflicting:
            for name in [key for key in list(sys.modules) if _under(key, top)]:
                self._set_aside[name] = sys.modules.pop(name)

    def __exit__(self, *_: object) -> None:
        if self.first:
            with contextlib.suppress(ValueError):  # the file's own code took it off
                sys.path.remove(self.folder)
        for entry in self._taken_off_path:
            if entry not in sys.path:
                sys.path.append(entry)
        if self.succeeded:
            self._record()
            if self.first and not _on_path(self.folder):
                sys.path.append(self.folder)
                _LOADED.appended.append(self.folder)
        tops = {name.partition(".")[0] for name in self._set_aside}
        for name in list(sys.modules):
            # This file's own module of a name another file's module holds: out, with its
            # submodules (this folder's record keeps them), before the other's come back.
            if name.partition(".")[0] in tops and name not in self._set_aside:
                del sys.modules[name]
        sys.modules.update(self._set_aside)  # type: ignore[arg-type]

    def _record(self) -> None:
        """Record the modules now in ``sys.modules`` that were found in this file's folder."""
        record = _LOADED.folders.setdefault(self.folder, {})
        tops = {
            name
            for name, module in list(sys.modules.items())
            if "." not in name
            and not is_file_module_name(name)
            and self.folder in _found_in(module)
        }
        for name, module in list(sys.modules.items()):
            if name.partition(".")[0] in tops and isinstance(module, ModuleType):
                record[name] = module


def _under(name: str, top: str) -> bool:
    return name == top or name.startswith(top + ".")


class _FolderImport:
    """The ``__import__`` of a referenced file of ``folder``: its siblings, never another's.

    A name whose top-level module lies in ``folder`` is the module the folder's record holds
    (a dictionary lookup, for a workload that imports on every call); one not recorded yet is
    imported apart, as while the file was (:class:`_Isolated`), and recorded. Relative imports,
    other names, and imports while the folder has no record yet (the file's own import, already
    apart) go to ``builtins.__import__`` unchanged.
    """

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self._local: dict[str, bool] = {}

    def __call__(
        self,
        name: str,
        globals: dict[str, object] | None = None,
        locals: dict[str, object] | None = None,
        fromlist: tuple[str, ...] | list[str] | None = (),
        level: int = 0,
    ) -> ModuleType:
        record = _LOADED.folders.get(self.folder)
        if level != 0 or not name or record is None:
            return builtins.__import__(name, globals, locals, fromlist or (), level)
        top = name.partition(".")[0]
        if top not in record and not self._lies_here(top):
            return builtins.__import__(name, globals, locals, fromlist or (), level)
        found = record.get(name)
        if found is not None and all(
            item == "*" or item in _namespace(found) for item in fromlist or ()
        ):
            return found if fromlist else record[top]
        with _Isolated(self.folder) as isolated:
            module = builtins.__import__(name, globals, locals, fromlist or (), level)
            isolated.succeeded = True
        return module

    def _lies_here(self, top: str) -> bool:
        """Whether the top-level module ``top`` is found in this folder (remembered)."""
        known = self._local.get(top)
        if known is None:
            try:
                known = importlib.machinery.PathFinder.find_spec(top, [self.folder]) is not None
            except Exception:  # an unreadable folder or a broken path hook: not here
                known = False
            self._local[top] = known
        return known
