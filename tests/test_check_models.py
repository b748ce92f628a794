"""check_outputs on Hugging Face outputs: ``ModelOutput``s and their caches, random weights.

Models are built from small configs; nothing is downloaded. Skipped without transformers (the
``models`` extra).
"""

from __future__ import annotations

import copy
import os
import re
from typing import Any

import pytest
import torch

import torchscan
from torchscan import check_outputs

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
transformers = pytest.importorskip("transformers")

LAYERS = 2


def gpt2() -> Any:
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=LAYERS,
        n_head=2,
        n_embd=32,
        n_positions=64,
        vocab_size=100,
        bos_token_id=0,
        eos_token_id=0,
    )
    return transformers.GPT2LMHeadModel(config).eval()


def resolve(value: Any, path: str) -> Any:
    """The node at a leaf path of a report (``.name``, ``name`` or ``[index]`` steps)."""
    for name, index in re.findall(r"\.?([A-Za-z_]\w*)|\[(\d+)\]", path):
        if index:
            value = value[int(index)]
        elif isinstance(value, dict) and name in value:
            value = value[name]
        else:
            value = getattr(value, name)
    return value


def cache_field(output: Any) -> str:
    """The output's cache field: ``cache`` in recent transformers, ``past_key_values`` before."""
    return "cache" if "cache" in output else "past_key_values"


def test_identical_gpt2_calls_pass_caches_included() -> None:
    model = gpt2()
    ids = torch.randint(0, 100, (2, 8), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        first, second = model(input_ids=ids), model(input_ids=ids)
    field = cache_field(first)
    assert type(getattr(first, field)).__name__ == "DynamicCache"
    report = check_outputs(first, second, rtol=0, atol=0)
    assert report["passed"], report["diagnostics"]
    assert report["diagnostics"] == [] and report["structure_differences"] == []
    paths = [leaf["path"] for leaf in report["leaves"]]
    # The logits and, per layer, one tensor of keys and one of values, whatever the cache's layout.
    assert paths[0] == ".logits"
    cached = [path for path in paths if path.startswith(f".{field}.")]
    assert len(cached) == 2 * LAYERS and len(paths) == 1 + 2 * LAYERS
    for path in cached:
        assert resolve(first, path).shape == (2, 2, 8, 16)  # batch, heads, positions, head size
    assert torchscan.validate_report(report) == "output_check"


def test_a_cache_tensor_that_differs_is_named_with_the_way_out() -> None:
    model = gpt2()
    ids = torch.randint(0, 100, (1, 8), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        baseline = model(input_ids=ids)
    candidate = copy.deepcopy(baseline)
    paths = [leaf["path"] for leaf in check_outputs(baseline, candidate, rtol=0, atol=0)["leaves"]]
    changed = paths[-1]  # the last layer's values
    resolve(candidate, changed)[0, 1, 3, 5] += 1.0
    report = check_outputs(baseline, candidate, rtol=0, atol=0)
    assert not report["passed"] and report["structure_matches"]
    failing = [(leaf["path"], leaf["mismatched_elements"]) for leaf in report["leaves"]]
    assert [item for item in failing if item[1]] == [(changed, 1)]
    (diagnostic,) = report["diagnostics"]
    assert diagnostic["code"] == "output_values_mismatch"
    elements = 1 * 2 * 8 * 16  # batch, heads, positions, head size
    assert diagnostic["message"].startswith(f"output leaf {changed} fails: 1 of {elements} ")
    assert "(for example .logits)" in diagnostic["message"]
    assert "use_cache=False" in diagnostic["message"]
    # use_cache=False leaves the cache out, and the logits agree.
    with torch.no_grad():
        uncached = model(input_ids=ids, use_cache=False)
    assert check_outputs(baseline.logits, uncached.logits, rtol=0, atol=0)["passed"]


def test_an_encoder_decoder_cache_is_compared_through_its_tensors() -> None:
    torch.manual_seed(0)
    config = transformers.T5Config(
        num_layers=1,
        num_decoder_layers=1,
        d_model=16,
        d_ff=32,
        num_heads=2,
        d_kv=8,
        vocab_size=50,
        decoder_start_token_id=0,
    )
    model = transformers.T5ForConditionalGeneration(config).eval()
    ids = torch.randint(0, 50, (1, 5), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        first = model(input_ids=ids, decoder_input_ids=ids[:, :3])
        second = model(input_ids=ids, decoder_input_ids=ids[:, :3])
    field = cache_field(first)
    assert type(getattr(first, field)).__name__ == "EncoderDecoderCache"
    report = check_outputs(first, second, rtol=0, atol=0)
    assert report["passed"], report["diagnostics"]
    cached = [leaf["path"] for leaf in report["leaves"] if leaf["path"].startswith(f".{field}.")]
    # Self-attention and cross-attention keys and values of the one decoder layer.
    assert len(cached) == 4
    shapes = sorted(tuple(resolve(first, path).shape) for path in cached)
    assert shapes == [(1, 2, 3, 8), (1, 2, 3, 8), (1, 2, 5, 8), (1, 2, 5, 8)]


def test_fp32_baseline_and_bf16_candidate_of_a_causal_lm() -> None:
    model = gpt2()
    candidate_model = copy.deepcopy(model).to(torch.bfloat16)
    ids = torch.randint(0, 100, (1, 8), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        baseline = model(input_ids=ids, use_cache=False)
        candidate = candidate_model(input_ids=ids, use_cache=False)
    strict = check_outputs(baseline, candidate, rtol=1.6e-2, atol=1e-2)
    assert not strict["passed"]
    (diagnostic,) = strict["diagnostics"]
    assert diagnostic["message"].startswith(
        "output leaf .logits differs: dtype torch.float32 vs torch.bfloat16."
    )
    assert "check_dtype=False" in diagnostic["message"]
    across = check_outputs(baseline, candidate, rtol=1.6e-2, atol=1e-2, check_dtype=False)
    assert across["passed"], across["diagnostics"]
    errors = (candidate.logits.double() - baseline.logits.double()).abs()
    assert across["leaves"][0]["max_abs_error"] == float(errors.max())
