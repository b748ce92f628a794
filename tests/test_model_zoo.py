"""A model zoo: third-party architectures from their packages' configs, with random weights.

Every model is built from its package's config or constructor, scaled down (fewer layers,
smaller widths, small images and sequences) and never with downloaded weights; nothing may touch
the network. Each package belongs to the ``models`` extra: a model whose package is missing is
skipped. docs/model-support.md lists the zoo with each configuration.

Each model is checked against oracles computed apart from torchscan:

- operator FLOPs of ``measure_flops`` equal ``torch.utils.flop_counter.FlopCounterMode``'s total
  with gradients enabled, for a forward and for a forward plus backward; where
  ``FlopCounterMode`` is wrong (it has no formula for ``aten::_native_multi_head_attention``, the
  fused inference attention of ViT under ``no_grad``, nor for ``aten::mkldnn_rnn_layer``, the
  oneDNN LSTM kernel), the count is checked by hand and ``FlopCounterMode``'s shortfall is shown;
  mixture-of-experts models (Mixtral, Qwen2-MoE) run their experts as ``aten::_grouped_mm``, which
  it does not count either: ``FlopCounterMode``'s total plus the experts' matmuls by hand from the
  routing, and ``FlopCounterMode`` over the same model with the eager (per-expert) experts;
- every operator the model runs is counted, or excluded under a class its name is listed with in
  ``torchscan.opflops.classify`` (never placed only by PyTorch's tags);
- parameters equal the elements of distinct storages the parameters cover;
- ``crawl_module`` writes a valid analysis report and ``measure_workload`` a valid benchmark.
"""

from __future__ import annotations

import copy
import os
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils import flop_counter
from torch.utils.flop_counter import FlopCounterMode, conv_flop_count

from tests.models import ResNet18, TinyCNN
from torchscan import crawl_module, measure_flops, measure_workload, validate_report
from torchscan.opflops.classify import named_class

torch.set_num_threads(1)

# transformers and huggingface_hub read these when they are imported (lazily, in the builders).
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"

ROOT = Path(__file__).resolve().parent.parent
VOCAB_SIZE = 1000
SEQUENCE_LENGTH = 16
IMAGE = 64
WORKLOAD_BUDGET = {"min_time_s": 0.05, "max_time_s": 0.2, "min_blocks": 5, "warmup_time_s": 0.0}


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a connection fails the test."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"a zoo test tried to reach the network: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


def generator() -> torch.Generator:
    return torch.Generator().manual_seed(0)


def token_ids(length: int = SEQUENCE_LENGTH) -> torch.Tensor:
    return torch.randint(0, VOCAB_SIZE, (1, length), generator=generator())


def image() -> torch.Tensor:
    return torch.rand(1, 3, IMAGE, IMAGE, generator=generator())


# -- the zoo ---------------------------------------------------------------------------------------


@dataclass
class Built:
    """A model and the arguments of one call."""

    model: nn.Module
    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    def __call__(self) -> Any:
        return self.model(*self.args, **self.kwargs)


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
        pad_token_id=0,
    )


def gpt2() -> Built:
    transformers = pytest.importorskip("transformers")
    ids = token_ids()
    return Built(transformers.GPT2LMHeadModel(gpt2_config()), (ids,), {})


def bert() -> Built:
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(
        vocab_size=VOCAB_SIZE,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=64,
    )
    ids = token_ids()
    mask = torch.ones_like(ids)
    mask[0, -4:] = 0  # padding: the attention mask is used, not skipped
    return Built(transformers.BertModel(config), (ids,), {"attention_mask": mask})


def t5() -> Built:
    transformers = pytest.importorskip("transformers")
    config = transformers.T5Config(
        vocab_size=VOCAB_SIZE,
        d_model=64,
        d_kv=32,
        d_ff=128,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=2,
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=1,
    )
    model = transformers.T5ForConditionalGeneration(config)
    return Built(model, (), {"input_ids": token_ids(), "decoder_input_ids": token_ids(8)})


def whisper_encoder() -> Built:
    transformers = pytest.importorskip("transformers")
    modeling = pytest.importorskip("transformers.models.whisper.modeling_whisper")
    config = transformers.WhisperConfig(
        vocab_size=VOCAB_SIZE,
        d_model=64,
        encoder_layers=2,
        encoder_attention_heads=2,
        encoder_ffn_dim=128,
        num_mel_bins=16,
        max_source_positions=16,
        pad_token_id=0,
        bos_token_id=0,
        eos_token_id=0,
        decoder_start_token_id=0,
    )
    # The encoder takes exactly 2 * max_source_positions frames of num_mel_bins features.
    features = torch.randn(1, 16, 32, generator=generator())
    return Built(modeling.WhisperEncoder(config), (features,), {})


