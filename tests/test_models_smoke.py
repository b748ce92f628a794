"""Smoke tests over real architectures from torchvision, timm and transformers.

Every model is built without weights (``weights=None``, ``pretrained=False`` or a config object)
at a small size, and nothing may touch the network. Each package is optional (the ``models``
extra): its cases are skipped where it is not installed.

``CASES`` records what is incomplete today for each model: the operators without a FLOP formula
and the module types without a module-estimate formula. The tests fail when a new gap appears
and keep passing when a gap is closed (update the table and docs/model-support.md then).
"""

from __future__ import annotations

import io
import os
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from torchscan import (
    IncompleteAnalysisError,
    crawl_module,
    measure_flops,
    summary,
    validate_report,
)
from torchscan.formulas import supported_module_types
from torchscan.opflops.classify import named_class

torch.set_num_threads(1)

# transformers and huggingface_hub read these when they are imported (lazily, in the builders).
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"

SEQUENCE_LENGTH = 16
VOCAB_SIZE = 1000


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a connection fails the test."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"a smoke test tried to reach the network: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


# -- builders: each imports its package lazily, so a missing package skips only its cases --------


def torchvision_model(name: str, **kwargs: Any) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        models = pytest.importorskip("torchvision.models")
        model: nn.Module = getattr(models, name)(weights=None, **kwargs)
        return model

    return build


def torchvision_tiny_vit() -> nn.Module:
    models = pytest.importorskip("torchvision.models")
    model: nn.Module = models.VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=64, mlp_dim=128
    )
    return model


def timm_model(name: str, **kwargs: Any) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        timm = pytest.importorskip("timm")
        model: nn.Module = timm.create_model(name, pretrained=False, **kwargs)
        return model

    return build


def bert_config() -> Any:
    transformers = pytest.importorskip("transformers")
    return transformers.BertConfig(
        vocab_size=VOCAB_SIZE,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=64,
    )


def gpt2_config() -> Any:
    transformers = pytest.importorskip("transformers")
    return transformers.GPT2Config(
        vocab_size=VOCAB_SIZE,
        n_embd=64,
        n_layer=2,
        n_head=2,
        n_positions=64,
        bos_token_id=0,
        eos_token_id=0,
    )


def distilbert_config() -> Any:
    transformers = pytest.importorskip("transformers")
    return transformers.DistilBertConfig(
        vocab_size=VOCAB_SIZE,
        dim=64,
        n_layers=2,
        n_heads=2,
        hidden_dim=128,
        max_position_embeddings=64,
    )


def t5_config() -> Any:
    transformers = pytest.importorskip("transformers")
    return transformers.T5Config(
        vocab_size=VOCAB_SIZE, d_model=64, d_kv=32, d_ff=128, num_layers=2, num_heads=2
    )


def hf_model(class_name: str, config: Callable[[], Any]) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        transformers = pytest.importorskip("transformers")
        model: nn.Module = getattr(transformers, class_name)(config())
        return model

    return build


def token_inputs() -> dict[str, Any]:
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(0, VOCAB_SIZE, (1, SEQUENCE_LENGTH), generator=generator)
    attention_mask = torch.ones(1, SEQUENCE_LENGTH, dtype=torch.long)
    # input_ids positionally: every model here takes it first.
    return {"args": (input_ids,), "kwargs": {"attention_mask": attention_mask}}


def image_inputs(size: int) -> Callable[[], dict[str, Any]]:
    return lambda: {"input_shape": (3, size, size)}


@dataclass(frozen=True)
class Case:
    """One architecture and what torchscan cannot count in it today."""

    name: str
    build: Callable[[], nn.Module]
    inputs: Callable[[], dict[str, Any]]
    #: operators without a FLOP formula today (operator FLOPs partial when not empty)
    uncounted: frozenset[str] = frozenset()
    #: leaf module types without a module-estimate formula today (module estimates partial)
    without_formula: frozenset[str] = frozenset()
    #: tensors reachable under more than one name (tied weights)
    shared_tensors: int = 0


