"""The Python TypedDicts mirror the Rust types, checked against the generated JSON Schema."""

from __future__ import annotations

import json
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import jsonschema
import pytest

from torchscan import reports

from .conftest import ROOT, valid_fixtures

SCHEMA_FILE = ROOT / "docs" / "schema" / "report.v1.schema.json"
SCHEMA = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
DEFS: dict[str, Any] = SCHEMA["$defs"]

# Rust types inlined into ValueMeta's tagged variants, named after the Python TypedDicts.
VALUE_META_VARIANTS = {
    "tensor": "TensorValueMeta",
    "tuple": "TupleValueMeta",
    "list": "ListValueMeta",
    "mapping": "MappingValueMeta",
    "dataclass": "DataclassValueMeta",
    "named_tuple": "NamedTupleValueMeta",
    "none": "NoneValueMeta",
    "scalar": "ScalarValueMeta",
    "object": "ObjectValueMeta",
}


def resolve(ref: str) -> tuple[str, dict[str, Any]]:
    name = ref.rsplit("/", 1)[-1]
    return name, DEFS[name]


def string_constants(schema: dict[str, Any]) -> frozenset[str] | None:
    """The strings an enum-like schema allows, or None when it is not enum-like."""
    if "enum" in schema:
        return frozenset(schema["enum"])
    if "const" in schema and isinstance(schema["const"], str):
        return frozenset([schema["const"]])
    if "oneOf" in schema:
        values: set[str] = set()
        for option in schema["oneOf"]:
            found = string_constants(option)
            if found is None:
                return None
            values |= found
        return frozenset(values)
    return None


def normal_schema(schema: dict[str, Any]) -> Any:
    """A comparable form of a property schema."""
    if "$ref" in schema:
        name, target = resolve(schema["$ref"])
        constants = string_constants(target)
        if constants is not None:
            return ("literal", constants)
        if name == "ValueMeta":
            return ("typed", "ValueMeta")
        if "anyOf" in target and "properties" not in target:
            return normal_schema(target)  # an untagged union of plain types, e.g. MappingKey
        return ("typed", name)
    if schema.get("const") == 1 and schema.get("type") == "integer":
        return ("literal", frozenset([1]))
    if "anyOf" in schema:
        options: set[Any] = set()
        for option in (normal_schema(option) for option in schema["anyOf"]):
            is_union = isinstance(option, tuple) and option[0] == "union"
            options |= set(option[1]) if is_union else {option}
        return ("union", frozenset(options))
    kind = schema.get("type")
    if isinstance(kind, list):
        options = [normal_schema({**schema, "type": k}) for k in kind]
        return ("union", frozenset(options))
    constants = string_constants(schema)
    if constants is not None:
        return ("literal", constants)
    if kind == "array":
        return ("list", normal_schema(schema["items"]))
    if kind == "object":
        return ("dict", normal_schema(schema["additionalProperties"]))
    return {
        "string": "str",
        "integer": "int",
        "number": "float",
        "boolean": "bool",
        "null": "None",
    }[kind]


def normal_python(annotation: Any) -> Any:
    """The same comparable form of a Python annotation."""
    origin = get_origin(annotation)
    if annotation is type(None):
        return "None"
    if annotation in (str, int, float, bool):
        return annotation.__name__
    if origin is Literal:
        return ("literal", frozenset(get_args(annotation)))
    if origin in (Union, types.UnionType):
        options = get_args(annotation)
        if set(options) == set(get_args(reports.ValueMeta)):
            return ("typed", "ValueMeta")
        normal = [normal_python(option) for option in options]
        literals = [n for n in normal if isinstance(n, tuple) and n[0] == "literal"]
        others = [n for n in normal if not (isinstance(n, tuple) and n[0] == "literal")]
        merged = others + (
            [("literal", frozenset().union(*(lit[1] for lit in literals)))] if literals else []
        )
        return ("union", frozenset(merged)) if len(merged) > 1 else merged[0]
    if origin is list:
        return ("list", normal_python(get_args(annotation)[0]))
    if origin is dict:
        return ("dict", normal_python(get_args(annotation)[1]))
    if typing.is_typeddict(annotation):
        return ("typed", annotation.__name__)
    raise AssertionError(f"unexpected annotation {annotation!r}")


def compare(schema_name: str, schema: dict[str, Any], python_type: Any) -> None:
    hints = get_type_hints(python_type)
    properties = schema["properties"]
    assert set(hints) == set(properties), (schema_name, set(hints) ^ set(properties))
    required = set(schema.get("required", []))
    assert required <= python_type.__required_keys__, (schema_name, required)
    assert python_type.__optional_keys__ <= set(properties) - required, schema_name
    for field, annotation in hints.items():
        expected = normal_schema(properties[field])
        actual = normal_python(annotation)
        if isinstance(expected, tuple) and expected[0] == "typed":
            # A TypedDict named like the Rust type, or the ValueMeta union.
            assert actual == expected, (schema_name, field, actual, expected)
        else:
            assert actual == expected, (schema_name, field, actual, expected)


STRUCTS = sorted(
    name
    for name, definition in DEFS.items()
    if definition.get("type") == "object" and "properties" in definition
)


def test_every_schema_object_has_a_typeddict() -> None:
    missing = [name for name in STRUCTS if not hasattr(reports, name)]
    assert missing == []


@pytest.mark.parametrize("name", STRUCTS)
def test_typeddict_mirrors_schema(name: str) -> None:
    compare(name, DEFS[name], getattr(reports, name))


def test_value_meta_variants_mirror_schema() -> None:
    variants = DEFS["ValueMeta"]["oneOf"]
    assert len(variants) == len(VALUE_META_VARIANTS) == len(get_args(reports.ValueMeta))
    for variant in variants:
        tag = variant["properties"]["kind"]["const"]
        compare(tag, variant, getattr(reports, VALUE_META_VARIANTS[tag]))


def test_report_union_lists_every_kind() -> None:
    kinds = {get_args(get_type_hints(t)["kind"])[0] for t in get_args(reports.Report)}
    assert kinds == {
        "analysis",
        "flops",
        "benchmark",
        "peak_memory",
        "output_check",
        "benchmark_comparison",
        "report_diff",
        "distributed_benchmark",
    }


@pytest.mark.parametrize("path", valid_fixtures(), ids=lambda p: p.name)
def test_valid_fixtures_satisfy_the_json_schema(path: Any) -> None:
    jsonschema.validate(json.loads(path.read_text(encoding="utf-8")), SCHEMA)
