"""What to pass when a model's forward fails on its inputs: the cases torchscan recognises.

``explain_forward_error`` looks at an exception a model's forward raised during an analysis
and, in two cases only, returns a :class:`~torchscan.ModelInputError` that says what to pass:
a generated (floating-point) input that reached an operation taking integer indices, and an
argument the forward needs but was not given. Anything else gives ``None``: the model's own
exception then propagates unchanged.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from typing import Any

from .errors import InvalidArgumentError, ModelInputError, TorchscanError

__all__ = [
    "explain_forward_error",
    "explain_shape_error",
    "failing_module",
    "index_operation",
    "missing_arguments",
    "unfilled_arguments",
]

# torch's errors for an index tensor of the wrong dtype, for example "Expected tensor for
# argument #1 'indices' to have one of the following scalar types: Long, Int; but got
# torch.FloatTensor instead (while checking arguments for embedding)", "index_select():
# Expected dtype int32 or int64 for index", "one_hot is only applicable to index tensor of
# type LongTensor." or "tensors used as indices must be long, int, byte or bool tensors".
_INDEX_WORDS = re.compile(r"\bind(?:ex|ices)\b", re.IGNORECASE)
_INTEGER_WORDS = re.compile(r"\b(?:long|int|int32|int64|longtensor)\b", re.IGNORECASE)
# Where torch names the operation: "... for embedding)", "gather(): ...", "one_hot is ...".
_OPERATION_NAMES = (
    re.compile(r"while checking arguments for (\w+)\)"),
    re.compile(r"^(\w+)\(\):"),
    re.compile(r"^(\w+) is only applicable"),
)
# Words with which a model says that an input is missing ("You must specify exactly one of
# input_ids or inputs_embeds", "You have to specify either decoder_input_ids or ...").
_ABSENCE_WORDS = re.compile(
    r"\b(?:specify|specified|must|required|missing|provide|provided|have to|needs?|either)\b",
    re.IGNORECASE,
)
_IDENTIFIERS = re.compile(r"[A-Za-z_]\w*")
# Words with which torch says that a tensor's shape does not fit: "Given groups=1, weight of size
# [16, 3, 3, 3], expected input[1, 1, 3, 224, 224] to have 3 channels", "mat1 and mat2 shapes
# cannot be multiplied (1x12 and 16x10)", "Expected 3D (unbatched) or 4D (batched) input to
# conv2d, but got input of size: [...]", "The size of tensor a (5) must match the size of tensor
# b (4) at non-singleton dimension 1", "shape '[1, -1]' is invalid for input of size 12".
_SHAPE_WORDS = re.compile(r"\b(?:sizes?|shapes?|dimensions?|dim|channels|[0-9]+D)\b", re.IGNORECASE)


def index_operation(error: BaseException) -> str | None:
    """The operation named by torch's error for an index tensor that is not an integer tensor.

    ``"embedding"``, ``"index_select"``, ... when torch names it, ``"an index operation"``
    when it does not, and ``None`` when ``error`` is not such an error.
    """
    if not isinstance(error, (RuntimeError, IndexError)) or isinstance(error, TorchscanError):
        return None
    text = str(error)
    if not (_INDEX_WORDS.search(text) and _INTEGER_WORDS.search(text)):
        return None
    for pattern in _OPERATION_NAMES:
        found = pattern.search(text)
        if found is not None:
            return found.group(1)
    return "an index operation"


def _signature(model: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(model.forward)
    except (TypeError, ValueError):
        return None


def missing_arguments(model: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> list[str]:
    """The required parameters of ``model.forward`` that ``args`` and ``kwargs`` leave unset.

    Empty when the arguments bind (or the forward's signature cannot be read, or there are
    too many of them: that is another error).
    """
    signature = _signature(model)
    if signature is None:
        return []
    try:
        signature.bind(*args, **kwargs)
        return []
    except TypeError:
        pass
    try:
        given = signature.bind_partial(*args, **kwargs).arguments
    except TypeError:
        return []
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return [
        name
        for name, parameter in signature.parameters.items()
        if parameter.default is inspect.Parameter.empty
        and parameter.kind not in variadic
        and name not in given
    ]


def unfilled_arguments(
    model: Any, args: Sequence[Any], kwargs: dict[str, Any], error: BaseException
) -> list[str]:
    """Optional parameters of ``model.forward`` that were not given and that ``error`` asks for.

    A model with optional inputs checks them itself and raises, as transformers' models do:
    "You must specify exactly one of input_ids or inputs_embeds". The parameters asked for are
    those named in the message (which must say that something is missing); when the message
    also names an argument that was given, it comes from an inner part of the model (the
    decoder of an encoder-decoder model, given ``input_ids`` but not ``decoder_input_ids``),
    and the parameters asked for are those ending in ``_`` and a name of the message
    (``decoder_input_ids``, ``decoder_inputs_embeds``).
    """
    if not isinstance(error, (ValueError, TypeError)) or isinstance(error, TorchscanError):
        return []
    text = str(error)
    if not _ABSENCE_WORDS.search(text):
        return []
    signature = _signature(model)
    if signature is None:
        return []
    try:
        given = signature.bind_partial(*args, **kwargs).arguments
    except TypeError:
        return []
    words = set(_IDENTIFIERS.findall(text))
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    unset = [
        name
        for name, parameter in signature.parameters.items()
        if parameter.kind not in variadic and name not in given
    ]
    named = [name for name in unset if name in words]
    if named and not words.intersection(given):
        return named
    return [name for name in unset if any(name.endswith(f"_{word}") for word in words)]


def _alternatives(names: list[str]) -> str:
    return " or ".join(f"`{name}`" for name in names)


def explain_forward_error(
    error: BaseException,
    model: Any,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    input_shape: Any,
    caller: str,
    shape_name: str = "input_shape",
) -> ModelInputError | None:
    """The error to raise instead of ``error``, or ``None`` to let ``error`` propagate.

    ``args`` and ``kwargs`` are what the forward was given; ``input_shape`` is not ``None``
    when ``args`` were generated from it (``caller`` is the public function), under the
    argument ``shape_name`` (``input_shape``, or torchinfo's ``input_size``).
    """
    given = f"{input_shape!r}" if shape_name == "input_shape" else f"{shape_name}={input_shape!r}"
    model_name = type(model).__name__
    generated = input_shape is not None
    if generated:
        floating = [value for value in args if value.is_floating_point() or value.is_complex()]
        operation = index_operation(error) if floating else None
        if operation is not None:
            what = operation if operation == "an index operation" else f"`{operation}`"
            message = (
                f"{caller}: {model_name} received the input generated from "
                f"{shape_name}={input_shape!r}, a {floating[0].dtype} tensor (generated inputs "
                "are floating-point, in the model's parameter dtype, unless dtype says "
                f"otherwise), and passed it to {what}, which takes integer indices. For token "
                f"ids, pass dtype=torch.long: {caller}(model, {given}, "
                "dtype=torch.long) generates zeros, a valid index for any vocabulary. Or pass "
                f"the real inputs instead of {shape_name}: args=(input_ids,) or "
                "kwargs={'input_ids': input_ids, ...}, forwarded unchanged. "
                f"(torch: {error})"
            )
            return ModelInputError.like(error, message)
    missing = missing_arguments(model, args, kwargs) if isinstance(error, TypeError) else []
    if missing:
        example = ", ".join(f"{name!r}: ..." for name in missing)
        with_shape = f" (together with {shape_name}, which gives the positional inputs)"
        message = (
            f"{caller}: {model_name}.forward needs {_alternatives(missing)}, which "
            f"{'was' if len(missing) == 1 else 'were'} not given. Pass "
            f"kwargs={{{example}}}{with_shape if generated else ''}, or every positional "
            f"input with args=(...). ({type(error).__name__}: {error})"
        )
        return ModelInputError.like(error, message, tuple(missing))
    unfilled = unfilled_arguments(model, args, kwargs, error)
    if unfilled:
        first = unfilled[0]
        with_shape = f" kwargs can be given together with {shape_name}." if generated else ""
        message = (
            f"{caller}: {model_name}.forward was not given {_alternatives(unfilled)}, and the "
            f"model asked for {'it' if len(unfilled) == 1 else 'one of them'}: pass "
            f"kwargs={{{first!r}: ...}} with the other inputs (an encoder-decoder model, for "
            "example, needs decoder_input_ids besides input_ids)."
            f"{with_shape} ({type(error).__name__}: {error})"
        )
        return ModelInputError.like(error, message, tuple(unfilled))
    return None


def failing_module(error: BaseException, named_modules: Sequence[tuple[str, Any]]) -> str | None:
    """The path of the innermost module of the model running when ``error`` was raised.

    Read from the traceback: the innermost frame whose ``self`` is one of ``named_modules``;
    ``None`` when none of the model's modules was running.
    """
    paths = {id(module): path for path, module in reversed(named_modules)}
    found = None
    trace = error.__traceback__
    while trace is not None:
        owner = trace.tb_frame.f_locals.get("self")
        if owner is not None and id(owner) in paths:
            found = paths[id(owner)]
        trace = trace.tb_next
    return found


def explain_shape_error(
    error: BaseException,
    model: Any,
    named_modules: Sequence[tuple[str, Any]],
    generated: Sequence[Any],
    input_shape: Any,
    input_size: Any,
    caller: str,
) -> InvalidArgumentError | None:
    """An ``InvalidArgumentError`` when the model refused the shape of generated inputs.

    ``generated`` are the inputs made from ``input_shape`` (a batch of one added) or
    ``input_size`` (batch included). Two cases: torch refused their shape in one of the model's
    layers (the error is raised in torch's code, and reads as a shape that does not fit), or the
    model's ``forward`` takes another number of positional inputs than the shapes give. The
    error says what was generated from what, where it was refused and which argument to use;
    ``None`` otherwise (the model's exception then propagates).
    """
    if not generated or isinstance(error, TorchscanError):
        return None
    origin = (
        f"input_shape={input_shape!r}" if input_shape is not None else f"input_size={input_size!r}"
    )
    if isinstance(error, TypeError):
        return _explain_input_count(error, model, named_modules, generated, origin, caller)
    if not isinstance(error, (RuntimeError, ValueError)):
        return None
    if not _SHAPE_WORDS.search(str(error)) or not _raised_in_torch(error):
        return None
    path = failing_module(error, named_modules)
    if path is None:
        where = f"{type(model).__name__}'s forward"
    else:
        module = model.get_submodule(path) if path else model
        shown = repr(module) if not module._modules else type(module).__name__
        where = f"layer {path or '(root)'} ({shown})"
    shapes = ", ".join(str(list(value.shape)) for value in generated)
    if input_shape is not None:
        sizes = [list(input_shape)] if _is_shape(input_shape) else [list(s) for s in input_shape]
        hint = "input_shape excludes the batch dimension (a batch of one is added)."
        # The batch dimension given twice: torch speaks of the number of dimensions, or the
        # shape starts with a batch of one.
        if _RANK_WORDS.search(str(error)) or all(len(s) > 1 and s[0] == 1 for s in sizes):
            hint += (
                f" If {input_shape!r} already includes it, pass input_size={input_shape!r} "
                "(torchinfo's convention, batch included)"
            )
            batched = [size[1:] for size in sizes if len(size) > 1]
            if len(batched) == len(sizes):
                example = batched[0] if len(batched) == 1 else batched
                hint += f" or input_shape={_as_tuples(example)!r}"
            hint += "; otherwise give the shape the model takes."
        else:
            hint += (
                " Give the shape of one input the model takes, without the batch dimension, or "
                "input_size with it."
            )
    else:
        hint = (
            "input_size includes the batch dimension (torchinfo's convention); input_shape "
            "excludes it. Give the shape the model takes."
        )
    message = (
        f"{caller}: the input generated from {origin} has shape {shapes}, and {where} refused "
        f"it: {type(error).__name__}: {error}. {hint} {_REAL_INPUTS}"
    )
    return InvalidArgumentError.like(error, message)


#: The last sentence of a shape error: what only the Python API offers.
_REAL_INPUTS = "Or pass the real inputs with args=(...) or input_data=(...)."

# torch's words for the number of dimensions: "Expected 3D (unbatched) or 4D (batched) input".
_RANK_WORDS = re.compile(r"\b\d+D\b|\b(?:un)?batched\b|\bdimensions\b", re.IGNORECASE)
_ARITY = re.compile(r"takes (\d+) positional arguments? but (\d+) (?:were|was) given")


def _explain_input_count(
    error: TypeError,
    model: Any,
    named_modules: Sequence[tuple[str, Any]],
    generated: Sequence[Any],
    origin: str,
    caller: str,
) -> InvalidArgumentError | None:
    """The model's ``forward`` refused the number of generated positional inputs."""
    if _ARITY.search(str(error)) is None or failing_module(error, named_modules) != "":
        return None
    signature = _signature(model)
    if signature is None:
        return None
    positional = [
        name
        for name, parameter in signature.parameters.items()
        if parameter.kind
        in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    keyword_only = [
        name
        for name, parameter in signature.parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    count = len(generated)
    takes = (
        f"takes {len(positional)} positional input{'s' if len(positional) != 1 else ''} "
        f"({', '.join(positional)})"
        if positional
        else "takes no positional input"
    )
    message = (
        f"{caller}: {origin} gives {count} input{'s' if count != 1 else ''}, one per shape, but "
        f"{type(model).__name__}.forward {takes}: give one shape per positional input."
    )
    if keyword_only:
        message += (
            f" Its keyword-only inputs ({', '.join(keyword_only)}) go in kwargs={{...}}, beside "
            "the shapes, or all inputs in input_data={...}."
        )
    message += f" (TypeError: {error})"
    return InvalidArgumentError.like(error, message)


def _raised_in_torch(error: BaseException) -> bool:
    """Whether torch raised ``error``: in its Python code, or in an operator its layers call.

    An error raised by the model's own code (its own checks, ``mask has the wrong shape``, or an
    operator it calls itself) speaks of the model, not of the generated input, and propagates
    unchanged.
    """
    import os

    import torch

    own = os.path.dirname(os.path.abspath(__file__)) + os.sep
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    # The analysis's dispatch mode calls each operator through torch's operator objects (and
    # torch wraps the mode in a guard against compilation): those frames say nothing of who
    # called the operator.
    plumbing = {
        os.path.join(torch_dir, *parts)
        for parts in (
            ("_ops.py",),
            ("_compile.py",),
            ("utils", "_python_dispatch.py"),
            ("_dynamo", "eval_frame.py"),
        )
    }
    files = []
    trace = error.__traceback__
    while trace is not None:
        files.append(os.path.abspath(trace.tb_frame.f_code.co_filename))
        trace = trace.tb_next
    for filename in reversed(files):
        if not filename.startswith(own) and filename not in plumbing:
            return filename.startswith(torch_dir)
    return False


def _is_shape(value: Any) -> bool:
    return isinstance(value, Sequence) and all(isinstance(size, int) for size in value)


def _as_tuples(value: Any) -> Any:
    if _is_shape(value):
        return tuple(value)
    return [tuple(shape) for shape in value]