CASES = [
    Case("torchvision.resnet18", torchvision_model("resnet18"), image_inputs(64)),
    Case(
        "torchvision.mobilenet_v3_small",
        torchvision_model("mobilenet_v3_small"),
        image_inputs(64),
    ),
    Case(
        "torchvision.efficientnet_b0",
        torchvision_model("efficientnet_b0"),
        image_inputs(64),
    ),
    Case(
        "torchvision.convnext_tiny",
        torchvision_model("convnext_tiny"),
        image_inputs(64),
    ),
    Case("torchvision.densenet121", torchvision_model("densenet121"), image_inputs(64)),
    Case("torchvision.VisionTransformer(tiny)", torchvision_tiny_vit, image_inputs(32)),
    Case("timm.resnet10t", timm_model("resnet10t"), image_inputs(64)),
    Case(
        "timm.mobilevitv2_050",
        timm_model("mobilevitv2_050"),
        image_inputs(64),
    ),
    Case(
        "timm.vit_tiny_patch16_224(img_size=64)",
        timm_model("vit_tiny_patch16_224", img_size=64),
        image_inputs(64),
    ),
    Case(
        "timm.convnext_atto",
        timm_model("convnext_atto"),
        image_inputs(64),
    ),
    Case(
        "transformers.BertModel",
        hf_model("BertModel", bert_config),
        token_inputs,
    ),
    Case(
        "transformers.BertForMaskedLM",
        hf_model("BertForMaskedLM", bert_config),
        token_inputs,
        # decoder weight = word embeddings, decoder bias = prediction bias
        shared_tensors=2,
    ),
    Case(
        "transformers.GPT2Model",
        hf_model("GPT2Model", gpt2_config),
        token_inputs,
    ),
    Case(
        "transformers.GPT2LMHeadModel",
        hf_model("GPT2LMHeadModel", gpt2_config),
        token_inputs,
        shared_tensors=1,  # lm_head.weight = transformer.wte.weight
    ),
    Case(
        "transformers.DistilBertModel",
        hf_model("DistilBertModel", distilbert_config),
        token_inputs,
    ),
    Case(
        "transformers.T5EncoderModel",
        hf_model("T5EncoderModel", t5_config),
        token_inputs,
        shared_tensors=1,  # encoder.embed_tokens.weight = shared.weight
    ),
]

#: Complete today in both views (operator FLOPs and module estimates).
COMPLETE = {case.name for case in CASES if not case.uncounted and not case.without_formula}


def unique_parameter_count(model: nn.Module) -> int:
    unique = {id(p): p for _, p in model.named_parameters(remove_duplicate=False)}
    return sum(p.numel() for p in unique.values())


def training_flags(model: nn.Module) -> dict[str, bool]:
    return {name: module.training for name, module in model.named_modules()}


