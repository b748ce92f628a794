"""Type stubs of the compiled ``torchscan._core`` extension (checked by ``mypy.stubtest``)."""

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, final

import torch

from torchscan.formulas._common import EstimateFn, FieldFn
from torchscan.opflops.mode import Entry
from torchscan.reports import Diagnostic, Layer, MetricResult, ModuleOperatorFlops, TensorMeta

__all__ = [
    "READABLE_SCHEMA_VERSIONS",
    "SCHEMA_VERSION",
    "SUMMARY_COLUMNS",
    "Assembler",
    "Assembly",
    "BlockTiming",
    "CallRecorder",
    "CallTally",
    "DispatchRecorder",
    "FlopLedger",
    "FormulaTally",
    "ModuleForward",
    "ModuleKind",
    "OperatorRecord",
    "OwnStorage",
    "PathFlops",
    "StorageTie",
    "StorageWalk",
    "TensorSpec",
    "Throughput",
    "__version__",
    "block_timing",
    "check_summary_columns",
    "cli_main",
    "compare_benchmarks_json",
    "compare_reports_json",
    "exclusion_reasons",
    "format_summary_json",
    "is_valid_work_unit",
    "median_absolute_deviation",
    "merge_rank_reports_json",
    "read_file",
    "render_report_json",
    "throughput",
    "validate_report_json",
    "walk_storage",
    "write_file",
]

__version__: str
SCHEMA_VERSION: int
READABLE_SCHEMA_VERSIONS: list[int]
SUMMARY_COLUMNS: list[str]

def validate_report_json(text: str) -> str: ...
def format_summary_json(
    text: str,
    max_depth: int | None = None,
    receptive_field: bool = False,
    effective_rf_stats: bool = False,
    columns: list[str] | None = None,
) -> str: ...
def check_summary_columns(names: list[str]) -> None: ...
def compare_reports_json(before: str, after: str) -> str: ...
def merge_rank_reports_json(texts: list[str]) -> str: ...
def render_report_json(text: str) -> str: ...
def median_absolute_deviation(values: list[float]) -> float: ...
def block_timing(block_durations_s: list[float], calls_per_block: int) -> BlockTiming: ...
def throughput(
    block_durations_s: list[float], calls_per_block: int, work_units: float, work_unit: str
) -> Throughput: ...
def is_valid_work_unit(name: str) -> bool: ...
def cli_main(argv: list[str]) -> int: ...
def write_file(path: str | os.PathLike[str], data: bytes) -> None: ...
def read_file(path: str | os.PathLike[str], max_bytes: int = 1073741824) -> bytes: ...
def exclusion_reasons() -> dict[str, str]: ...
def walk_storage(named_modules: list[tuple[str, torch.nn.Module]]) -> StorageWalk: ...
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
        entries: dict[int, Entry],
        general: Callable[..., object],
        scope: CallRecorder | list[str] | Callable[[], Iterable[str]],
        log: list[OperatorRecord | int],
        tensor: type[torch.Tensor],
        parameter: type[torch.nn.Parameter],
        call_boxed: Callable[..., object],
        function_modes: Callable[[], int],
        counted: int,
        deferred: int,
        uncounted: int,
        *,
        operator_bytes: bool = False,
    ) -> DispatchRecorder: ...
    # The operator's result, whatever the operator returns: a dispatch mode's handler.
    def __call__(
        self,
        _mode: object,
        func: torch._ops.OpOverload,
        types: object,
        args: tuple[object, ...] | None = None,
        kwargs: dict[str, object] | None = None,
    ) -> Any: ...
    def tallies(self) -> list[CallTally]: ...
    # The value itself, returned unchanged once its tensors' dtypes and devices are noted.
    def observe(self, value: Any) -> Any: ...
    def append(self, record: OperatorRecord) -> None: ...
    def add_bytes(
        self, args: tuple[object, ...], kwargs: Mapping[str, object] | None, out: object
    ) -> int: ...
    def ledger(self) -> FlopLedger: ...

@final
class PathFlops:
    """The operator FLOPs of one module path, children included."""

    @property
    def path(self) -> str: ...
    @property
    def flops(self) -> int: ...
    @property
    def uncounted(self) -> list[str]: ...

