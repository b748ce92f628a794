"""Operator FLOPs: exact oracles, classification, kernel-independence, module breakdown, state."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.utils._python_dispatch import _get_current_dispatch_mode  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

import torchscan  # noqa: E402
from torchscan.errors import InvalidArgumentError  # noqa: E402
from torchscan.flops import OperatorFlopCounter, measure_flops  # noqa: E402

from .models import ResNet18  # noqa: E402

torch.set_num_threads(1)


# -- models ---------------------------------------------------------------------------------------


class BertLayer(nn.Module):
    """An HF-style BERT layer built from nn modules (explicit matmul attention)."""

    def __init__(self, hidden: int = 64, heads: int = 4, intermediate: int = 128):
        super().__init__()
        self.hidden, self.heads = hidden, heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attention_output = nn.Linear(hidden, hidden)
        self.attention_norm = nn.LayerNorm(hidden)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.output = nn.Linear(intermediate, hidden)
        self.output_norm = nn.LayerNorm(hidden)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x: Any, mask: Any) -> Any:
        batch, length, _ = x.shape
        head_dim = self.hidden // self.heads

        def split(t: Any) -> Any:
            return t.view(batch, length, self.heads, head_dim).permute(0, 2, 1, 3)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / head_dim**0.5 + mask
        probs = self.dropout(torch.softmax(scores, dim=-1))
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        context = context.view(batch, length, self.hidden)
        x = self.attention_norm(x + self.dropout(self.attention_output(context)))
        y = self.output(nn.functional.gelu(self.intermediate(x)))
        return self.output_norm(x + self.dropout(y))


class Bert(nn.Module):
    def __init__(self, vocab: int = 100, hidden: int = 64, layers: int = 2, positions: int = 32):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(positions, hidden)
        self.token_type = nn.Embedding(2, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.dropout = nn.Dropout(0.1)
        self.layers = nn.ModuleList([BertLayer(hidden) for _ in range(layers)])
        self.pooler = nn.Linear(hidden, hidden)

    def forward(self, ids: Any, attention: Any) -> Any:
        positions = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        embedded = (
            self.word(ids) + self.position(positions) + self.token_type(torch.zeros_like(ids))
        )
        x = self.dropout(self.norm(embedded))
        mask = (1.0 - attention[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, mask)
        return torch.tanh(self.pooler(x[:, 0]))


@torch.library.custom_op("torchscan_test::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@scale.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


# -- helpers --------------------------------------------------------------------------------------


def total(report: Any) -> float:
    return float(report["operator_flops"]["total"]["known_value"])


def status(report: Any) -> str:
    return str(report["operator_flops"]["total"]["status"])


def counted(report: Any) -> dict[str, float]:
    return {op["operator"]: op["flops"] for op in report["operator_flops"]["counted"]}


def excluded(report: Any) -> dict[str, str]:
    return {op["operator"]: op["class"] for op in report["operator_flops"]["excluded"]}


def by_module(report: Any) -> dict[str, Any]:
    return {entry["path"]: entry["flops"] for entry in report["operator_flops"]["modules"]}


def flop_counter_total(fn: Callable[[], Any]) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return int(counter.get_total_flops())


def assert_clean(*modules: nn.Module) -> None:
    """No dispatch mode and no hook is left behind."""
    assert _get_current_dispatch_mode() is None
    assert torch._C._len_torch_dispatch_stack() == 0
    from torch.nn.modules import module as nn_module

    assert not nn_module._global_forward_pre_hooks
    assert not nn_module._global_forward_hooks
    for root in modules:
        for module in root.modules():
            assert not module._forward_pre_hooks
            assert not module._forward_hooks
            assert not module._forward_hooks_always_called


def grad_modes() -> list[Callable[[], contextlib.AbstractContextManager[Any]]]:
    return [contextlib.nullcontext, torch.no_grad, torch.inference_mode]


@pytest.fixture(autouse=True)
def _seed() -> Iterator[None]:
    torch.manual_seed(0)
    yield
    assert_clean()


# -- exact oracles (ORACLES.md) -------------------------------------------------------------------

SINGLE_LAYERS = [
    pytest.param(lambda: nn.Linear(128, 128), (32, 128), 1_048_576, id="linear-128"),
    pytest.param(lambda: nn.Linear(16, 4), (8, 16), 1_024, id="linear-16-4"),
    pytest.param(lambda: nn.Linear(16, 4), (2, 5, 16), 1_280, id="linear-3d"),
    pytest.param(lambda: nn.Conv2d(3, 8, 3), (1, 3, 32, 32), 388_800, id="conv"),
    pytest.param(
        lambda: nn.Conv2d(8, 8, 3, padding=1, groups=4), (1, 8, 10, 10), 28_800, id="conv-groups"
    ),
    pytest.param(
        lambda: nn.ConvTranspose2d(4, 2, 3, stride=2), (1, 4, 5, 5), 3_600, id="conv-transpose"
    ),
]


@pytest.mark.parametrize(("make", "shape", "expected"), SINGLE_LAYERS)
@pytest.mark.parametrize("grad_mode", grad_modes(), ids=["grad", "no_grad", "inference_mode"])
def test_single_layer_oracles(make: Any, shape: Any, expected: int, grad_mode: Any) -> None:
    layer = make()
    x = torch.randn(*shape)
    with grad_mode():
        report = measure_flops(lambda: layer(x), modules=layer)
    assert status(report) == "complete"
    assert total(report) == expected
    assert report["operator_flops"]["uncounted"] == []
    assert report["diagnostics"] == []
    assert by_module(report)[""]["value"] == expected
    assert flop_counter_total(lambda: layer(x)) == expected
    assert torchscan.validate_report(report) == "flops"
    assert_clean(layer)


def test_input_requiring_grad_and_backward() -> None:
    layer = nn.Linear(16, 4)
    x = torch.randn(8, 16, requires_grad=True)
    forward = measure_flops(lambda: layer(x))
    assert total(forward) == 1_024

    def step() -> None:
        layer(x).sum().backward()

    report = measure_flops(step)
    # addmm forward, then grad of the input and of the weight: 3 matmuls of the same size.
    assert status(report) == "complete"
    assert total(report) == 3 * 1_024 == flop_counter_total(step)


def test_matmul_oracle() -> None:
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    report = measure_flops(lambda: a @ b)
    assert status(report) == "complete"
    assert counted(report) == {"aten::mm": 524_288}
    # The total at the top, where torchscan 0.2's callers read it, is the view's total.
    assert report["total"]["value"] == 524_288
    assert report["total"] == report["operator_flops"]["total"]


def test_the_view_is_repeated_in_torchscan_02s_layout() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    x = torch.randn(2, 4)
    report = measure_flops(lambda: model(x), modules=model)
    # 0.2's names: PyTorch's packet names and FlopCounterMode's module names
    assert report["by_operator"] == {"aten.addmm": 2 * 2 * 4 * 4}
    assert report["by_module"] == {"Sequential": 64.0, "Sequential.0": 64.0, "Sequential.1": 0.0}
    assert report["ignored_operators"]["aten.relu"] == {
        "calls": 1,
        "reason": "excluded by convention: elementwise arithmetic and activations",
    }
    excluded = report["operator_flops"]["excluded"]
    assert set(report["ignored_operators"]) == {
        op["operator"].replace("::", ".") for op in excluded
    }
    # The same views inside operator_flops, as 0.2's analysis report nested its FlopReport.
    for key in ("by_operator", "by_module", "ignored_operators"):
        assert report["operator_flops"][key] == report[key]  # type: ignore[literal-required]
    # Several modules: named by the caller's names, without a root class.
    named = measure_flops(lambda: model(x), modules={"net": model})
    assert named["by_module"] == {"net": 64.0, "net.0": 64.0, "net.1": 0.0}


def test_lstm_oracle_in_every_grad_mode() -> None:
    lstm = nn.LSTM(10, 20, batch_first=True)
    x = torch.randn(1, 7, 10)
    for grad_mode in grad_modes():
        with grad_mode():
            report = measure_flops(lambda: lstm(x))
        assert status(report) == "complete"
        # 4 gates x (10*20 + 20*20) x 7 steps = 16,800 MACs
        assert total(report) == 33_600


# -- zero cost by convention ----------------------------------------------------------------------

ZERO_COST = [
    pytest.param(lambda: nn.ReLU(), (2, 8), {"aten::relu": "elementwise"}, id="relu"),
    pytest.param(
        lambda: nn.BatchNorm2d(4).eval(),
        (2, 4, 5, 5),
        # The kernel that runs, not PyTorch's Python reference decomposition of it.
        {"aten::native_batch_norm": "normalization"},
        id="batchnorm-eval",
    ),
    pytest.param(
        lambda: nn.MaxPool2d(2),
        (1, 3, 8, 8),
        {"aten::max_pool2d_with_indices": "pooling"},
        id="pool",
    ),
]


@pytest.mark.parametrize(("make", "shape", "expected"), ZERO_COST)
def test_zero_cost_modules_are_excluded_not_partial(make: Any, shape: Any, expected: Any) -> None:
    module = make()
    x = torch.randn(*shape)
    report = measure_flops(lambda: module(x))
    assert status(report) == "complete"
    assert total(report) == 0
    assert report["operator_flops"]["counted"] == []
    classes = excluded(report)
    assert expected.items() <= classes.items()
    assert set(classes.values()) <= {*expected.values(), "allocation"}


def test_zero_cost_tensor_operations() -> None:
    a, b = torch.randn(4, 6), torch.randn(4, 6)

    def work() -> Any:
        return torch.cat([(a + b).reshape(6, 4), b.view(6, 4)])

    report = measure_flops(work)
    assert status(report) == "complete"
    assert total(report) == 0
    assert excluded(report) == {
        "aten::add": "elementwise",
        "aten::cat": "data_movement",
        "aten::view": "data_movement",
    }


def test_classes_of_a_training_step() -> None:
    model = Bert().train()
    ids, attention = torch.randint(0, 100, (2, 16)), torch.ones(2, 16, dtype=torch.long)
    report = measure_flops(lambda: model(ids, attention).sum().backward())
    classes = excluded(report)
    assert classes["aten::native_layer_norm_backward"] == "normalization"
    assert classes["aten::_softmax_backward_data"] == "reduction"
    assert classes["aten::embedding_dense_backward"] == "data_movement"
    assert classes["aten::bernoulli_"] == "elementwise"
    assert classes["aten::gelu_backward"] == "elementwise"
    assert classes["aten::ones_like"] == "allocation"
    assert classes["aten::arange"] == "allocation"
    assert classes["aten::detach"] == "data_movement"
    assert classes["aten::clone"] == "data_movement"


# -- uncounted operators and caller formulas ------------------------------------------------------


def test_custom_op_without_formula_is_partial_with_diagnostic() -> None:
    linear = nn.Linear(16, 4)
    x = torch.randn(8, 16)
    report = measure_flops(lambda: scale(linear(x)), modules=linear)
    flops = report["operator_flops"]
    assert flops["total"]["status"] == "partial"
    assert flops["total"]["value"] is None
    assert flops["total"]["known_value"] == 1_024
    assert "torchscan_test::scale" in flops["total"]["reason"]
    assert report["total"] == flops["total"]
    assert flops["uncounted"] == [{"operator": "torchscan_test::scale", "calls": 1}]
    (diagnostic,) = report["diagnostics"]
    assert diagnostic["code"] == "uncounted_operator"
    assert diagnostic["severity"] == "warning"
    assert diagnostic["metric"] == "operator_flops"
    assert diagnostic["operator"] == "torchscan_test::scale"
    assert "torchscan_test::scale" in diagnostic["message"]
    # The custom op ran outside the Linear module: the module stays complete.
    assert by_module(report)[""]["status"] == "complete"


def scale_flops(x_shape: Any, *, out_shape: Any = None) -> int:
    return int(x_shape.numel())


@pytest.mark.parametrize(
    "key",
    [
        "torchscan_test::scale",
        "torchscan_test::scale.default",
        torch.ops.torchscan_test.scale,
        torch.ops.torchscan_test.scale.default,
    ],
    ids=["name", "overload-name", "packet", "overload"],
)
def test_caller_formula_counts_a_custom_op(key: Any) -> None:
    x = torch.randn(4, 8)
    report = measure_flops(lambda: scale(x), formulas={key: scale_flops})
    assert status(report) == "complete"
    assert counted(report) == {"torchscan_test::scale": 32}
    assert report["diagnostics"] == []
    # For this call only: the next call without formulas is partial again.
    assert status(measure_flops(lambda: scale(x))) == "partial"


def test_raw_caller_formula_gets_tensors() -> None:
    seen: list[Any] = []

    def raw(x: Any, *, out_val: Any = None) -> int:
        seen.append((type(x), type(out_val)))
        return 7

    raw._get_raw = True  # type: ignore[attr-defined]
    x = torch.randn(4, 8)
    report = measure_flops(lambda: scale(x), formulas={"torchscan_test::scale": raw})
    assert total(report) == 7
    assert seen == [(torch.Tensor, torch.Tensor)]


def test_caller_formula_overrides_builtin() -> None:
    a = torch.randn(8, 8)
    report = measure_flops(lambda: a @ a, formulas={torch.ops.aten.mm: lambda *s, **k: 1})
    assert counted(report) == {"aten::mm": 1}


def test_failing_caller_formula_is_an_argument_error() -> None:
    def broken(x_shape: Any, *, out_shape: Any = None) -> int:
        raise ZeroDivisionError("nope")

    x = torch.randn(4, 8)
    with pytest.raises(InvalidArgumentError, match="torchscan_test::scale"):
        measure_flops(lambda: scale(x), formulas={"torchscan_test::scale": broken})
    with pytest.raises(InvalidArgumentError, match="int >= 0"):
        measure_flops(lambda: scale(x), formulas={"torchscan_test::scale": lambda *a, **k: -1})


@pytest.mark.parametrize(
    "formulas",
    [{"scale": scale_flops}, {42: scale_flops}, {"torchscan_test::scale": 3}, [scale_flops]],
)
def test_invalid_formulas(formulas: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        measure_flops(lambda: None, formulas=formulas)


def test_invalid_arguments() -> None:
    with pytest.raises(InvalidArgumentError, match="callable"):
        measure_flops(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="modules"):
        measure_flops(lambda: None, modules=42)
    with pytest.raises(InvalidArgumentError, match="not both"):
        OperatorFlopCounter(modules=nn.ReLU(), module_paths=lambda: ())


# -- whole models ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def resnet18() -> nn.Module:
    torch.manual_seed(0)
    return ResNet18().eval()


def test_resnet18_forward_oracle_and_modules(resnet18: nn.Module) -> None:
    assert sum(p.numel() for p in resnet18.parameters()) == 11_689_512
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        report = measure_flops(lambda: resnet18(x), modules=resnet18)
        reference = flop_counter_total(lambda: resnet18(x))
    assert status(report) == "complete"
    assert total(report) == 3_628_146_688 == reference
    assert counted(report) == {"aten::addmm": 1_024_000, "aten::convolution": 3_627_122_688}
    modules = by_module(report)
    assert report["operator_flops"]["modules"][0]["path"] == ""
    assert modules[""]["value"] == total(report)
    top = ["conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3", "layer4", "avgpool"]
    assert sum(modules[name]["value"] for name in [*top, "fc"]) == total(report)
    assert modules["fc"]["value"] == 1_024_000
    assert modules["layer1"]["value"] == sum(modules[f"layer1.{i}"]["value"] for i in (0, 1))
    assert modules["layer1.0.bn1"]["value"] == 0
    assert all(flops["status"] == "complete" for flops in modules.values())
    assert report["context"]["model_type"] == "tests.models.ResNet18"
    assert report["by_module"]["ResNet18.layer1"] == report["by_module"]["ResNet18.layer1.0"] * 2
    assert report["context"]["training_before"] is False
    assert report["context"]["flags"]["grad_enabled"] is False
    assert_clean(resnet18)


def test_resnet18_forward_backward_ratio(resnet18: nn.Module) -> None:
    x = torch.randn(1, 3, 224, 224)

    def step() -> None:
        resnet18.zero_grad()
        resnet18(x).sum().backward()

    report = measure_flops(step, modules=resnet18)
    assert status(report) == "complete"
    assert total(report) == flop_counter_total(step)
    assert total(report) / 3_628_146_688 == pytest.approx(2.93, abs=0.01)
    # Backward runs outside every forward: the root module holds the forward only.
    assert by_module(report)[""]["value"] == 3_628_146_688
    assert_clean(resnet18)


def _bert() -> tuple[nn.Module, tuple[Any, ...]]:
    ids = torch.randint(0, 100, (2, 16))
    return Bert(), (ids, torch.ones(2, 16, dtype=torch.long))


MODELS = {
    "resnet18": lambda: (ResNet18(), (torch.randn(2, 3, 32, 32),)),
    "transformer-encoder": lambda: (
        nn.TransformerEncoder(
            nn.TransformerEncoderLayer(64, 4, 128, batch_first=True),
            2,
            enable_nested_tensor=False,
        ),
        (torch.randn(2, 10, 64),),
    ),
    "lstm": lambda: (nn.LSTM(10, 20, num_layers=2, bidirectional=True), (torch.randn(7, 3, 10),)),
    "multihead-attention": lambda: (
        nn.MultiheadAttention(64, 4, batch_first=True),
        (torch.randn(2, 10, 64),) * 3,
    ),
    "bert": _bert,
}


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("mode", ["grad", "no_grad", "inference_mode", "train-backward"])
def test_models_are_complete_in_every_mode(name: str, mode: str) -> None:
    model, inputs = MODELS[name]()
    model.eval()

    def forward() -> Any:
        out = model(*inputs)
        return out[0] if isinstance(out, tuple) else out

    if mode == "train-backward":
        model.train()
        report = measure_flops(lambda: forward().sum().backward(), modules=model)
    else:
        context = {"grad": contextlib.nullcontext, "no_grad": torch.no_grad}.get(
            mode, torch.inference_mode
        )
        with context():
            report = measure_flops(forward, modules=model)
    assert status(report) == "complete", report["operator_flops"]["uncounted"]
    assert total(report) > 0
    assert report["diagnostics"] == []
    assert_clean(model)


@pytest.mark.parametrize("mode", ["eval", "train-backward"])
def test_bert_matches_flop_counter_mode(mode: str) -> None:
    model, inputs = _bert()
    if mode == "eval":
        model.eval()
        fn: Callable[[], Any] = lambda: model(*inputs)  # noqa: E731
    else:
        model.train()
        fn = lambda: model(*inputs).sum().backward()  # noqa: E731
    torch.manual_seed(1)
    report = measure_flops(fn)
    assert status(report) == "complete"
    assert total(report) == flop_counter_total(fn)


# -- the count does not depend on the kernel ------------------------------------------------------


def _attention_flops(batch: int, length: int, embed: int) -> int:
    projections = 2 * batch * length * 4 * embed * embed
    return projections + 4 * batch * length * length * embed


def test_transformer_encoder_layer_fast_path_counts_like_slow_path() -> None:
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
    layer.eval()
    x = torch.randn(2, 10, 64)
    slow = measure_flops(lambda: layer(x))
    with torch.no_grad():
        fast = measure_flops(lambda: layer(x))
    with torch.inference_mode():
        inference = measure_flops(lambda: layer(x))
    assert "aten::_transformer_encoder_layer_fwd" in counted(fast)
    assert "aten::_transformer_encoder_layer_fwd" not in counted(slow)
    expected = _attention_flops(2, 10, 64) + 2 * 20 * 2 * 64 * 128
    assert total(slow) == total(fast) == total(inference) == expected
    from torch.utils.flop_counter import flop_registry

    peer = flop_counter_total(lambda: layer(x))
    if torch.ops.aten._scaled_dot_product_flash_attention_for_cpu in flop_registry:
        assert total(slow) == peer
    else:
        # FlopCounterMode before torch 2.15 has no formula for the CPU flash-attention kernel
        # that the slow path runs, and misses the attention's two products without a word.
        (kernel,) = [
            entry
            for entry in slow["operator_flops"]["counted"]
            if entry["operator"] == "aten::_scaled_dot_product_flash_attention_for_cpu"
        ]
        assert kernel["flops"] == 2 * (2 * 2 * 10 * 10 * 64)  # Q K^T and the weights times V
        assert peer == total(slow) - kernel["flops"]
    assert status(fast) == status(slow) == "complete"


def test_multihead_attention_fast_path_counts_like_slow_path() -> None:
    attention = nn.MultiheadAttention(64, 4, batch_first=True).eval()
    x = torch.randn(2, 10, 64)
    slow = measure_flops(lambda: attention(x, x, x))
    with torch.no_grad():
        fast = measure_flops(lambda: attention(x, x, x))
    assert "aten::_native_multi_head_attention" in counted(fast)
    assert "aten::bmm" in counted(slow)
    assert total(slow) == total(fast) == _attention_flops(2, 10, 64)


def test_sdpa_math_and_fused_kernels_count_the_same() -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v = torch.randn(2, 4, 10, 16), torch.randn(2, 4, 12, 16), torch.randn(2, 4, 12, 16)
    attend = nn.functional.scaled_dot_product_attention
    fused = measure_flops(lambda: attend(q, k, v))
    with sdpa_kernel(SDPBackend.MATH):
        math = measure_flops(lambda: attend(q, k, v))
    with torch.inference_mode():
        inference = measure_flops(lambda: attend(q, k, v, dropout_p=0.5))
    assert "aten::_scaled_dot_product_flash_attention_for_cpu" in counted(fused)
    assert "aten::bmm" in counted(math)
    expected = 2 * 2 * 4 * 10 * 12 * (16 + 16)
    assert total(fused) == total(math) == total(inference) == expected


def test_nested_fast_path_counts_real_tokens() -> None:
    encoder = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(64, 4, 128, batch_first=True), 2
    ).eval()
    x = torch.randn(2, 10, 64)
    padding = torch.zeros(2, 10, dtype=torch.bool)
    padding[0, 6:] = True
    with torch.no_grad():
        report = measure_flops(lambda: encoder(x, src_key_padding_mask=padding))
    assert status(report) == "complete"
    lengths = (6, 10)
    per_layer = sum(
        2 * length * 4 * 64 * 64 + 4 * length * length * 64 + 2 * length * 2 * 64 * 128
        for length in lengths
    )
    assert total(report) == 2 * per_layer


@pytest.mark.parametrize("kind", [nn.LSTM, nn.GRU, nn.RNN])
def test_recurrent_layers_count_the_same_in_every_grad_mode(kind: Any) -> None:
    rnn = kind(10, 20, num_layers=2, bidirectional=True, batch_first=True)
    x = torch.randn(3, 7, 10)
    gates = {nn.LSTM: 4, nn.GRU: 3, nn.RNN: 1}[kind]
    tokens = 3 * 7
    weights = 2 * (gates * 20 * (10 + 20)) + 2 * (gates * 20 * (40 + 20))
    for grad_mode in grad_modes():
        with grad_mode():
            report = measure_flops(lambda: rnn(x))
        assert status(report) == "complete"
        assert total(report) == 2 * tokens * weights


def test_lstm_kernels_fused_and_unfused() -> None:
    lstm = nn.LSTM(10, 20, batch_first=True)
    x = torch.randn(1, 7, 10)
    with torch.no_grad():
        fused = measure_flops(lambda: lstm(x))
    assert counted(fused) == {"aten::mkldnn_rnn_layer": 33_600}
    # The oneDNN backward computes the input, hidden and weight gradients: two matmuls per
    # forward matmul.
    backward = measure_flops(lambda: lstm(x)[0].sum().backward())
    assert counted(backward) == {
        "aten::mkldnn_rnn_layer": 33_600,
        "aten::mkldnn_rnn_layer_backward": 67_200,
    }
    projected = nn.LSTM(10, 20, batch_first=True, proj_size=5)
    unfused = measure_flops(lambda: projected(x))
    assert set(counted(unfused)) <= {"aten::addmm", "aten::mm"}
    assert total(unfused) == 2 * 7 * (80 * 10 + 80 * 5 + 5 * 20)
    assert total(unfused) == flop_counter_total(lambda: projected(x))


def test_packed_sequence_counts_real_steps() -> None:
    lstm = nn.LSTM(10, 20)
    packed = nn.utils.rnn.pack_padded_sequence(torch.randn(7, 3, 10), [7, 5, 2])
    report = measure_flops(lambda: lstm(packed))
    assert status(report) == "complete"
    assert total(report) == 2 * (7 + 5 + 2) * 80 * (10 + 20)


# -- module attribution ---------------------------------------------------------------------------


def test_modules_as_mapping_and_iterable() -> None:
    first, second = nn.Linear(16, 4), nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    x = torch.randn(8, 16)

    def run() -> Any:
        return second(first(x))

    named = by_module(measure_flops(run, modules={"encoder": first, "head": second}))
    assert list(named) == ["encoder", "head", "head.0", "head.1"]
    assert named["encoder"]["value"] == 1_024
    assert named["head"]["value"] == named["head.0"]["value"] == 2 * 8 * 4 * 4
    assert named["head.1"]["value"] == 0
    positional = by_module(measure_flops(run, modules=[first, second]))
    assert list(positional) == ["0", "1", "1.0", "1.1"]
    assert_clean(first, second)


def test_module_is_partial_when_an_uncounted_operator_ran_inside() -> None:
    class Scaled(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(16, 4)

        def forward(self, x: Any) -> Any:
            return scale(self.linear(x))

    model = Scaled()
    report = measure_flops(lambda: model(torch.randn(8, 16)), modules=model)
    modules = by_module(report)
    assert modules[""]["status"] == "partial"
    assert modules[""]["known_value"] == 1_024
    assert "torchscan_test::scale" in modules[""]["reason"]
    assert modules["linear"]["status"] == "complete"


def test_module_paths_callable_and_module_stack() -> None:
    stack: list[str] = []
    layer = nn.Linear(16, 4)
    x = torch.randn(8, 16)
    with OperatorFlopCounter(module_paths=lambda: stack) as counter:
        stack[:] = ["", "block"]
        layer(x)
        stack[:] = [""]
        layer(x)
        assert counter.module_stack == ("",)
    flops = counter.operator_flops()
    assert [(m["path"], m["flops"]["value"]) for m in flops["modules"]] == [
        ("", 2_048),
        ("block", 1_024),
    ]
    assert counter.total_flops == 2_048
    assert counter.complete

    seen: list[tuple[str, ...]] = []
    model = nn.Sequential(nn.Linear(16, 4))
    tracker = OperatorFlopCounter(modules=model)
    with tracker:
        # Registered after the counter's own pre-hook, so it sees the module already entered.
        handle = model[0].register_forward_pre_hook(lambda *_: seen.append(tracker.module_stack))
        model(x)
    handle.remove()
    assert seen == [("", "0")]


def test_shared_and_reentered_modules_count_once_per_call() -> None:
    shared = nn.Linear(4, 4)
    model = nn.Sequential(shared, nn.ReLU(), shared)
    report = measure_flops(lambda: model(torch.randn(2, 4)), modules=model)
    modules = by_module(report)
    # named_modules lists a shared module once, under its first path.
    assert list(modules) == ["", "0", "1"]
    assert modules["0"]["value"] == modules[""]["value"] == 2 * 2 * 2 * 4 * 4


# -- state on every path --------------------------------------------------------------------------


class Boom(Exception):
    pass


def test_exception_propagates_unchanged_and_state_is_restored() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    error = Boom("from the workload")

    def fail() -> None:
        model(torch.randn(2, 4))
        raise error

    with pytest.raises(Boom) as caught:
        measure_flops(fail, modules=model)
    assert caught.value is error
    assert_clean(model)


def test_exception_inside_a_module_forward() -> None:
    class Failing(nn.Module):
        def forward(self, x: Any) -> Any:
            raise Boom("inside forward")

    model = nn.Sequential(nn.Linear(4, 4), Failing())
    counter = OperatorFlopCounter(modules=model)
    with pytest.raises(Boom), counter:
        model(torch.randn(2, 4))
    assert counter.module_stack == ()
    assert_clean(model)


def test_keyboard_interrupt_restores_state() -> None:
    model = nn.Linear(4, 4)

    def interrupted() -> None:
        model(torch.randn(2, 4))
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        measure_flops(interrupted, modules=model)
    assert_clean(model)


def test_counter_is_not_reentrant_and_restarts() -> None:
    counter = OperatorFlopCounter()
    a = torch.randn(8, 8)
    with counter:
        a @ a
        with pytest.raises(InvalidArgumentError, match="already active"), counter:
            pass
    assert counter.total_flops == 2 * 8 * 8 * 8
    with counter:
        pass
    assert counter.total_flops == 0
    assert_clean()


# -- report content -------------------------------------------------------------------------------


def test_report_fields() -> None:
    layer = nn.Linear(16, 4)
    x = torch.randn(8, 16)

    def forward_pass() -> Any:
        return layer(x)

    report = measure_flops(forward_pass)
    assert report["schema_version"] == 1
    assert report["kind"] == "flops"
    assert report["callable"] == "test_report_fields.<locals>.forward_pass"
    assert report["context"]["device"] == "cpu"
    assert report["context"]["dtypes"] == ["torch.float32"]
    assert report["context"]["model_type"] is None
    # Without modules=, every module that ran is tracked, named as FlopCounterMode names it.
    assert [entry["path"] for entry in report["operator_flops"]["modules"]] == ["Linear"]
    assert report["by_module"] == {"Linear": 2 * 8 * 16 * 4}
    assert excluded(report) == {"aten::t": "data_movement"}
    assert report["operator_flops"]["total"]["unit"] == "FLOPs"
    assert torchscan.validate_report(report) == "flops"
    import functools

    partial_report = measure_flops(functools.partial(layer, x))
    assert partial_report["callable"] is None


def test_without_modules_every_module_that_ran_is_named_as_flopcountermode_names_it() -> None:
    head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 6 * 6, 2))
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), head)
    x = torch.randn(1, 3, 8, 8)
    conv, linear = 2 * 4 * 6 * 6 * 27, 2 * 144 * 2
    report = measure_flops(lambda: model(x))
    # PyTorch's FlopCounterMode (torchscan 0.2) gives the same names and numbers; the ReLU and
    # the Flatten ran only excluded operators, so they are listed with 0 counted FLOPs.
    assert report["by_module"] == {
        "Sequential": conv + linear,
        "Sequential.0": conv,
        "Sequential.1": 0,
        "Sequential.2": linear,
        "Sequential.2.0": 0,
        "Sequential.2.1": linear,
    }
    assert report["operator_flops"]["by_module"] == report["by_module"]
    assert torchscan.validate_report(report) == "flops"
    assert_clean(model)


def _nested_class_model() -> nn.Module:
    """A ``Sequential`` subclass nested in a local class: ``__qualname__`` is not ``__name__``."""

    class Outer:
        class Inner(nn.Sequential):
            pass

    return Outer.Inner(nn.Linear(3, 2))


def test_a_nested_class_is_qualified_in_the_context_and_named_in_the_views() -> None:
    model = _nested_class_model()
    report = measure_flops(lambda: model(torch.ones(1, 3)), modules=model)
    # torchscan 0.2's model_type (__module__.__qualname__); FlopCounterMode's names (__name__).
    qualname = "_nested_class_model.<locals>.Outer.Inner"
    assert report["context"]["model_type"] == f"tests.test_flops.{qualname}"
    assert report["by_module"] == {"Inner": 12, "Inner.0": 12}
    analysis = torchscan.crawl_module(model, (3,))
    assert analysis["context"]["model_type"] == report["context"]["model_type"]
    assert analysis["operator_flops"]["by_module"] == {"Inner": 12, "Inner.0": 12}
    assert torchscan.validate_report(analysis) == "analysis"


def test_flops_reports_written_with_a_qualname_root_stay_valid() -> None:
    model = _nested_class_model()
    report = measure_flops(lambda: model(torch.ones(1, 3)), modules=model)
    # Before model_type was qualified, it was the __qualname__, and by_module's root with it.
    old = "_nested_class_model.<locals>.Outer.Inner"
    report["context"]["model_type"] = old
    for views in (report, report["operator_flops"]):
        views["by_module"] = {old: 12, f"{old}.0": 12}
    assert torchscan.validate_report(report) == "flops"
    for views in (report, report["operator_flops"]):
        views["by_module"] = {"Outer": 12, "Outer.0": 12}
    with pytest.raises(torchscan.ReportValidationError, match="by_module"):
        torchscan.validate_report(report)


def test_modules_met_on_their_own_are_named_by_class_and_called_twice_summed() -> None:
    first, second = nn.Linear(3, 3), nn.Linear(3, 5)
    report = measure_flops(lambda: second(first(first(torch.ones(1, 3)))))
    # Two Linear modules met outside any parent share the name "Linear", as in FlopCounterMode.
    assert report["by_module"] == {"Linear": 2 * 9 + 2 * 9 + 2 * 15}
    assert report["total"]["value"] == 66
    assert_clean(first, second)


def test_without_modules_names_follow_flopcountermode_for_shared_and_early_children() -> None:
    from torch.utils.flop_counter import FlopCounterMode

    def flopcountermode(fn: Callable[[], Any]) -> dict[str, int]:
        with FlopCounterMode(display=False) as counter:
            fn()
        counts = counter.get_flop_counts()
        return {name: sum(ops.values()) for name, ops in counts.items() if name != "Global"}

    # A module shared by two parents takes the later name; a child called before its parent
    # keeps the name it got on its own until its parent names it.
    shared = nn.Linear(2, 2)
    parents = nn.Sequential(nn.Sequential(shared), nn.Sequential(shared))
    inner = nn.Sequential(nn.Linear(2, 2))
    outer = nn.Sequential(inner)
    x = torch.ones(2, 2)
    for fn in (lambda: parents(x), lambda: (inner(x), outer(x))):
        expected = flopcountermode(fn)
        report = measure_flops(fn)
        assert {k: v for k, v in report["by_module"].items() if v} == expected
    assert measure_flops(lambda: parents(x))["by_module"]["Sequential.1.0"] == 2 * 16
    assert_clean(parents, outer)


def test_without_modules_calls_on_other_threads_are_not_attributed() -> None:
    import threading

    started, release = threading.Event(), threading.Event()

    class Blocker(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            started.set()
            release.wait(30)
            return x

    other = threading.Thread(target=lambda: Blocker()(torch.ones(1)))
    other.start()
    try:
        assert started.wait(30)
        a = torch.ones(4, 4)
        report = measure_flops(lambda: a @ a)
    finally:
        release.set()
        other.join(30)
    assert report["total"]["value"] == 128
    assert report["by_module"] == {}


def test_a_class_named_differently_from_its_qualname_gives_a_valid_report() -> None:
    traced = torch.fx.symbolic_trace(nn.Sequential(nn.Linear(2, 2)))
    root = type(traced).__qualname__.rsplit(".", 1)[-1]
    report = measure_flops(lambda: traced(torch.ones(1, 2)), modules=traced)
    assert report["context"]["model_type"].endswith(type(traced).__qualname__)
    assert report["by_module"][root] == 8
    analysis = torchscan.crawl_module(traced, (2,))
    assert torchscan.validate_report(analysis) == "analysis"
    assert analysis["operator_flops"]["by_module"][root] == 8


def test_without_modules_backward_counts_in_the_total_only() -> None:
    layer = nn.Linear(4, 2)
    x = torch.randn(3, 4)
    report = measure_flops(lambda: layer(x).sum().backward())
    forward = 2 * 3 * 4 * 2
    assert report["by_module"] == {"Linear": forward}
    assert report["total"]["value"] == 2 * forward  # and the weight's gradient (x needs none)
    assert_clean(layer)


def test_without_modules_the_hooks_go_away_when_the_callable_raises() -> None:
    class WorkloadError(Exception):
        pass

    layer = nn.Linear(4, 2)

    def broken() -> None:
        layer(torch.ones(1, 4))
        raise WorkloadError("boom")

    with pytest.raises(WorkloadError):
        measure_flops(broken)
    assert_clean(layer)


def test_operator_lists_are_sorted() -> None:
    model = Bert().train()
    ids, attention = torch.randint(0, 100, (2, 16)), torch.ones(2, 16, dtype=torch.long)
    report = measure_flops(lambda: scale(model(ids, attention)))
    flops = report["operator_flops"]
    for key in ("counted", "excluded", "uncounted"):
        names = [op["operator"] for op in flops[key]]
        assert names == sorted(names)
    assert torchscan.validate_report(report) == "flops"


def test_import_does_not_load_torch() -> None:
    code = "import sys, torchscan.flops; print('torch' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_formulas_registered_with_pytorch_are_used() -> None:
    from torch.utils.flop_counter import register_flop_formula

    @torch.library.custom_op("torchscan_test::registered", mutates_args=())
    def registered(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @register_flop_formula(torch.ops.torchscan_test.registered)
    def _(x_shape: Any, out_shape: Any = None, **kwargs: Any) -> int:
        return 5

    x = torch.randn(2, 2)
    assert counted(measure_flops(lambda: registered(x))) == {"torchscan_test::registered": 5}


def test_delegating_pytorch_formulas_count_as_pytorch_without_its_wrappers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from torch.utils import flop_counter

    from torchscan.opflops.formulas import builtin_formulas

    aten = torch.ops.aten
    calls = {
        aten.addmm: (torch.randn(5), torch.randn(3, 4), torch.randn(4, 5)),
        aten.baddbmm: (torch.randn(2, 3, 5), torch.randn(2, 3, 4), torch.randn(2, 4, 5)),
    }
    trees: list[Any] = []
    tree_map = flop_counter.tree_map

    def counting_tree_map(*args: Any, **kwargs: Any) -> Any:
        trees.append(args)
        return tree_map(*args, **kwargs)

    table = builtin_formulas()
    for packet, args in calls.items():
        out = packet(*args)
        expected = flop_counter.flop_registry[packet](*args, out_val=out)
        monkeypatch.setattr(flop_counter, "tree_map", counting_tree_map)
        assert table[packet](args, {}, out) == expected > 0
        # PyTorch's own body calls the registered ``mm_flop``/``bmm_flop`` wrapper, whose pytree
        # conversion cost ~50 us a call; ours calls the shape formula inside it.
        assert trees == []
        monkeypatch.setattr(flop_counter, "tree_map", tree_map)

    # ``_scaled_mm`` (no CPU kernel to run): PyTorch's wrapper takes shapes for tensors too.
    shapes = [torch.Size([3, 4]), torch.Size([4, 5]), torch.Size([]), torch.Size([])]
    expected = flop_counter.flop_registry[aten._scaled_mm](*shapes, out_val=torch.Size([3, 5]))
    scaled_mm: Any = table[aten._scaled_mm]
    assert scaled_mm.on_shapes(shapes, {}, torch.Size([3, 5])) == expected == 120

    # A formula registered over PyTorch's own is used as it is.
    monkeypatch.setitem(
        flop_counter.flop_registry,
        aten.addmm,
        flop_counter.shape_wrapper(lambda *shapes, out_shape=None, **kwargs: 7),
    )
    args = calls[aten.addmm]
    assert builtin_formulas()[aten.addmm](args, {}, aten.addmm(*args)) == 7


def test_higher_order_operator_without_formula_is_uncounted() -> None:
    a = torch.randn(8, 8)
    report = measure_flops(lambda: torch.cond(a.sum() > 0, lambda x: x @ x, lambda x: x + 1, (a,)))
    assert status(report) == "partial"
    assert [op["operator"] for op in report["operator_flops"]["uncounted"]] == [
        "higher_order::cond"
    ]


def test_kernels_with_python_references_run_their_own_kernel() -> None:
    # ``native_batch_norm`` and ``upsample_nearest2d`` have CPU kernels and also Python reference
    # decompositions; the counter must see (and let run) the kernel a plain call runs.
    model = nn.Sequential(nn.BatchNorm2d(3).eval(), nn.Upsample(scale_factor=2, mode="nearest"))
    x = torch.randn(1, 3, 4, 4)
    expected = model(x)
    seen: dict[str, Any] = {}

    def run() -> None:
        seen["out"] = model(x)

    report = measure_flops(run)
    assert status(report) == "complete"
    names = set(excluded(report))
    assert {"aten::native_batch_norm", "aten::upsample_nearest2d"} <= names
    assert not any("legit" in name or "index" in name for name in names)
    assert torch.equal(seen["out"], expected)


def test_outcome_codes_agree_with_the_dispatch_mode() -> None:
    # flops.py repeats them so that importing it does not import torch.
    from torchscan import flops as flops_module
    from torchscan.opflops import mode

    assert (flops_module.COUNTED, flops_module.UNCOUNTED) == (mode.COUNTED, mode.UNCOUNTED)


@torch.library.custom_op("torchscan_test::split_precision", mutates_args=())
def split_precision(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x.to(torch.bfloat16) * 2, x.float().sum(0)


@split_precision.register_fake
def _(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.empty_like(x, dtype=torch.bfloat16), x.float().sum(0)


def test_an_operator_computes_in_the_dtype_of_its_first_result() -> None:
    # Its FLOPs count for the first result's dtype (the result proper), not for a statistic
    # returned beside it in another precision.
    x = torch.randn(64, 64)
    report = measure_flops(
        lambda: split_precision(x),
        formulas={"torchscan_test::split_precision": lambda x_shape, out_shape=None: 10**6},
    )
    assert status(report) == "complete"
    assert counted(report) == {"torchscan_test::split_precision": 10**6}
    assert report["context"]["dtypes"][0] == "torch.bfloat16"


def test_the_compiled_dispatch_reads_a_long_workload_in_batches() -> None:
    # measure_flops counts through the same compiled dispatch as crawl_module: the common calls
    # are logged and their shape formulas applied in batches (4,096 records), so a long workload
    # keeps a bounded log and counts every call exactly, into the right modules.
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
    x = torch.randn(2, 8)
    steps = 3_000  # addmm, t and relu each step: over two batches of records
    longest: list[int] = []
    counter = OperatorFlopCounter(modules=model)

    def run() -> None:
        for _ in range(steps):
            model(x)
            longest.append(len(counter._ledger_log))

    with torch.no_grad(), counter:
        run()
    section = counter.operator_flops()
    assert section["total"]["status"] == "complete"
    assert section["total"]["value"] == steps * 2 * 2 * 8 * 8
    by_path = {entry["path"]: entry["flops"]["value"] for entry in section["modules"]}
    assert by_path == {"": steps * 256, "0": steps * 256, "1": 0}
    calls = {op["operator"]: op["calls"] for op in section["counted"] + section["excluded"]}
    assert calls == {"aten::addmm": steps, "aten::t": steps, "aten::relu": steps}
    assert max(longest) < 4096 and counter._ledger_log == []


def test_a_module_paths_callable_is_called_once_per_operator() -> None:
    # The caller's own tracking: its callable names the modules of every operator, lean or not.
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    x = torch.randn(3, 4)
    calls: list[tuple[str, ...]] = []
    active: list[str] = []

    def paths() -> tuple[str, ...]:
        calls.append(tuple(active))
        return tuple(active)

    counter = OperatorFlopCounter(module_paths=paths)
    with torch.no_grad(), counter:
        active.append("block")
        model(x)
        active.pop()
        model(x)
    section = counter.operator_flops()
    assert {entry["path"]: entry["flops"]["value"] for entry in section["modules"]} == {
        "block": 2 * 3 * 4 * 4
    }
    assert len(calls) == 6  # t, addmm, relu, twice