def mixed_training_state(model: nn.Module) -> None:
    """Train mode with one submodule in eval, so restoring must be per module."""
    model.train()
    children = list(model.children())
    children[len(children) // 2].eval()


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_full_analysis(case: Case) -> None:
    model = case.build()
    mixed_training_state(model)
    flags = training_flags(model)
    grad_enabled = torch.is_grad_enabled()

    report = crawl_module(model, **case.inputs())

    assert validate_report(report) == "analysis"
    assert training_flags(model) == flags
    assert torch.is_grad_enabled() == grad_enabled
    assert report["mode"] == "full"
    assert report["layers"]

    totals = report["totals"]
    assert totals["parameters"]["value"] == unique_parameter_count(model)
    assert totals["shared_tensors"] >= case.shared_tensors
    if case.shared_tensors:
        assert any(d["code"] == "shared_tensors" for d in report["diagnostics"])

    # Operator FLOPs: complete, or partial with every uncounted operator named by a diagnostic.
    operator_flops = report["operator_flops"]
    total = operator_flops["total"]
    uncounted = {op["operator"] for op in operator_flops["uncounted"]}
    named = {d["operator"] for d in report["diagnostics"] if d["code"] == "uncounted_operator"}
    assert named == uncounted
    assert total["status"] == ("partial" if uncounted else "complete")
    assert total["known_value"] > 0
    assert {op["operator"] for op in operator_flops["counted"]}
    assert uncounted <= case.uncounted, f"new uncounted operators: {uncounted - case.uncounted}"
    # Every excluded operator is placed by its name in opflops/classify.py, not only by tags.
    unnamed = {
        op["operator"]: op["class"]
        for op in operator_flops["excluded"]
        if named_class(op["operator"]) != op["class"]
    }
    assert unnamed == {}, f"operators without a class by name: {unnamed}"

    # Module estimates: complete, or partial with the leaf modules without a formula named.
    modules = dict(model.named_modules())
    missing = [d for d in report["diagnostics"] if d["code"] == "module_without_formula"]
    missing_types = set()
    for diagnostic in missing:
        module = modules[diagnostic["path"]]
        assert next(iter(module.children()), None) is None, diagnostic["path"]
        assert type(module).__name__ in diagnostic["message"]
        missing_types.add(type(module).__name__)
    assert missing_types <= case.without_formula, (
        f"new module types without a formula: {missing_types - case.without_formula}"
    )
    for name in ("module_flops", "macs", "dmas"):
        metric = totals[name]
        if missing:
            assert metric["status"] == "partial", name
        elif not uncounted:
            assert metric["status"] == "complete", name
        # An uncounted operator matters only where it ran in a module without a formula: a
        # leaf with a formula (Hardswish running aten::hardswish_) is estimated by its formula.
        assert (metric["status"] == "partial") == bool(metric["reason"]), name
        assert metric["known_value"] > 0, name

    if case.name in COMPLETE:
        assert total["status"] == "complete"
        assert totals["module_flops"]["status"] == "complete"


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_structure_mode_and_summary(case: Case) -> None:
    model = case.build()
    mixed_training_state(model)
    flags = training_flags(model)

    report = crawl_module(model, **case.inputs(), mode="structure")
    assert validate_report(report) == "analysis"
    assert report["mode"] == "structure"
    assert report["totals"]["parameters"]["value"] == unique_parameter_count(model)
    assert report["totals"]["module_flops"]["status"] == "unavailable"
    assert report["operator_flops"]["total"]["status"] == "unavailable"
    assert training_flags(model) == flags

    out = io.StringIO()
    summary(model, **case.inputs(), max_depth=2, file=out)
    text = out.getvalue()
    assert text.strip()
    assert type(model).__name__ in text
    assert training_flags(model) == flags


def test_expected_complete_models() -> None:
    # The bar: ResNet-18 and BERT count every operator; ResNet-18 is complete throughout.
    assert "torchvision.resnet18" in COMPLETE
    bert = next(case for case in CASES if case.name == "transformers.BertModel")
    assert not bert.uncounted


def test_resnet18_at_224_matches_the_known_count_in_strict_mode() -> None:
    models = pytest.importorskip("torchvision.models")
    model = models.resnet18(weights=None)
    report = crawl_module(model, (3, 224, 224), strict=True)
    assert report["totals"]["parameters"]["value"] == 11_689_512
    assert report["operator_flops"]["total"]["status"] == "complete"
    assert report["operator_flops"]["total"]["value"] == 3_628_146_688
    assert report["totals"]["macs"]["status"] == "complete"


# Operator FLOPs of the small BertModel by hand, per layer (hidden 64, intermediate 128, 2 heads of
# 32, 16 tokens): q, k, v and output projections 4 x 2*16*64*64, feed-forward 2 x 2*16*64*128,
# scores and context 2 heads x 2*16*16*(32+32); plus the pooler 2*64*64 on the first token.
BERT_LAYER_FLOPS = 4 * 2 * 16 * 64 * 64 + 2 * 2 * 16 * 64 * 128 + 2 * 2 * 16 * 16 * 64
BERT_OPERATOR_FLOPS = 2 * BERT_LAYER_FLOPS + 2 * 64 * 64


def test_bert_operator_flops_are_complete() -> None:
    model = hf_model("BertModel", bert_config)()
    report = crawl_module(model, **token_inputs())
    total = report["operator_flops"]["total"]
    assert total["status"] == "complete"
    assert total["value"] == BERT_OPERATOR_FLOPS == 2_236_416


def test_bert_passes_strict_mode() -> None:
    # The issue's bar: transformers' GELUActivation has a formula by class name.
    model = hf_model("BertModel", bert_config)()
    report = crawl_module(model, **token_inputs(), strict=True)
    assert report["operator_flops"]["total"]["value"] == BERT_OPERATOR_FLOPS


def test_vit_counts_the_same_with_and_without_the_attention_fast_path() -> None:
    model = torchvision_tiny_vit()
    report = crawl_module(model, (3, 32, 32))
    counted = {op["operator"] for op in report["operator_flops"]["counted"]}
    # eval + no grad: nn.MultiheadAttention takes its fused inference kernel.
    assert "aten::_native_multi_head_attention" in counted
    image = torch.rand(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    model.eval()
    with torch.enable_grad():  # gradients on: the unfused path
        slow = measure_flops(lambda: model(image))
    assert "aten::_native_multi_head_attention" not in {
        op["operator"] for op in slow["operator_flops"]["counted"]
    }
    assert slow["operator_flops"]["total"]["status"] == "complete"
    assert slow["operator_flops"]["total"]["value"] == report["operator_flops"]["total"]["value"]


def test_transformer_inputs_by_keyword_only() -> None:
    model = hf_model("BertModel", bert_config)()
    inputs = token_inputs()
    (input_ids,) = inputs["args"]
    report = crawl_module(model, kwargs={"input_ids": input_ids, **inputs["kwargs"]})
    assert report["operator_flops"]["total"]["value"] == BERT_OPERATOR_FLOPS


def test_strict_mode_names_what_is_incomplete() -> None:
    class LayerScale(nn.Module):
        """A leaf with a parameter and no formula."""

        def __init__(self, dim: int) -> None:
            super().__init__()
            self.gamma = nn.Parameter(torch.ones(dim))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.gamma

    model = hf_model("GPT2Model", gpt2_config)()
    block = model.h[0]
    block.ln_2 = nn.Sequential(block.ln_2, LayerScale(model.config.n_embd))
    with pytest.raises(IncompleteAnalysisError) as raised:
        crawl_module(model, **token_inputs(), strict=True)
    assert raised.value.report["operator_flops"]["total"]["status"] == "complete"
    paths = {
        d["path"]
        for d in raised.value.report["diagnostics"]
        if d["code"] == "module_without_formula"
    }
    assert paths == {"h.0.ln_2.1"}
    assert ("module_flops", "partial") in raised.value.metrics


def test_model_support_page_lists_every_module_type_with_a_formula() -> None:
    text = (Path(__file__).resolve().parent.parent / "docs" / "model-support.md").read_text(
        encoding="utf-8"
    )
    table = text.split("| family | types |", 1)[1].split("\n\n", 1)[0]
    rows = [line.split("|")[2] for line in table.splitlines() if line.startswith("| ")]
    listed = [name for row in rows for name in re.findall(r"`(\w+)`", row)]
    assert sorted(listed) == supported_module_types()