@final
class FlopLedger:
    """What a counter's compiled dispatch found, read once its mode has exited."""

    @property
    def formulas(self) -> list[FormulaTally]: ...
    @property
    def modules(self) -> list[PathFlops]: ...
    @property
    def dtype_flops(self) -> dict[torch.dtype, int]: ...
    @property
    def devices(self) -> list[torch.device]: ...
    @property
    def dtypes(self) -> list[torch.dtype]: ...
    @property
    def threads(self) -> list[int]: ...
    @property
    def operator_bytes(self) -> int: ...
    @property
    def unsized_tensors(self) -> int: ...

@final
class CallTally:
    """The calls of one operator entry that a ``DispatchRecorder`` logged."""

    @property
    def entry(self) -> Entry: ...
    @property
    def calls(self) -> int: ...
    @property
    def uncounted(self) -> int: ...

@final
class OperatorRecord:
    """An executed operator of the analysed forward's log."""

    def __new__(
        cls,
        *,
        entry: Entry,
        call: int | None,
        outcome: int,
        flops: int,
        args: list[object] | None,
        kwargs: dict[str, object] | None,
        out: object,
        inputs: list[int],
        first_inputs: int,
        outputs: list[tuple[int, int]],
        paths: tuple[str, ...] | None = None,
        dtype: torch.dtype | None = None,
    ) -> OperatorRecord: ...
    @property
    def entry(self) -> Entry: ...
    @property
    def call(self) -> int | None: ...
    @property
    def outcome(self) -> int: ...
    @property
    def flops(self) -> int: ...
    @property
    def args(self) -> list[object] | None: ...
    @property
    def kwargs(self) -> dict[str, object] | None: ...
    @property
    def out(self) -> object: ...
    @property
    def inputs(self) -> list[int]: ...
    @property
    def first_inputs(self) -> int: ...
    @property
    def outputs(self) -> list[tuple[int, int]]: ...
    @property
    def paths(self) -> tuple[str, ...] | None: ...
    @property
    def dtype(self) -> torch.dtype | None: ...

@final
class TensorSpec:
    """What a formula or a report needs of a tensor, taken when it is seen: never its values."""

    def __new__(cls, tensor: torch.Tensor) -> TensorSpec: ...
    @property
    def shape(self) -> torch.Size: ...
    @property
    def dtype(self) -> torch.dtype: ...
    @property
    def device(self) -> torch.device: ...
    @property
    def requires_grad(self) -> bool: ...
    @property
    def ident(self) -> int: ...
    @property
    def ndim(self) -> int: ...
    def dim(self) -> int: ...
    def numel(self) -> int: ...
    def describe(
        self, dtype_names: dict[torch.dtype, str], device_names: dict[torch.device, str]
    ) -> TensorMeta | None: ...

@final
class CallRecorder:
    """Records the module calls of one forward (``torchscan.crawl``)."""

    def __new__(
        cls,
        modules: list[tuple[torch.nn.Module, str, int]],
        log: list[OperatorRecord | int] | None,
        tensor: type[torch.Tensor],
        freeze: Callable[[object], object],
    ) -> CallRecorder: ...
    @property
    def top(self) -> int | None: ...
    @property
    def count(self) -> int: ...
    def enter(self, index: int) -> None: ...
    @staticmethod
    def leave(
        recorder: CallRecorder,
        module: torch.nn.Module,
        inputs: tuple[object, ...],
        output: object,
        kwargs: dict[str, object] | None = None,
    ) -> None: ...

@final
class OwnStorage:
    """The own parameters and buffers of every module of a model, from ``walk_storage``."""

@final
class StorageTie:
    """A group of tensors counted once: under more than one name, or overlapping in storage."""

    @property
    def names(self) -> list[str]: ...
    @property
    def tensors(self) -> int: ...
    @property
    def elements(self) -> int: ...
    @property
    def counted(self) -> int: ...