def wav2vec2() -> Built:
    transformers = pytest.importorskip("transformers")
    config = transformers.Wav2Vec2Config(
        vocab_size=32,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        conv_dim=(32, 32, 32),
        conv_stride=(5, 2, 2),
        conv_kernel=(10, 3, 3),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4,
        # SpecAugment draws its masks with numpy's global generator in training, and LayerDrop
        # skips layers at random in training: both off, so every run dispatches the same
        # operators (FlopCounterMode's reference and the count compared with it).
        apply_spec_augment=False,
        layerdrop=0.0,
    )
    audio = torch.randn(1, 1600, generator=generator())
    return Built(transformers.Wav2Vec2Model(config), (audio,), {})


def torchvision_resnet50() -> Built:
    models = pytest.importorskip("torchvision.models")
    return Built(models.resnet50(weights=None, num_classes=10), (image(),), {})


# ViT-B/16's layout (patch 16, class token, pre-norm encoder) at a small width and depth.
VIT = {"image_size": IMAGE, "patch_size": 16, "num_layers": 2, "num_heads": 4, "hidden_dim": 64}
VIT_MLP = 128
VIT_CLASSES = 10


def torchvision_vit() -> Built:
    models = pytest.importorskip("torchvision.models")
    model = models.VisionTransformer(**VIT, mlp_dim=VIT_MLP, num_classes=VIT_CLASSES)
    return Built(model, (image(),), {})


def torchvision_mobilenet_v3() -> Built:
    models = pytest.importorskip("torchvision.models")
    return Built(models.mobilenet_v3_small(weights=None, num_classes=10), (image(),), {})


def timm_convnext() -> Built:
    timm = pytest.importorskip("timm")
    model = timm.create_model(
        "convnext_tiny",
        pretrained=False,
        depths=(1, 1, 2, 1),
        dims=(24, 48, 96, 192),
        num_classes=10,
    )
    return Built(model, (image(),), {})


def timm_efficientnet() -> Built:
    timm = pytest.importorskip("timm")
    model = timm.create_model("efficientnet_b0", pretrained=False, num_classes=10)
    return Built(model, (image(),), {})


# Recurrent layers: input 32, hidden 64, two layers, a batch of 2 sequences of 10 steps.
RNN_INPUT, RNN_HIDDEN, RNN_BATCH, RNN_STEPS = 32, 64, 2, 10


def rnn_input() -> torch.Tensor:
    return torch.randn(RNN_BATCH, RNN_STEPS, RNN_INPUT, generator=generator())


def lstm() -> Built:
    return Built(nn.LSTM(RNN_INPUT, RNN_HIDDEN, num_layers=2, batch_first=True), (rnn_input(),), {})


def gru() -> Built:
    return Built(nn.GRU(RNN_INPUT, RNN_HIDDEN, num_layers=2, batch_first=True), (rnn_input(),), {})


class TwoHeads(nn.Module):
    """A shared trunk with two heads, returned as a dict (as detection models return theirs)."""

    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(32, 64), nn.GELU())
        self.classes = nn.Linear(64, 10)
        self.boxes = nn.Linear(64, 4)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        features = self.trunk(x)
        return {"classes": self.classes(features), "boxes": self.boxes(features).sigmoid()}


@dataclass
class EncoderOutput:
    """A dataclass output with a tensor, a tuple of tensors and a non-tensor field."""

    last_hidden_state: torch.Tensor
    hidden_states: tuple[torch.Tensor, ...]
    note: str = "encoder"


