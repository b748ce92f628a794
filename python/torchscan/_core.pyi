"""Type stubs of the compiled ``torchscan._core`` extension (checked by ``mypy.stubtest``)."""

import os
from typing import Any, final

__all__ = [
    "READABLE_SCHEMA_VERSIONS",
    "SCHEMA_VERSION",
    "CallRecorder",
    "DispatchRecorder",
    "FieldTracker",
    "ModuleForward",
    "OwnStorage",
    "TensorSpec",
    "__version__",
    "assemble",
    "block_timing",
    "cli_main",
    "compare_benchmarks_json",
    "compare_reports_json",
    "exclusion_reasons",
    "format_summary_json",
    "is_valid_work_unit",
    "median_absolute_deviation",
    "read_file",
    "render_report_json",
    "shape_elements",
    "throughput",
    "validate_report_json",
    "walk_storage",
    "write_file",
]

__version__: str
SCHEMA_VERSION: int
READABLE_SCHEMA_VERSIONS: list[int]

def validate_report_json(text: str) -> str: ...
def format_summary_json(
    text: str,
    max_depth: int | None = None,
    receptive_field: bool = False,
    effective_rf_stats: bool = False,
) -> str: ...
def compare_reports_json(before: str, after: str) -> str: ...
def render_report_json(text: str) -> str: ...
def median_absolute_deviation(values: list[float]) -> float: ...
def block_timing(
    block_durations_s: list[float], calls_per_block: int
) -> tuple[float, float, int, float]: ...
def throughput(
    block_durations_s: list[float], calls_per_block: int, work_units: float, work_unit: str
) -> tuple[float, str]: ...
def is_valid_work_unit(name: str) -> bool: ...
def cli_main(argv: list[str]) -> int: ...
def write_file(path: str | os.PathLike[str], data: bytes) -> None: ...
def read_file(path: str | os.PathLike[str], max_bytes: int = 1073741824) -> bytes: ...
def exclusion_reasons() -> list[tuple[str, str]]: ...
def shape_elements(values: Any, size_type: Any) -> int | None: ...
def walk_storage(
    named_modules: list[tuple[str, Any]],
) -> tuple[
    OwnStorage,
    tuple[int, int, int, int, int, list[Any], list[Any]],
    list[tuple[list[str], int, int, int]],
]: ...
def assemble(
    recorder: CallRecorder,
    full: bool,
    log: list[Any] | None,
    seeds: list[tuple[int, int]],
    operators: dict[str, Any],
    own: OwnStorage,
    helpers: tuple[Any, Any],
    describe: dict[str, Any],
    texts: dict[str, str],
) -> tuple[list[Any], dict[str, Any], list[Any], list[Any], list[Any]]: ...
def compare_benchmarks_json(
    baseline: str,
    candidate: str,
    check: str | None = None,
    confidence_level: float = 0.95,
    bootstrap_resamples: int = 2000,
    seed: int = 0,
    min_effect: float = 0.02,
    paired: bool = False,
) -> str: ...

@final
class DispatchRecorder:
    """Logs the lean operator calls of an analysed forward (``torchscan.crawl``'s mode)."""

    def __new__(
        cls,
        entries: dict[int, Any],
        general: Any,
        recorder: CallRecorder,
        log: list[Any],
        tensor: Any,
        parameter: Any,
        call_boxed: Any,
        function_modes: Any,
        counted: int,
        deferred: int,
        uncounted: int,
    ) -> DispatchRecorder: ...
    def __call__(
        self,
        _mode: Any,
        func: Any,
        types: Any,
        args: Any = None,
        kwargs: Any = None,
    ) -> Any: ...
    def tallies(self) -> list[tuple[Any, int, int]]: ...

@final
class TensorSpec:
    """What a formula or a report needs of a tensor, taken when it is seen: never its values."""

    def __new__(cls, tensor: Any) -> TensorSpec: ...
    @property
    def shape(self) -> Any: ...
    @property
    def dtype(self) -> Any: ...
    @property
    def device(self) -> Any: ...
    @property
    def requires_grad(self) -> bool: ...
    @property
    def ident(self) -> int: ...
    @property
    def ndim(self) -> int: ...
    def dim(self) -> int: ...
    def numel(self) -> int: ...
    def describe(
        self, dtype_names: dict[Any, str], device_names: dict[Any, str]
    ) -> dict[str, Any] | None: ...

@final
class CallRecorder:
    """Records the module calls of one forward (``torchscan.crawl``)."""

    def __new__(
        cls,
        modules: list[tuple[Any, str, int]],
        log: list[Any] | None,
        tensor: Any,
        freeze: Any,
    ) -> CallRecorder: ...
    @property
    def top(self) -> int | None: ...
    @property
    def count(self) -> int: ...
    def enter(self, index: int) -> None: ...
    @staticmethod
    def leave(
        recorder: CallRecorder,
        module: Any,
        inputs: Any,
        output: Any,
        kwargs: dict[str, Any] | None = None,
    ) -> None: ...
    def records(
        self,
    ) -> tuple[list[tuple[Any, str, int, int, int | None, Any, Any, bool]], list[int]]: ...

@final
class OwnStorage:
    """The own parameters and buffers of every module of a model, from ``walk_storage``."""

@final
class ModuleForward:
    """A module's ``forward`` while ``torchscan.crawl`` records it."""

    def __new__(
        cls,
        recorder: CallRecorder,
        index: int,
        module: Any,
        function: Any,
        method: bool,
        previous: Any,
    ) -> ModuleForward: ...
    @property
    def module(self) -> Any: ...
    @property
    def previous(self) -> Any: ...
    @property
    def __wrapped__(self) -> Any: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

@final
class FieldTracker:
    """Carries receptive fields along an analysed forward's log (``torchscan.crawl``)."""

    def __new__(cls, kind_of: Any, iter_tensors: Any) -> FieldTracker: ...
    def seed(self, ident: int, ndim: int) -> None: ...
    def replay(self, log: list[Any]) -> None: ...
