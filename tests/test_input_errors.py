"""Errors that say what to pass: generated float inputs at index operations, missing arguments."""

from __future__ import annotations

import io
import os
import pickle
from typing import Any

import pytest
import torch
from torch import nn

from torchscan import ModelInputError, TorchscanError, crawl_module, summary

torch.set_num_threads(1)

# transformers reads these when it is imported (lazily, in the builders): no download, ever.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"

# torch's own message for a float tensor reaching an embedding.
EMBEDDING_ERROR = (
    "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
    "Long, Int; but got torch.FloatTensor instead (while checking arguments for embedding)"
)


def tiny_gpt2() -> Any:
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(
        vocab_size=100, n_embd=32, n_layer=1, n_head=2, n_positions=64, bos_token_id=0,
        eos_token_id=0,
    )  # fmt: skip
    return transformers.GPT2Model(config).eval()


def tiny_t5(kind: str) -> Any:
    transformers = pytest.importorskip("transformers")
    config = transformers.T5Config(
        vocab_size=100, d_model=32, d_kv=16, d_ff=64, num_layers=1, num_heads=2
    )
    return getattr(transformers, kind)(config).eval()


def test_a_generated_float_input_at_a_gpt2_embedding_says_to_pass_token_ids() -> None:
    model = tiny_gpt2()
    with pytest.raises(ModelInputError) as caught:
        crawl_module(model, (32,))
    error = caught.value
    # Still the kind of error torch raised, with torch's error as its cause.
    assert isinstance(error, RuntimeError) and isinstance(error, TorchscanError)
    assert type(error.__cause__) is RuntimeError
    assert str(error.__cause__) == EMBEDDING_ERROR
    assert error.missing == ()
    assert str(error) == (
        "crawl_module: GPT2Model received the input generated from input_shape=(32,), a "
        "torch.float32 tensor (generated inputs are floating-point, in the model's parameter "
        "dtype, unless dtype says otherwise), and passed it to `embedding`, which takes integer "
        "indices. For token ids, pass dtype=torch.long: crawl_module(model, (32,), "
        "dtype=torch.long) generates zeros, a valid index for any vocabulary. Or pass the real "
        "inputs instead of input_shape: args=(input_ids,) or kwargs={'input_ids': input_ids, "
        f"...}}, forwarded unchanged. (torch: {EMBEDDING_ERROR})"
    )
    # Each way out the message gives works.
    report = crawl_module(model, (32,), dtype=torch.long)
    assert report["inputs"]["args"][0]["dtype"] == "torch.int64"
    ids = torch.randint(0, 100, (1, 32))
    assert crawl_module(model, args=(ids,))["totals"]["operator_flops"]["status"] == "complete"
    assert crawl_module(model, kwargs={"input_ids": ids})["inputs"]["source"] == "provided"


def test_summary_names_itself_and_its_dtype_keyword() -> None:
    model = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 2))
    model.train()
    with pytest.raises(ModelInputError, match=r"^summary: Sequential received") as caught:
        summary(model, (3,))
    assert "summary(model, (3,), dtype=torch.long)" in str(caught.value)
    assert "passed it to `embedding`" in str(caught.value)
    # The model's state is restored as after any error of the forward.
    assert model.training and model[0].training
    assert summary(model, (3,), dtype=torch.long, file=io.StringIO())["mode"] == "full"