class DataclassEncoder(nn.Module):
    """Two residual feed-forward blocks that return an :class:`EncoderOutput`."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(32), nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 32))
            for _ in range(2)
        )

    def forward(self, x: torch.Tensor) -> EncoderOutput:
        states = [x]
        for block in self.blocks:
            states.append(states[-1] + block(states[-1]))
        return EncoderOutput(states[-1], tuple(states))


def dict_outputs() -> Built:
    return Built(TwoHeads(), (torch.randn(4, 32, generator=generator()),), {})


def dataclass_outputs() -> Built:
    return Built(DataclassEncoder(), (torch.randn(4, 32, generator=generator()),), {})


@dataclass(frozen=True)
class ZooModel:
    name: str
    build: Callable[[], Built]


ZOO = [
    ZooModel("transformers.GPT2LMHeadModel", gpt2),
    ZooModel("transformers.BertModel", bert),
    ZooModel("transformers.T5ForConditionalGeneration", t5),
    ZooModel("transformers.WhisperEncoder", whisper_encoder),
    ZooModel("transformers.Wav2Vec2Model", wav2vec2),
    ZooModel("torchvision.resnet50", torchvision_resnet50),
    ZooModel("torchvision.VisionTransformer(ViT-B/16 layout)", torchvision_vit),
    ZooModel("torchvision.mobilenet_v3_small", torchvision_mobilenet_v3),
    ZooModel("timm.convnext_tiny", timm_convnext),
    ZooModel("timm.efficientnet_b0", timm_efficientnet),
    ZooModel("torch.nn.LSTM", lstm),
    ZooModel("torch.nn.GRU", gru),
    ZooModel("dict outputs", dict_outputs),
    ZooModel("dataclass outputs", dataclass_outputs),
]
IDS = [entry.name for entry in ZOO]
# Models whose FLOPs FlopCounterMode gets wrong, checked by hand in their own tests.
FLOP_COUNTER_MODE_WRONG = {"torch.nn.LSTM"}
# Models with grouped or depthwise convolutions, whose weight gradient PyTorch's formula counts
# ``groups`` times (see ``conv_backward_by_groups``).
GROUPED_CONVOLUTIONS = {
    "transformers.Wav2Vec2Model",
    "torchvision.mobilenet_v3_small",
    "timm.convnext_tiny",
    "timm.efficientnet_b0",
}


# -- oracles ---------------------------------------------------------------------------------------


def conv_backward_by_groups(
    grad_out_shape: Any,
    x_shape: Any,
    w_shape: Any,
    _bias: Any,
    _stride: Any,
    _padding: Any,
    _dilation: Any,
    transposed: bool,
    _output_padding: Any,
    groups: int,
    output_mask: Any,
    out_shape: Any = None,
    **kwargs: Any,
) -> int:
    """PyTorch's ``conv_backward_flop`` with the weight gradient divided by ``groups``.

    PyTorch computes the weight gradient's FLOPs as a convolution of the transposed input with
    the transposed output gradient, with every input channel meeting every output channel: a
    grouped convolution's input channel meets only the ``C_out / groups`` channels of its group.
    """

    def t(shape: Any) -> list[int]:
        return [shape[1], shape[0], *shape[2:]]

    flops = 0
    if output_mask[0]:
        flops += conv_flop_count(grad_out_shape, w_shape, out_shape[0], not transposed)
    if output_mask[1]:
        pair = (t(grad_out_shape), t(x_shape)) if transposed else (t(x_shape), t(grad_out_shape))
        whole = conv_flop_count(pair[0], pair[1], t(out_shape[1]), transposed=False)
        assert whole % groups == 0
        flops += whole // groups
    return flops


def _cpu_flash_attention(query: Any, key: Any, value: Any, *args: Any, **kwargs: Any) -> int:
    return int(flop_counter.sdpa_flop_count(query, key, value))


def _cpu_flash_attention_backward(
    grad_out: Any, query: Any, key: Any, value: Any, *args: Any, **kwargs: Any
) -> int:
    return int(flop_counter.sdpa_backward_flop_count(grad_out, query, key, value))


def formulas_since_torch_2_15() -> dict[Any, Any]:
    """FlopCounterMode's formulas for the CPU flash-attention kernel, where torch lacks them.

    Before torch 2.15 FlopCounterMode has no formula for
    ``aten::_scaled_dot_product_flash_attention_for_cpu`` (nor its backward), which every
    ``scaled_dot_product_attention`` on CPU runs, and counts it as zero. torch 2.15 registers
    the same ``sdpa_flop_count`` / ``sdpa_backward_flop_count`` as for the CUDA kernels; on an
    older torch the oracle gets exactly that registration, so it stays torch's own count.
    """
    aten = torch.ops.aten
    if aten._scaled_dot_product_flash_attention_for_cpu in flop_counter.flop_registry:
        return {}
    return {
        aten._scaled_dot_product_flash_attention_for_cpu: _cpu_flash_attention,
        aten._scaled_dot_product_flash_attention_for_cpu_backward: _cpu_flash_attention_backward,
    }


def flop_counter_mode_total(fn: Callable[[], Any], *, groups_fixed: bool = True) -> int:
    """FlopCounterMode's total; by default with grouped convolutions' weight gradients fixed.

    On a torch before 2.15 the CPU flash-attention formulas are added as torch 2.15 has them.
    """
    mapping = formulas_since_torch_2_15()
    if groups_fixed:
        mapping[torch.ops.aten.convolution_backward] = conv_backward_by_groups
    with FlopCounterMode(display=False, custom_mapping=mapping) as mode:
        fn()
    return int(mode.get_total_flops())


def flop_counter_mode_operators(fn: Callable[[], Any]) -> set[str]:
    with FlopCounterMode(display=False) as mode:
        fn()
    counts = mode.get_flop_counts()["Global"]
    return {f"aten::{op.__name__.split('.')[0]}" for op in counts}


def storage_parameter_count(model: nn.Module) -> int:
    """Elements of distinct storages covered by the parameters, each element counted once."""
    covered: dict[tuple[int, int], torch.Tensor] = {}
    for _, parameter in model.named_parameters(remove_duplicate=False):
        storage = parameter.untyped_storage()
        size = storage.nbytes() // parameter.element_size()
        key = (storage.data_ptr(), parameter.element_size())
        mask = covered.setdefault(key, torch.zeros(size, dtype=torch.bool))
        positions = torch.arange(size).as_strided(
            parameter.shape, parameter.stride(), parameter.storage_offset()
        )
        mask[positions] = True
    return sum(int(mask.sum()) for mask in covered.values())


def floating_leaves(value: Any) -> Iterator[torch.Tensor]:
    """Every floating tensor of an output: tensors, sequences, mappings, dataclasses."""
    if isinstance(value, torch.Tensor):
        if value.is_floating_point():
            yield value
    elif isinstance(value, dict):  # transformers' ModelOutput is a dict too
        for item in value.values():
            yield from floating_leaves(item)
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from floating_leaves(item)
    elif is_dataclass(value) and not isinstance(value, type):
        for field in fields(value):
            yield from floating_leaves(getattr(value, field.name))


def forward_and_backward(built: Built) -> Callable[[], None]:
    def step() -> None:
        loss = sum(leaf.float().sum() for leaf in floating_leaves(built()))
        assert isinstance(loss, torch.Tensor)
        loss.backward()

    return step


def operator_flops(report: Any) -> Any:
    return report["operator_flops"]


def assert_complete_and_named(report: Any) -> int:
    """Complete, and every excluded operator placed by its name: the total."""
    flops = operator_flops(report)
    assert flops["uncounted"] == []
    assert flops["total"]["status"] == "complete", flops["total"]["reason"]
    unnamed = {
        op["operator"]: op["class"]
        for op in flops["excluded"]
        if named_class(op["operator"]) != op["class"]
    }
    assert unnamed == {}, f"operators without a class by name in opflops/classify.py: {unnamed}"
    return int(flops["total"]["value"])


def training_flags(model: nn.Module) -> dict[str, bool]:
    return {name: module.training for name, module in model.named_modules()}


# -- every model -----------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", ZOO, ids=IDS)
def test_operator_flops_equal_flop_counter_mode_with_grad(entry: ZooModel) -> None:
    built = entry.build()
    model = built.model
    model.eval()
    with torch.enable_grad():
        forward = assert_complete_and_named(measure_flops(built))
        model.train()
        flags = training_flags(model)
        training = assert_complete_and_named(measure_flops(forward_and_backward(built)))
        assert training_flags(model) == flags
        assert torch.is_grad_enabled()
        if entry.name not in FLOP_COUNTER_MODE_WRONG:
            assert training == flop_counter_mode_total(forward_and_backward(built))
            # PyTorch's own formula over-counts grouped convolutions' weight gradients only.
            unfixed = flop_counter_mode_total(forward_and_backward(built), groups_fixed=False)
            assert (unfixed > training) == (entry.name in GROUPED_CONVOLUTIONS)
            model.eval()
            assert forward == flop_counter_mode_total(built, groups_fixed=False)
    assert forward > 0
    # A backward pass computes the gradients of inputs and weights of every counted matmul or
    # convolution: at least as much again as the forward, at most twice as much.
    assert 2 * forward <= training <= 3 * forward


@pytest.mark.parametrize("entry", ZOO, ids=IDS)
def test_analysis_report(entry: ZooModel) -> None:
    built = entry.build()
    model = built.model.eval()
    report = crawl_module(model, args=built.args, kwargs=built.kwargs)
    assert validate_report(report) == "analysis"
    assert report["totals"]["parameters"]["value"] == storage_parameter_count(model)
    # A model with children gives the parameters under it at its root: the model's, ties once.
    root = report["layers"][0]
    assert root["path"] == ""
    if next(model.children(), None) is not None:
        total = root["parameters"]["total"]
        assert total["trainable"] + total["frozen"] == storage_parameter_count(model)
    # The analysis runs without gradients (ViT's fused attention, for one): the same total.
    analysed = assert_complete_and_named(report)
    with torch.enable_grad():
        assert analysed == assert_complete_and_named(measure_flops(built))


@pytest.mark.parametrize("entry", ZOO, ids=IDS)
def test_workload_report(entry: ZooModel) -> None:
    built = entry.build()
    built.model.eval()

    @torch.no_grad()
    def workload() -> Any:
        return built()

    report = measure_workload(workload, print_summary=False, **WORKLOAD_BUDGET)
    assert validate_report(report) == "benchmark"
    metrics = report["metrics"]
    assert metrics["latency"]["status"] == "complete"
    assert metrics["latency"]["value"] > 0
    assert metrics["operator_flops"]["status"] == "complete"
    with torch.no_grad():
        assert metrics["operator_flops"]["value"] == assert_complete_and_named(measure_flops(built))
    assert metrics["tensor_memory_peak"]["status"] == "complete"
    assert metrics["tensor_memory_peak"]["value"] > 0


# -- where FlopCounterMode is wrong: counted by hand ----------------------------------------------


def vit_flops_by_hand(with_fused_attention_counted: bool = True) -> int:
    hidden, heads = VIT["hidden_dim"], VIT["num_heads"]
    patches = (VIT["image_size"] // VIT["patch_size"]) ** 2
    tokens = patches + 1  # the class token
    patch_embedding = 2 * patches * hidden * 3 * VIT["patch_size"] ** 2
    projections = 2 * tokens * hidden * 3 * hidden + 2 * tokens * hidden * hidden
    # Per head: scores q @ k^T and context p @ v, each tokens x tokens x head width.
    attention = heads * 2 * (2 * tokens * tokens * (hidden // heads))
    mlp = 2 * (2 * tokens * hidden * VIT_MLP)
    layer = (projections + attention if with_fused_attention_counted else 0) + mlp
    head = 2 * hidden * VIT_CLASSES  # on the class token only
    return patch_embedding + VIT["num_layers"] * layer + head


def test_vit_without_grad_counts_the_fused_attention_that_flop_counter_mode_misses() -> None:
    pytest.importorskip("torchvision")
    built = torchvision_vit()
    built.model.eval()
    assert vit_flops_by_hand() == 3_950_336
    with torch.no_grad():
        report = measure_flops(built)
        assert assert_complete_and_named(report) == vit_flops_by_hand()
        counted = {op["operator"] for op in operator_flops(report)["counted"]}
        assert "aten::_native_multi_head_attention" in counted
        # FlopCounterMode has no formula for the fused kernel: it counts the rest only.
        assert flop_counter_mode_total(built) == vit_flops_by_hand(False) == 2_688_256
        assert "aten::_native_multi_head_attention" not in flop_counter_mode_operators(built)
    with torch.enable_grad():  # the unfused path: both agree with the hand count
        assert assert_complete_and_named(measure_flops(built)) == vit_flops_by_hand()
        assert flop_counter_mode_total(built) == vit_flops_by_hand()


def rnn_flops_by_hand(gates: int) -> int:
    """Gate matmuls of both layers over every step: 2 FLOPs per multiply-accumulate."""
    tokens = RNN_BATCH * RNN_STEPS
    first = 2 * tokens * gates * RNN_HIDDEN * (RNN_INPUT + RNN_HIDDEN)
    second = 2 * tokens * gates * RNN_HIDDEN * (RNN_HIDDEN + RNN_HIDDEN)
    return first + second


def test_lstm_counts_the_onednn_kernel_that_flop_counter_mode_misses() -> None:
    built = lstm()
    assert rnn_flops_by_hand(gates=4) == 2_293_760
    with torch.enable_grad():
        report = measure_flops(built)
        assert assert_complete_and_named(report) == rnn_flops_by_hand(gates=4)
        counted = {op["operator"] for op in operator_flops(report)["counted"]}
        assert counted == {"aten::mkldnn_rnn_layer"}
        # FlopCounterMode sees the same kernel and counts nothing for it.
        assert flop_counter_mode_total(built) == 0
        # The backward kernel computes the gradients of the inputs and of the weights: each a
        # matmul of the forward's size.
        training = measure_flops(forward_and_backward(built))
        assert assert_complete_and_named(training) == 3 * rnn_flops_by_hand(gates=4)
        assert flop_counter_mode_total(forward_and_backward(built)) == 0


def test_gru_counts_its_gate_matmuls() -> None:
    built = gru()
    with torch.enable_grad():
        assert assert_complete_and_named(measure_flops(built)) == rnn_flops_by_hand(gates=3)
        assert flop_counter_mode_total(built) == rnn_flops_by_hand(gates=3) == 1_720_320


# -- one causal LM: a training step and generate() -------------------------------------------------


def test_gpt2_training_step_with_adamw() -> None:
    built = gpt2()
    model = built.model.train()
    (ids,) = built.args
    twin = copy.deepcopy(model)
    plain = copy.deepcopy(model)

    def step_of(network: nn.Module) -> Callable[[], None]:
        optimizer = torch.optim.AdamW(network.parameters(), lr=1e-3)

        def step() -> None:
            optimizer.zero_grad(set_to_none=True)
            network(ids, labels=ids).loss.backward()
            optimizer.step()

        return step

    flags = training_flags(model)
    torch.manual_seed(1)  # the same dropout masks in every step
    report = measure_flops(step_of(model))
    total = assert_complete_and_named(report)
    torch.manual_seed(1)
    assert total == flop_counter_mode_total(step_of(twin))
    assert total > 0
    # The optimizer's update is elementwise: excluded, and named.
    classes = {op["operator"]: op["class"] for op in operator_flops(report)["excluded"]}
    assert classes["aten::addcdiv_"] == "elementwise"
    assert classes["aten::lerp_"] == "elementwise"
    # The measured step leaves the model as a plain step does: the same weights, the same flags.
    torch.manual_seed(1)
    step_of(plain)()
    assert training_flags(model) == flags
    assert torch.is_grad_enabled()
    for (name, measured), (_, expected) in zip(
        model.named_parameters(), plain.named_parameters(), strict=True
    ):
        assert torch.equal(measured, expected), name


def gpt2_generate_flops_by_hand(prompt: int, new_tokens: int) -> int:
    """The prompt's forward, then one forward per further token over the cache.

    Per token and layer: the qkv projection 64 -> 192, the output projection 64 -> 64 and the MLP
    64 -> 256 -> 64; attention scores and context over the L keys in the cache, 2 x 2 x L x 64
    (both heads); the LM head 64 -> 1000 on the last position only (``logits_to_keep=1``).
    """
    width, layers, vocab = 64, 2, VOCAB_SIZE
    linear = 2 * (width * 3 * width + width * width + 2 * width * 4 * width)
    head = 2 * width * vocab

    def attention(queries: int, keys: int) -> int:
        return 2 * 2 * queries * keys * width

    total = layers * (prompt * linear + attention(prompt, prompt)) + head
    for keys in range(prompt + 1, prompt + new_tokens):
        total += layers * (linear + attention(1, keys)) + head
    return total


@pytest.mark.parametrize("sampling", [False, True], ids=["greedy", "sampling"])
def test_gpt2_generate_is_complete_and_equals_flop_counter_mode(sampling: bool) -> None:
    built = gpt2()
    model = built.model.eval()
    (ids,) = built.args

    def generate() -> Any:
        torch.manual_seed(2)
        options = {"do_sample": True, "top_k": 20, "top_p": 0.9} if sampling else {}
        return model.generate(ids, max_new_tokens=4, min_new_tokens=4, pad_token_id=0, **options)

    report = measure_flops(generate)
    total = assert_complete_and_named(report)
    assert total == flop_counter_mode_total(generate)
    assert total == gpt2_generate_flops_by_hand(prompt=SEQUENCE_LENGTH, new_tokens=4)
    # isin (stop tokens) does no floating-point arithmetic: excluded, not a reason to be partial.
    classes = {op["operator"]: op["class"] for op in operator_flops(report)["excluded"]}
    assert classes["aten::isin"] == "no_arithmetic"
    assert "aten::isin" not in {op["operator"] for op in operator_flops(report)["uncounted"]}


# -- mixture of experts: the experts' grouped matmuls ---------------------------------------------

MOE_HIDDEN = 32
MOE_EXPERTS = 4
MOE_TOP_K = 2
MOE_LAYERS = 2


@dataclass(frozen=True)
class MoeModel:
    name: str
    build: Callable[[], Built]
    expert_width: int  # each expert's intermediate width


def mixtral() -> Built:
    transformers = pytest.importorskip("transformers")
    config = transformers.MixtralConfig(
        vocab_size=VOCAB_SIZE,
        hidden_size=MOE_HIDDEN,
        intermediate_size=64,
        num_hidden_layers=MOE_LAYERS,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_local_experts=MOE_EXPERTS,
        num_experts_per_tok=MOE_TOP_K,
        max_position_embeddings=64,
    )
    return Built(transformers.MixtralForCausalLM(config), (token_ids(),), {})


def qwen2_moe() -> Built:
    transformers = pytest.importorskip("transformers")
    if not hasattr(transformers, "Qwen2MoeConfig"):
        pytest.skip("this transformers has no Qwen2-MoE")
    config = transformers.Qwen2MoeConfig(
        vocab_size=VOCAB_SIZE,
        hidden_size=MOE_HIDDEN,
        intermediate_size=64,
        moe_intermediate_size=16,
        shared_expert_intermediate_size=48,
        num_hidden_layers=MOE_LAYERS,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_experts=MOE_EXPERTS,
        num_experts_per_tok=MOE_TOP_K,
        max_position_embeddings=64,
    )
    return Built(transformers.Qwen2MoeForCausalLM(config), (token_ids(),), {})


MOE = [
    MoeModel("transformers.MixtralForCausalLM", mixtral, expert_width=64),
    MoeModel("transformers.Qwen2MoeForCausalLM", qwen2_moe, expert_width=16),
]


class ExpertRouting:
    """The experts every token was sent to, in each call of each experts module.

    A pre-hook on every module holding the experts' 3-D ``gate_up_proj`` keeps its
    ``top_k_index`` argument (tokens x top-k expert ids, from the router): no operator runs.
    """

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.calls: list[torch.Tensor] = []
        self.handles: list[Any] = []

    def __enter__(self) -> ExpertRouting:
        for module in self.model.modules():
            weight = getattr(module, "gate_up_proj", None)
            if isinstance(weight, torch.Tensor) and weight.dim() == 3:
                self.handles.append(module.register_forward_pre_hook(self._record))
        assert len(self.handles) == MOE_LAYERS
        return self

    def _record(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        self.calls.append(args[1])

    def __exit__(self, *exc: Any) -> None:
        for handle in self.handles:
            handle.remove()


def experts_flops_by_hand(routing: ExpertRouting, width: int) -> int:
    """Each expert's matmuls over the tokens routed to it, 2 FLOPs per multiply-accumulate.

    Expert ``e`` with ``m_e`` tokens: gate and up projections ``m_e x hidden -> 2 x width`` and
    the down projection ``m_e x width -> hidden``. Every token meets ``top_k`` experts, so the
    ``m_e`` of one layer sum to tokens x top_k whatever the routing.
    """
    total = 0
    for top_k_index in routing.calls:
        tokens = [int((top_k_index == expert).sum()) for expert in range(MOE_EXPERTS)]
        assert sum(tokens) == top_k_index.shape[0] * MOE_TOP_K == SEQUENCE_LENGTH * MOE_TOP_K
        for routed in tokens:
            total += 2 * routed * MOE_HIDDEN * 2 * width + 2 * routed * width * MOE_HIDDEN
    return total


def eager_experts(built: Built) -> Built:
    """A copy of the model whose experts loop over the experts hit with one ``linear`` each."""
    model = copy.deepcopy(built.model)
    model.config._experts_implementation = "eager"
    return Built(model, built.args, built.kwargs)


@pytest.mark.parametrize("entry", MOE, ids=[entry.name for entry in MOE])
def test_mixture_of_experts_counts_the_grouped_expert_matmuls(entry: MoeModel) -> None:
    """transformers 5 runs the experts as ``aten::_grouped_mm`` and counts tokens per expert
    with ``aten::histc``. Oracles: ``FlopCounterMode``, which has no formula for the grouped
    matmul (it counts everything else), plus the experts' matmuls by hand from the routing the
    router chose; and ``FlopCounterMode`` over the same model with the eager experts, whose
    per-expert ``linear`` calls it does count.
    """
    built = entry.build()
    model = built.model.eval()
    eager = eager_experts(built)
    with torch.no_grad():
        report = measure_flops(built)
        forward = assert_complete_and_named(report)
        with ExpertRouting(model) as routing:
            rest = flop_counter_mode_total(built)
        assert "aten::_grouped_mm" not in flop_counter_mode_operators(built)
        experts = experts_flops_by_hand(routing, entry.expert_width)
        assert forward == rest + experts
        assert forward == flop_counter_mode_total(eager)
    flops = operator_flops(report)
    counted = {op["operator"]: (op["calls"], op["flops"]) for op in flops["counted"]}
    assert counted["aten::_grouped_mm"] == (2 * MOE_LAYERS, experts)  # up, then down
    classes = {op["operator"]: op["class"] for op in flops["excluded"]}
    assert classes["aten::histc"] == "reduction"
    # The analysis (its own recorder) counts the same.
    analysis = crawl_module(model, args=built.args)
    assert validate_report(analysis) == "analysis"
    assert assert_complete_and_named(analysis) == forward

    # A training step: the backward's grouped matmuls give each expert's input gradient (2-D x
    # 3-D, like the forward) and weight gradient (2-D x 2-D, groups along the contraction): each
    # the forward's multiply-accumulates.
    model.train()
    eager.model.train()
    with torch.enable_grad():
        report = measure_flops(forward_and_backward(built))
        training = assert_complete_and_named(report)
        with ExpertRouting(model) as routing:
            rest = flop_counter_mode_total(forward_and_backward(built))
        assert training == rest + 3 * experts_flops_by_hand(routing, entry.expert_width)
        assert training == flop_counter_mode_total(forward_and_backward(eager))
    counted = {op["operator"]: op["calls"] for op in operator_flops(report)["counted"]}
    assert counted["aten::_grouped_mm"] == 3 * 2 * MOE_LAYERS


# -- the operators of the tests' own models and of the benchmarks --------------------------------


def deep_stack() -> nn.Module:
    """benches/bench_analysis.py and bench_render.py: Linear(16, 16) and ReLU alternating."""
    return nn.Sequential(*(nn.Linear(16, 16) if i % 2 == 0 else nn.ReLU() for i in range(20)))


HAND_WRITTEN: list[tuple[str, Callable[[], nn.Module], tuple[int, ...]]] = [
    ("tests.models.ResNet18", ResNet18, (1, 3, IMAGE, IMAGE)),
    ("tests.models.TinyCNN", TinyCNN, (2, 3, 8, 8)),
    ("benches: Linear/ReLU stack", deep_stack, (1, 16)),
    (
        "benches: Conv2d, ReLU, Flatten, Linear",
        lambda: nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(288, 10)),
        (1, 3, 8, 8),
    ),
    ("benches: Linear(128, 128)", lambda: nn.Linear(128, 128), (32, 128)),
]


@pytest.mark.parametrize(
    ("name", "build", "shape"), HAND_WRITTEN, ids=[name for name, _, _ in HAND_WRITTEN]
)
def test_hand_written_and_benchmark_models_name_every_operator(
    name: str, build: Callable[[], nn.Module], shape: tuple[int, ...]
) -> None:
    torch.manual_seed(0)
    model = build()
    built = Built(model, (torch.randn(shape),), {})
    model.train()
    with torch.enable_grad():
        training = assert_complete_and_named(measure_flops(forward_and_backward(built)))
        assert training == flop_counter_mode_total(forward_and_backward(built))
    model.eval()
    with torch.inference_mode():
        inference = assert_complete_and_named(measure_flops(built))
        assert inference == flop_counter_mode_total(built)
    assert 2 * inference <= training <= 3 * inference
    assert assert_complete_and_named(crawl_module(model, args=built.args)) == inference


# -- the docs -------------------------------------------------------------------------------------


def test_model_support_page_lists_the_zoo() -> None:
    text = (ROOT / "docs" / "model-support.md").read_text(encoding="utf-8")
    section = text.split("## The model zoo", 1)[1].split("\n## ", 1)[0]
    for entry in ZOO:
        assert f"`{entry.name}`" in section, entry.name