@final
class StorageWalk:
    """What ``walk_storage`` found: each module's own tensors, the storage totals, the ties."""

    @property
    def own(self) -> OwnStorage: ...
    @property
    def parameters(self) -> int: ...
    @property
    def trainable(self) -> int: ...
    @property
    def parameter_bytes(self) -> int: ...
    @property
    def buffer_elements(self) -> int: ...
    @property
    def buffer_bytes(self) -> int: ...
    @property
    def dtypes(self) -> list[torch.dtype]: ...
    @property
    def devices(self) -> list[torch.device]: ...
    @property
    def ties(self) -> list[StorageTie]: ...

@final
class FormulaTally:
    """What the deferred shape formulas of one operator entry came to."""

    @property
    def entry(self) -> Entry: ...
    @property
    def counted(self) -> int: ...
    @property
    def flops(self) -> int: ...
    @property
    def uncounted(self) -> int: ...
    @property
    def failures(self) -> list[str]: ...

@final
class Assembly:
    """The per-call parts of an analysis report, as ``Assembler.assemble`` returns them."""

    @property
    def layers(self) -> list[Layer]: ...
    @property
    def module_totals(self) -> dict[str, MetricResult]: ...
    @property
    def by_module(self) -> list[ModuleOperatorFlops]: ...
    @property
    def diagnostics(self) -> list[Diagnostic]: ...
    @property
    def tallies(self) -> list[FormulaTally]: ...
    @property
    def output_dtypes(self) -> list[tuple[str, int]]:
        """The floating dtypes the module calls returned, with their calls' own operator FLOPs.

        By name, in the order met; the FLOPs are 0 in structure mode.
        """

@final
class Assembler:
    """Assembles the per-call parts of analysis reports (made once per process)."""

    def __new__(
        cls,
        *,
        kind_of: Callable[[torch.nn.Module], ModuleKind],
        iter_tensors: Callable[[object], list[TensorSpec]],
        describe: Callable[[object], object],
        dtype_names: dict[torch.dtype, str],
        device_names: dict[torch.device, str],
        module_scope: str,
        module_method: str,
        path_scope: str,
        path_method: str,
        counted: int,
        deferred: int,
        uncounted: int,
        size_type: type[torch.Size],
        shape_elements: Callable[..., int],
    ) -> Assembler: ...
    def assemble(
        self,
        recorder: CallRecorder,
        own: OwnStorage,
        *,
        log: list[OperatorRecord | int] | None = None,
        seeds: list[tuple[int, int]] = ...,
    ) -> Assembly: ...

@final
class ModuleKind:
    """What the analysis needs of a module's type: its formula, field step and estimate."""

    def __new__(
        cls,
        *,
        has_formula: bool,
        transposed: bool,
        field: FieldFn | None,
        batched_passthrough: bool,
        estimate: EstimateFn | None,
    ) -> ModuleKind: ...
    @property
    def has_formula(self) -> bool: ...
    @property
    def transposed(self) -> bool: ...
    @property
    def field(self) -> FieldFn | None: ...
    @property
    def batched_passthrough(self) -> bool: ...
    @property
    def estimate(self) -> EstimateFn | None: ...

@final
class ModuleForward:
    """A module's ``forward`` while ``torchscan.crawl`` records it."""

    def __new__(
        cls,
        recorder: CallRecorder,
        index: int,
        module: torch.nn.Module,
        function: Callable[..., object],
        method: bool,
        previous: object,
    ) -> ModuleForward: ...
    @property
    def module(self) -> torch.nn.Module: ...
    # What the module's own forward stood in for: a function set on the instance, or a marker.
    @property
    def previous(self) -> object: ...
    @property
    def __wrapped__(self) -> Callable[..., object]: ...
    # Whatever the module's forward returns (a stand-in for it).
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

@final
class BlockTiming:
    """The timing statistics of a benchmark's blocks, as the validator recomputes them."""

    @property
    def latency_s(self) -> float: ...
    @property
    def latency_iqr_s(self) -> float: ...
    @property
    def calls(self) -> int: ...
    @property
    def timed_s(self) -> float: ...

@final
class Throughput:
    """A throughput and its unit, as the validator recomputes them."""

    @property
    def value(self) -> float: ...
    @property
    def unit(self) -> str: ...