class Indexing(nn.Module):
    """A model that uses its (generated) input as indices with one index operation."""

    def __init__(self, operation: str) -> None:
        super().__init__()
        self.operation = operation
        self.table = nn.Parameter(torch.randn(5, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.operation == "index_select":
            return self.table.index_select(0, x.flatten())
        if self.operation == "gather":
            return self.table.gather(0, x.expand(5, 4))
        if self.operation == "one_hot":
            return nn.functional.one_hot(x, 5).float() @ self.table
        return self.table[x]  # indexing


@pytest.mark.parametrize(
    ("operation", "kind", "named"),
    [
        ("index_select", RuntimeError, "`index_select`"),
        ("gather", RuntimeError, "`gather`"),
        ("one_hot", RuntimeError, "`one_hot`"),
        ("indexing", IndexError, "an index operation"),
    ],
)
def test_other_index_operations_get_the_same_explanation(
    operation: str, kind: type[Exception], named: str
) -> None:
    model = Indexing(operation)
    with pytest.raises(ModelInputError) as caught:
        crawl_module(model, (1,))
    assert isinstance(caught.value, kind)
    assert type(caught.value.__cause__) is kind
    assert f"and passed it to {named}, which takes integer indices" in str(caught.value)
    assert "crawl_module(model, (1,), dtype=torch.long)" in str(caught.value)
    assert crawl_module(model, (1,), dtype=torch.long)["mode"] == "full"


def test_a_float_index_from_provided_inputs_propagates_unchanged() -> None:
    # The caller gave the float tensor: torch's error is theirs, not torchscan's to rewrite.
    with pytest.raises(RuntimeError) as caught:
        crawl_module(nn.Embedding(10, 4), args=(torch.zeros(1, 3),))
    assert type(caught.value) is RuntimeError
    assert str(caught.value) == EMBEDDING_ERROR


class Failing(nn.Module):
    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        raise self.error


@pytest.mark.parametrize(
    "error",
    [
        RuntimeError("boom"),
        IndexError("index 7 is out of bounds for dimension 0 with size 5"),
        ValueError("You must specify a positive scale"),  # names no parameter
        TypeError("unsupported operand type(s) for +: 'int' and 'str'"),
        ValueError("mask has the wrong shape"),  # names a parameter, but says nothing is missing
    ],
)
def test_unrelated_errors_of_the_model_propagate_as_they_are(error: Exception) -> None:
    with pytest.raises(type(error)) as caught:
        crawl_module(Failing(error), (3,))
    assert caught.value is error


class KeywordOnly(nn.Module):
    def forward(self, x: torch.Tensor, *, mask: torch.Tensor) -> torch.Tensor:
        return x * mask


def test_a_missing_keyword_only_argument_is_named_with_the_way_to_pass_it() -> None:
    with pytest.raises(ModelInputError) as caught:
        crawl_module(KeywordOnly(), (3,))
    error = caught.value
    assert isinstance(error, TypeError)
    assert error.missing == ("mask",)
    cause = "KeywordOnly.forward() missing 1 required keyword-only argument: 'mask'"
    assert str(error.__cause__) == cause
    assert str(error) == (
        "crawl_module: KeywordOnly.forward needs `mask`, which was not given. Pass "
        "kwargs={'mask': ...} (together with input_shape, which gives the positional inputs), "
        f"or every positional input with args=(...). (TypeError: {cause})"
    )
    report = crawl_module(KeywordOnly(), (3,), kwargs={"mask": torch.ones(1, 3)})
    assert report["inputs"]["kwargs"]["mask"]["shape"] == [1, 3]


def test_missing_positional_arguments_are_all_named() -> None:
    class Three(nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
            return x + y + z

    with pytest.raises(ModelInputError) as caught:
        crawl_module(Three(), args=(torch.ones(2),))
    assert caught.value.missing == ("y", "z")
    assert "Three.forward needs `y` or `z`, which were not given" in str(caught.value)
    assert "Pass kwargs={'y': ..., 'z': ...}, or every positional" in str(caught.value)


@pytest.mark.parametrize("kind", ["T5ForConditionalGeneration", "T5Model"])
def test_an_encoder_decoder_without_decoder_inputs_names_them(kind: str) -> None:
    model = tiny_t5(kind)
    ids = torch.zeros(1, 8, dtype=torch.long)
    for call in (
        lambda: crawl_module(model, (8,), dtype=torch.long),
        lambda: crawl_module(model, kwargs={"input_ids": ids}),
    ):
        with pytest.raises(ModelInputError) as caught:
            call()
        error = caught.value
        assert isinstance(error, ValueError)
        # What transformers raises, from the decoder, given input_ids but no decoder inputs.
        assert type(error.__cause__) is ValueError
        assert str(error.__cause__) == "You must specify exactly one of input_ids or inputs_embeds"
        assert error.missing == ("decoder_input_ids", "decoder_inputs_embeds")
        assert str(error).startswith(
            f"crawl_module: {kind}.forward was not given `decoder_input_ids` or "
            "`decoder_inputs_embeds`, and the model asked for one of them: pass "
            "kwargs={'decoder_input_ids': ...} with the other inputs"
        )
    report = crawl_module(
        model, (8,), dtype=torch.long, kwargs={"decoder_input_ids": torch.zeros(1, 4).long()}
    )
    assert report["totals"]["operator_flops"]["status"] == "complete"


def test_a_float_input_at_a_t5_encoder_is_explained_first() -> None:
    with pytest.raises(ModelInputError, match="passed it to `embedding`"):
        crawl_module(tiny_t5("T5ForConditionalGeneration"), (8,))


def test_the_error_pickles_with_its_kind_and_missing_arguments() -> None:
    with pytest.raises(ModelInputError) as caught:
        crawl_module(KeywordOnly(), (3,))
    copy = pickle.loads(pickle.dumps(caught.value))
    assert type(copy) is type(caught.value) and isinstance(copy, TypeError)
    assert (str(copy), copy.missing) == (str(caught.value), ("mask",))
