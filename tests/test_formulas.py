"""Per-module estimates (FLOPs, MACs, DMAs) and receptive-field steps of `torchscan.formulas`,
and the operator FLOP formula of `aten::_grouped_mm` (`torchscan.opflops.formulas`)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils.rnn import pack_padded_sequence
from torch.utils.flop_counter import FlopCounterMode

from torchscan import formulas, measure_flops
from torchscan.formulas import (
    RULES,
    Estimate,
    FieldStep,
    field_step,
    has_formula,
    module_estimate,
    supported_module_types,
)
from torchscan.formulas.attention import attention_cost
from torchscan.opflops.formulas import builtin_formulas

torch.set_num_threads(1)

pytestmark = [
    pytest.mark.filterwarnings("ignore:Implicit dimension choice:UserWarning"),
    pytest.mark.filterwarnings("ignore:LSTM with projections:UserWarning"),
    pytest.mark.filterwarnings("ignore:enable_nested_tensor:UserWarning"),
    pytest.mark.filterwarnings("ignore:dropout2d. Received a 3D input:UserWarning"),
]


def run(module: nn.Module, *inputs: Any, train: bool = False) -> tuple[tuple[Any, ...], Any]:
    """A real forward: the positional inputs and the output, eval mode unless ``train``."""
    module.train(train)
    with torch.no_grad():
        output = module(*inputs)
    return inputs, output


def estimate(module: nn.Module, *inputs: Any, train: bool = False) -> Estimate | None:
    args, output = run(module, *inputs, train=train)
    return module_estimate(module, args, output)


def E(flops: int, macs: int, dmas: int) -> Estimate:
    return Estimate(flops, macs, dmas)


def lin(rows: int, fin: int, fout: int, bias: bool = True) -> Estimate:
    """Hand-written dense layer: rows*fout*(2*fin-1) (+ bias) FLOPs, independent of the package."""
    outputs = rows * fout
    params = fin * fout + (fout if bias else 0)
    return E(
        outputs * (2 * fin - 1) + (outputs if bias else 0),
        outputs * fin,
        rows * fin + params + outputs,
    )


def add(*parts: Estimate) -> Estimate:
    return E(sum(p.flops for p in parts), sum(p.macs for p in parts), sum(p.dmas for p in parts))


# ---------------------------------------------------------------------------------------------
# Mandatory oracles


def test_conv2d_oracle() -> None:
    conv = nn.Conv2d(3, 8, 3)
    assert estimate(conv, torch.randn(1, 3, 32, 32)) == E(388_800, 194_400, 201_824)


def test_linear_oracles() -> None:
    layer = nn.Linear(16, 4)
    result = estimate(layer, torch.randn(8, 16))
    assert result is not None
    assert result.flops == 1_024 == 8 * 4 * (2 * 16 - 1) + 8 * 4
    assert result.macs == 512
    assert result.dmas == 8 * 16 + (16 * 4 + 4) + 8 * 4
    result3d = estimate(layer, torch.randn(2, 5, 16))
    assert result3d is not None
    assert result3d.flops == 1_280
    assert estimate(layer, torch.randn(16)) == E(4 * 31 + 4, 64, 16 + 68 + 4)


@pytest.mark.parametrize(
    ("batch_first", "shape", "steps"), [(False, (1, 7, 10), 1), (True, (1, 7, 10), 7)]
)
def test_lstm_oracle(batch_first: bool, shape: tuple[int, ...], steps: int) -> None:
    # batch_first=False: (seq 1, batch 7); batch_first=True: (batch 1, seq 7).
    # Both are 7 (step, sample) pairs of 4 gates x (10*20 + 20*20) MACs.
    lstm = nn.LSTM(10, 20, batch_first=batch_first)
    result = estimate(lstm, torch.randn(*shape))
    assert result is not None
    assert result.macs == 16_800 == 7 * 4 * (10 * 20 + 20 * 20)
    gate_elementwise = 7 * 28 * 20
    assert result.flops >= 2 * result.macs + gate_elementwise
    # 2*MACs + one sum of the two gate halves per gate unit (4*20), two biases, elementwise.
    assert result.flops == 7 * (4 * 20 * (19 + 39 + 1) + 2 * 4 * 20 + 28 * 20) == 38_080
    params = sum(p.numel() for p in lstm.parameters())
    assert result.dmas == 7 * (10 + 20 + 20 + 20 + 20) + steps * params


def test_lstm_seq7_batch1_not_batch_first() -> None:
    result = estimate(nn.LSTM(10, 20), torch.randn(7, 1, 10))
    assert result is not None
    assert result.macs == 16_800


# ---------------------------------------------------------------------------------------------
# Hand-derived values, family by family


def test_linear_no_bias_and_lazy() -> None:
    assert estimate(nn.Linear(16, 4, bias=False), torch.randn(8, 16)) == E(
        8 * 4 * 31, 512, 128 + 64 + 32
    )
    lazy = nn.LazyLinear(4)
    assert has_formula(lazy)
    x = torch.randn(8, 16)
    before = module_estimate(lazy, (x,), torch.empty(8, 4))
    result = estimate(lazy, x)
    assert type(lazy) is nn.Linear  # materialised
    assert before == result == E(1_024, 512, 228)


def test_bilinear() -> None:
    layer = nn.Bilinear(3, 4, 5)
    # 10 outputs, each 3 * (2*4 - 1) + (2*3 - 1) + 1 FLOPs and 3 * (4 + 1) MACs.
    assert estimate(layer, torch.randn(2, 3), torch.randn(2, 4)) == E(270, 150, 6 + 8 + 65 + 10)
    assert estimate(layer, torch.randn(3), torch.randn(4)) == E(5 * 27, 5 * 15, 3 + 4 + 65 + 5)


def test_conv1d_grouped_dilated_strided() -> None:
    conv = nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2, bias=False)
    # L_out = (10 + 2 - 2*2 - 1) // 2 + 1 = 4; 48 outputs of 2*3 = 6 terms.
    assert estimate(conv, torch.randn(2, 4, 10)) == E(48 * 11, 288, 288 + 36 + 48)


def test_conv2d_same_padding_and_unbatched() -> None:
    conv = nn.Conv2d(2, 3, (3, 5), padding="same")
    expected = E(126 * 59 + 126, 126 * 30, 126 * 30 + (3 * 30 + 3) + 126)
    assert estimate(conv, torch.randn(1, 2, 6, 7)) == expected
    assert estimate(conv, torch.randn(2, 6, 7)) == expected


def test_conv3d() -> None:
    conv = nn.Conv3d(2, 4, 2)
    out = 1 * 4 * 2 * 2 * 2
    assert estimate(conv, torch.randn(1, 2, 3, 3, 3)) == E(out * 32, out * 16, out * 16 + 68 + out)


def test_conv_transpose_groups_stride() -> None:
    conv = nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2)
    # out 11x11; scatter MACs: 100 input elements x (6/2 * 9) weights.
    macs = 100 * 3 * 9
    out = 6 * 11 * 11
    assert estimate(conv, torch.randn(1, 4, 5, 5)) == E(
        2 * macs + out, macs, macs + (108 + 6) + out
    )


def test_conv_transpose_output_padding_no_bias() -> None:
    conv = nn.ConvTranspose1d(2, 3, 4, stride=3, padding=1, output_padding=2, bias=False)
    args, out = run(conv, torch.randn(1, 2, 5))
    assert out.shape == (1, 3, 16)
    assert module_estimate(conv, args, out) == E(240, 120, 120 + 24 + 48)


def test_batch_norm_eval_and_train() -> None:
    bn = nn.BatchNorm2d(3)
    x = torch.randn(2, 3, 4, 4)
    n, c = 96, 3
    # eval: eps+sqrt per channel, subtract and divide, weight and bias (torchscan 0.2.0: 390).
    assert estimate(bn, x) == E(2 * c + 2 * n + 2 * n, 0, 2 * n + 2 * c + 2 * c)
    # train: + mean n, variance 3n, running update 6C; normalisation has no MACs.
    assert estimate(bn, x, train=True) == E(390 + 4 * n + 6 * c, 0, 2 * n + 6 + 6 + 6)
    cumulative = nn.BatchNorm2d(3, momentum=None)
    result = estimate(cumulative, x, train=True)
    assert result is not None
    assert result.flops == 390 + 4 * n + 6 * c + 1


def test_batch_norm_no_affine_no_tracking() -> None:
    bn = nn.BatchNorm1d(4, affine=False, track_running_stats=False)
    # eval still uses batch statistics: n=20, C=4.
    assert estimate(bn, torch.randn(5, 4)) == E(8 + 40 + 80, 0, 40)


def test_layer_norm_variants() -> None:
    x = torch.randn(2, 3, 8)
    # n=48, rows=6: 6n + 2*rows + n (weight) + n (bias) as in torchscan 0.2.0.
    assert estimate(nn.LayerNorm(8), x) == E(396, 0, 96 + 16)
    assert estimate(nn.LayerNorm(8, elementwise_affine=False), x) == E(300, 0, 96)
    assert estimate(nn.LayerNorm(8, bias=False), x) == E(348, 0, 104)
    assert estimate(nn.LayerNorm((3, 8)), x) == E(6 * 48 + 4 + 96, 0, 96 + 48)


def test_group_norm() -> None:
    # n=60, groups 3 samples x 2 = 6.
    assert estimate(nn.GroupNorm(2, 4), torch.randn(3, 4, 5)) == E(492, 0, 128)


def test_instance_norm() -> None:
    # default: no affine, instance statistics; n=96, groups 6.
    assert estimate(nn.InstanceNorm2d(3), torch.randn(2, 3, 4, 4)) == E(588, 0, 192)
    assert estimate(nn.InstanceNorm2d(3), torch.randn(3, 4, 4)) == E(294, 0, 96)
    tracked = nn.InstanceNorm1d(3, affine=True, track_running_stats=True)
    # eval with tracked stats: no statistics pass; n=30, groups 6.
    assert estimate(tracked, torch.randn(2, 3, 5)) == E(12 + 60 + 60, 0, 60 + 6 + 6)


def test_rms_norm() -> None:
    assert estimate(nn.RMSNorm(8), torch.randn(2, 3, 8)) == E(3 * 48 + 12 + 48, 0, 96 + 8)
    assert estimate(nn.RMSNorm(8, elementwise_affine=False), torch.randn(2, 3, 8)) == E(156, 0, 96)


def test_local_response_norm() -> None:
    assert estimate(nn.LocalResponseNorm(3), torch.randn(1, 4, 2, 2)) == E(16 * 8, 48, 48 + 16 + 16)


def test_embedding() -> None:
    idx = torch.tensor([[1, 0, 3], [4, 5, 0]])
    assert estimate(nn.Embedding(10, 4, padding_idx=0), idx) == E(0, 0, 6 + 2 * 6 * 4)
    assert estimate(nn.Embedding(10, 4, max_norm=1.0), idx) == E(6 * 15, 24, 54 + 48)


def test_embedding_bag_modes() -> None:
    flat = torch.tensor([1, 2, 3, 4, 5, 6, 7])
    offsets = torch.tensor([0, 3])
    weights = torch.rand(7)
    bag = nn.EmbeddingBag(10, 4, mode="sum")
    assert estimate(bag, flat, offsets) == E(5 * 4, 0, 7 + 28 + 8 + 2)
    assert estimate(bag, flat, offsets, weights) == E(20 + 28, 28, 45 + 7)
    two_d = torch.randint(0, 10, (3, 4))
    assert estimate(nn.EmbeddingBag(10, 4, mode="mean"), two_d) == E(9 * 4 + 12, 0, 12 + 48 + 12)
    assert estimate(nn.EmbeddingBag(10, 4, mode="max"), two_d) == E(36, 0, 72)
    last = nn.EmbeddingBag(10, 4, mode="sum", include_last_offset=True)
    assert estimate(last, flat, torch.tensor([0, 3, 7])) == E(20, 0, 7 + 28 + 8 + 3)


def test_activations() -> None:
    x = torch.randn(2, 3, 4)
    assert estimate(nn.ReLU(), x) == E(24, 0, 48)
    assert estimate(nn.ReLU(inplace=True), x.clone()) == E(24, 0, 48)
    assert estimate(nn.Sigmoid(), x) == E(96, 0, 48)
    assert estimate(nn.Tanh(), x) == E(144, 0, 48)
    assert estimate(nn.ELU(), x) == E(144, 0, 48)
    assert estimate(nn.LeakyReLU(), x) == E(96, 0, 48)
    assert estimate(nn.ReLU6(), x) == E(48, 0, 48)
    assert estimate(nn.PReLU(3), x) == E(96, 0, 51)
    assert estimate(nn.GELU(), x) == E(120, 0, 48)
    assert estimate(nn.GELU(approximate="tanh"), x) == E(24 * 14, 0, 48)
    assert estimate(nn.RReLU(), x) == E(96, 0, 48)
    assert estimate(nn.RReLU(), x, train=True) == E(120, 0, 48)


def test_softmax_family_and_glu() -> None:
    x = torch.randn(2, 3, 4)
    assert estimate(nn.Softmax(dim=-1), x) == E(3 * 24 - 6, 0, 48)
    assert estimate(nn.Softmin(dim=1), x) == E(4 * 24 - 8, 0, 48)
    assert estimate(nn.LogSoftmax(dim=1), x) == E(72, 0, 48)
    # dim=None on 3-D input: torch's legacy rule reduces dim 0 (L=2, 12 rows).
    assert estimate(nn.Softmax(), x) == E(72 - 12, 0, 48)
    assert estimate(nn.Softmax2d(), torch.randn(1, 3, 2, 2)) == E(36 - 4, 0, 24)
    assert estimate(nn.GLU(), torch.randn(2, 6)) == E(30, 0, 18)


def test_pooling() -> None:
    x = torch.randn(1, 2, 4, 4)
    assert estimate(nn.MaxPool2d(2), x) == E(24, 0, 40)
    assert estimate(nn.MaxPool2d(2, return_indices=True), x) == E(24, 0, 48)
    # 3x3 outputs of 9-element windows: K - 1 sums and d = 2 divisor operations each.
    avg = nn.AvgPool2d(3, stride=2, padding=1)
    assert estimate(avg, torch.randn(1, 1, 5, 5)) == E(90, 0, 90)
    assert estimate(avg, torch.randn(1, 5, 5)) == E(90, 0, 90)
    assert estimate(nn.AvgPool1d(2), torch.randn(1, 3, 4)) == E(6 * 2, 0, 18)
    assert estimate(nn.LPPool1d(2, 3), torch.randn(1, 2, 9)) == E(36, 0, 24)
    assert estimate(nn.MaxPool3d(2), torch.randn(1, 1, 2, 2, 2)) == E(7, 0, 9)


def test_adaptive_pooling() -> None:
    # 49-element windows for 3 outputs: torchscan 0.2.0's out * (K - 1 + d).
    assert estimate(nn.AdaptiveAvgPool2d((1, 1)), torch.randn(1, 3, 7, 7)) == E(150, 0, 150)
    # 7 -> 3: windows [0,3), [2,5), [4,7): 9 reads.
    assert estimate(nn.AdaptiveMaxPool1d(3), torch.randn(1, 1, 7)) == E(6, 0, 12)
    assert estimate(nn.AdaptiveMaxPool1d(3, return_indices=True), torch.randn(1, 1, 7)) == E(
        6, 0, 15
    )
    # None in output_size keeps that dim: 4 -> 4 is 1 per window.
    assert estimate(nn.AdaptiveAvgPool2d((2, None)), torch.randn(1, 1, 4, 4)) == E(
        16 - 8 + 16, 0, 24
    )


def test_fractional_and_unpool() -> None:
    frac = nn.FractionalMaxPool2d(2, output_size=(3, 3))
    assert estimate(frac, torch.randn(1, 1, 7, 7)) == E(27, 0, 45)
    pool, unpool = nn.MaxPool2d(2, return_indices=True), nn.MaxUnpool2d(2)
    out, indices = pool(torch.randn(1, 1, 4, 4))
    assert estimate(unpool, out, indices) == E(0, 0, 4 + 4 + 16)


def test_upsample() -> None:
    x = torch.randn(1, 2, 3, 3)
    assert estimate(nn.Upsample(scale_factor=2), x) == E(0, 0, 144)
    assert estimate(nn.Upsample(scale_factor=2, mode="bilinear"), x) == E(72 * 7, 288, 360)
    assert estimate(nn.UpsamplingBilinear2d(scale_factor=2), x) == E(72 * 7, 288, 360)
    assert estimate(nn.UpsamplingNearest2d(scale_factor=2), x) == E(0, 0, 144)
    assert estimate(nn.Upsample(scale_factor=2, mode="bicubic"), x) == E(72 * 31, 72 * 16, 72 * 17)
    assert estimate(nn.Upsample(scale_factor=2, mode="trilinear"), torch.randn(1, 1, 2, 2, 2)) == E(
        64 * 15, 64 * 8, 64 * 9
    )
    assert estimate(nn.Upsample(size=(2, 2), mode="area"), torch.randn(1, 1, 4, 4)) == E(20, 20, 20)


def test_data_movement() -> None:
    x = torch.randn(2, 3, 4)
    assert estimate(nn.Identity(), x) == E(0, 0, 0)
    assert estimate(nn.Flatten(), x) == E(0, 0, 48)
    assert estimate(nn.Unflatten(2, (2, 2)), x) == E(0, 0, 48)
    assert estimate(nn.PixelShuffle(2), torch.randn(1, 8, 3, 3)) == E(0, 0, 144)
    assert estimate(nn.PixelUnshuffle(2), torch.randn(1, 2, 6, 6)) == E(0, 0, 144)
    assert estimate(nn.ChannelShuffle(2), torch.randn(1, 4, 2, 2)) == E(0, 0, 32)
    assert estimate(nn.ZeroPad2d((1, 2, 0, 1)), torch.randn(1, 1, 3, 3)) == E(0, 0, 9 + 24)
    assert estimate(nn.ReflectionPad1d(2), torch.randn(1, 2, 5)) == E(0, 0, 10 + 18)


def test_dropout_modes() -> None:
    x = torch.randn(2, 3)
    assert estimate(nn.Dropout(0.5), x) == E(0, 0, 12)
    assert estimate(nn.Dropout(0.5), x, train=True) == E(6, 0, 18)
    assert estimate(nn.Dropout(0.0), x, train=True) == E(0, 0, 12)
    assert estimate(nn.AlphaDropout(0.5), x, train=True) == E(12, 0, 18)
    # Channel-wise masks: one element per (sample, channel).
    assert estimate(nn.Dropout2d(0.5), torch.randn(2, 3, 4, 4), train=True) == E(96, 0, 96 + 6 + 96)
    assert estimate(nn.Dropout1d(0.5), torch.randn(3, 4), train=True) == E(12, 0, 12 + 3 + 12)
    assert estimate(nn.FeatureAlphaDropout(0.5), torch.randn(2, 3, 4), train=True) == E(
        48, 0, 24 + 6 + 24
    )


def test_distances() -> None:
    assert estimate(nn.CosineSimilarity(dim=1), torch.randn(2, 5), torch.randn(2, 5)) == E(
        64, 30, 22
    )
    assert estimate(nn.CosineSimilarity(dim=1), torch.randn(2, 5), torch.randn(1, 5)) == E(
        64, 30, 17
    )
    assert estimate(nn.PairwiseDistance(), torch.randn(3, 4), torch.randn(3, 4)) == E(60, 12, 27)
    assert estimate(nn.PairwiseDistance(keepdim=True), torch.randn(3, 4), torch.randn(3, 4)) == E(
        60, 12, 27
    )


# ---------------------------------------------------------------------------------------------
# Attention


def _mha_hand(
    batch: int, target: int, source: int, embed: int, heads: int, weights: bool
) -> Estimate:
    """Hand-derived self/cross attention of kdim = vdim = E, biases, no masks, eval."""
    queries, scores, keys = (
        batch * target * embed,
        batch * heads * target * source,
        batch * source * embed,
    )
    head_dim = embed // heads
    parts = [
        lin(batch * target, embed, embed),
        lin(batch * source, embed, embed),
        lin(batch * source, embed, embed),
        E(1 + queries, 0, 2 * queries),
        E(scores * (2 * head_dim - 1), scores * head_dim, queries + keys + scores),
        E(batch * heads * target * (3 * source - 1), 0, 2 * scores),
        E(queries * (2 * source - 1), queries * source, scores + keys + queries),
        lin(batch * target, embed, embed),
    ]
    if weights:
        parts.append(E(scores, 0, scores + batch * target * source))
    return add(*parts)


def test_mha_matches_torchscan_020() -> None:
    mha = nn.MultiheadAttention(8, 2)
    q, kv = torch.randn(3, 2, 8), torch.randn(5, 2, 8)
    result = estimate(mha, q, kv, kv)
    assert result == _mha_hand(2, 3, 5, 8, 2, weights=True)
    # torchscan 0.2.0's flops_mha on this configuration.
    assert result is not None
    assert result.flops == 5_225
    assert result.macs == 2_528
    assert result.dmas == 1_482


def test_mha_need_weights_false_and_per_head_weights() -> None:
    mha = nn.MultiheadAttention(8, 2)
    q, kv = torch.randn(3, 2, 8), torch.randn(5, 2, 8)
    assert estimate(mha, q, kv, kv, None, False) == _mha_hand(2, 3, 5, 8, 2, weights=False)
    # average_attn_weights=False returns (B, H, T, S): nothing to average.
    assert estimate(mha, q, kv, kv, None, True, None, False) == _mha_hand(
        2, 3, 5, 8, 2, weights=False
    )


def test_mha_kdim_vdim_bias_kv_batch_first_mask() -> None:
    mha = nn.MultiheadAttention(8, 2, kdim=6, vdim=4, add_bias_kv=True, batch_first=True)
    q, k, v = torch.randn(2, 3, 8), torch.randn(2, 5, 6), torch.randn(2, 5, 4)
    mask = torch.zeros(2, 5, dtype=torch.bool)
    # S0 = 5, S = 6 with the bias row; 72 scores; one mask of 10 elements.
    expected = add(
        lin(6, 8, 8),
        lin(10, 6, 8),
        lin(10, 4, 8),
        E(49, 0, 96),
        E(72 * 7, 288, 48 + 96 + 72),
        E(72, 0, 10),
        E(12 * 17, 0, 144),
        E(48 * 11, 288, 72 + 96 + 48),
        lin(6, 8, 8),
        E(0, 0, 16),
    )
    assert expected == E(4_493, 2_144, 1_390)
    assert estimate(mha, q, k, v, mask, False) == expected


def test_mha_unbatched_and_zero_attn() -> None:
    mha = nn.MultiheadAttention(8, 2, add_zero_attn=True)
    q, kv = torch.randn(3, 8), torch.randn(4, 8)
    result = estimate(mha, q, kv, kv)
    expected = add(
        lin(3, 8, 8),
        lin(4, 8, 8),
        lin(4, 8, 8),
        E(25, 0, 48),
        E(30 * 7, 120, 24 + 40 + 30),
        E(6 * 14, 0, 60),
        E(24 * 9, 120, 30 + 40 + 24),
        lin(3, 8, 8),
        E(30, 0, 30 + 15),
    )
    assert result == expected


def _layer_norm(n: int, rows: int, features: int) -> Estimate:
    return E(6 * n + 2 * rows + 2 * n, 0, 2 * n + 2 * features)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_layer(norm_first: bool) -> None:
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, norm_first=norm_first)
    x = torch.randn(3, 2, 8)
    n, hidden = 48, 96
    expected = add(
        _mha_hand(2, 3, 3, 8, 2, weights=False),  # 3709 FLOPs
        E(0, 0, 2 * n),  # dropout1 (eval)
        E(n, 0, 3 * n),  # residual
        _layer_norm(n, 6, 8),  # norm1
        lin(6, 8, 16),  # linear1
        E(hidden, 0, 2 * hidden),  # relu
        E(0, 0, 2 * hidden),  # dropout (eval)
        lin(6, 16, 8),  # linear2
        E(0, 0, 2 * n),  # dropout2
        E(n, 0, 3 * n),  # residual
        _layer_norm(n, 6, 8),  # norm2
    )
    assert expected == E(7_765, 3_360, 2_760)
    assert estimate(layer, x) == expected
    gelu = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, activation="gelu")
    assert estimate(gelu, x) == E(7_765 + 4 * hidden, 3_360, 2_760)


def test_transformer_encoder_layer_masks_batch_first() -> None:
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    x = torch.randn(2, 3, 8)
    mask = torch.zeros(3, 3, dtype=torch.bool)
    padding = torch.zeros(2, 3, dtype=torch.bool)
    # Each mask adds B*H*T*S = 36 FLOPs and its elements as reads.
    assert estimate(layer, x, mask, padding) == E(7_765 + 72, 3_360, 2_760 + 9 + 6)


def test_transformer_decoder_layer() -> None:
    layer = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16)
    tgt, memory = torch.randn(3, 2, 8), torch.randn(5, 2, 8)
    n = 48
    feed_forward = add(lin(6, 8, 16), E(96, 0, 192), E(0, 0, 192), lin(6, 16, 8))
    expected = add(
        _mha_hand(2, 3, 3, 8, 2, weights=False),
        _mha_hand(2, 3, 5, 8, 2, weights=False),
        feed_forward,
        *[E(0, 0, 2 * n), E(n, 0, 3 * n), _layer_norm(n, 6, 8)] * 3,
    )
    assert expected == E(13_374, 5_888, 4_504)
    assert estimate(layer, tgt, memory) == expected
    first = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, norm_first=True)
    assert estimate(first, tgt, memory) == expected


def test_attention_cost_is_shape_only() -> None:
    mha = nn.MultiheadAttention(8, 2)
    assert attention_cost(mha, (3, 2, 8), (5, 2, 8), (5, 2, 8), (), (2, 3, 5)) == _mha_hand(
        2, 3, 5, 8, 2, weights=True
    )


# ---------------------------------------------------------------------------------------------
# Recurrent layers


def test_rnn_tanh() -> None:
    # 12 pairs, 6 steps; per pair 5*(7 + 9 + 1) + 2*5 + 6*5 FLOPs, 5*9 MACs; 55 parameters per step.
    assert estimate(nn.RNN(4, 5), torch.randn(6, 2, 4)) == E(12 * 125, 12 * 45, 12 * 14 + 6 * 55)
    relu = nn.RNN(4, 5, nonlinearity="relu")
    assert estimate(relu, torch.randn(6, 2, 4)) == E(12 * 100, 12 * 45, 12 * 14 + 6 * 55)
    # unbatched (L, H_in): 6 pairs.
    assert estimate(nn.RNN(4, 5), torch.randn(6, 4)) == E(6 * 125, 6 * 45, 6 * 14 + 6 * 55)


def test_gru_bidirectional_two_layers() -> None:
    gru = nn.GRU(3, 4, num_layers=2, bidirectional=True)
    # Per pair, layer 0 (I=3): 84 MACs, 256 FLOPs, 11 DMAs, 108 params;
    # layer 1 (I=8): 144 MACs, 376 FLOPs, 16 DMAs, 168 params.
    assert estimate(gru, torch.randn(5, 2, 3)) == E(12_640, 4_560, 3_300)
    assert sum(p.numel() for p in gru.parameters()) == 108 * 2 + 168 * 2


def test_lstm_proj_bidirectional_two_layers_batch_first() -> None:
    lstm = nn.LSTM(4, 6, num_layers=2, bidirectional=True, proj_size=3, batch_first=True)
    # Per pair, layer 0 (I=4): 186 MACs, 561 FLOPs, 22 DMAs, 234 params;
    # layer 1 (I=6): 234 MACs, 657 FLOPs, 24 DMAs, 282 params.
    assert estimate(lstm, torch.randn(2, 5, 4)) == E(24_360, 8_400, 6_080)
    assert sum(p.numel() for p in lstm.parameters()) == 2 * (234 + 282)


def test_lstm_with_state_and_packed() -> None:
    lstm = nn.LSTM(10, 20)
    state = (torch.zeros(1, 1, 20), torch.zeros(1, 1, 20))
    assert estimate(lstm, torch.randn(7, 1, 10), state) == estimate(lstm, torch.randn(7, 1, 10))
    assert estimate(lstm, torch.randn(7, 1, 10), None) == estimate(lstm, torch.randn(7, 1, 10))
    packed = pack_padded_sequence(torch.randn(3, 2, 10), torch.tensor([3, 2]))
    result = estimate(lstm, packed)
    assert result is not None
    assert result.macs == 5 * 2_400  # 5 (step, sample) pairs
    assert result.dmas == 5 * 90 + 3 * 2_560  # weights read once per each of 3 steps


def test_rnn_training_dropout() -> None:
    gru = nn.GRU(3, 4, num_layers=2, bidirectional=True, dropout=0.5)
    result = estimate(gru, torch.randn(5, 2, 3), train=True)
    # one inner boundary: 10 pairs x 2 directions x 4 features.
    assert result == E(12_640 + 80, 4_560, 3_300 + 240)


def test_cells() -> None:
    assert estimate(nn.LSTMCell(3, 5), torch.randn(4, 3)) == E(1_920, 640, 92 + 200)
    assert estimate(nn.GRUCell(3, 5, bias=False), torch.randn(3)) == E(320, 120, 13 + 120)
    assert estimate(nn.RNNCell(3, 5, nonlinearity="relu"), torch.randn(2, 3)) == E(180, 80, 26 + 50)
    hx = (torch.zeros(4, 5), torch.zeros(4, 5))
    assert estimate(nn.LSTMCell(3, 5), torch.randn(4, 3), hx) == E(1_920, 640, 292)


# ---------------------------------------------------------------------------------------------
# Every required class has a formula, on a real forward


def _pool_unpool(kind: type[nn.Module], dims: int) -> tuple[nn.Module, tuple[Any, ...]]:
    pool = {1: nn.MaxPool1d, 2: nn.MaxPool2d, 3: nn.MaxPool3d}[dims](2, return_indices=True)
    out, indices = pool(torch.randn(1, 2, *([4] * dims)))
    return kind(2), (out, indices)


def _x(*shape: int) -> tuple[torch.Tensor]:
    return (torch.randn(*shape),)


IMG = (2, 3, 8, 8)
SEQ = (2, 4, 6)

# (required class name, factory of (module, inputs))
CASES: list[tuple[str, Callable[[], tuple[nn.Module, tuple[Any, ...]]]]] = [
    ("Linear", lambda: (nn.Linear(6, 3), _x(*SEQ))),
    ("Bilinear", lambda: (nn.Bilinear(6, 5, 3), (torch.randn(4, 6), torch.randn(4, 5)))),
    ("LazyLinear", lambda: (nn.LazyLinear(3), _x(*SEQ))),
    ("Identity", lambda: (nn.Identity(), _x(*IMG))),
    ("Conv1d", lambda: (nn.Conv1d(4, 6, 3), _x(*SEQ))),
    ("Conv2d", lambda: (nn.Conv2d(3, 4, 3), _x(*IMG))),
    ("Conv3d", lambda: (nn.Conv3d(3, 4, 3), _x(1, 3, 5, 5, 5))),
    ("ConvTranspose1d", lambda: (nn.ConvTranspose1d(4, 6, 3, stride=2), _x(*SEQ))),
    ("ConvTranspose2d", lambda: (nn.ConvTranspose2d(3, 4, 3, stride=2), _x(*IMG))),
    ("ConvTranspose3d", lambda: (nn.ConvTranspose3d(3, 4, 3), _x(1, 3, 4, 4, 4))),
    ("BatchNorm1d", lambda: (nn.BatchNorm1d(4), _x(*SEQ))),
    ("BatchNorm2d", lambda: (nn.BatchNorm2d(3), _x(*IMG))),
    ("BatchNorm3d", lambda: (nn.BatchNorm3d(3), _x(1, 3, 4, 4, 4))),
    ("LayerNorm", lambda: (nn.LayerNorm(6), _x(*SEQ))),
    ("GroupNorm", lambda: (nn.GroupNorm(1, 3), _x(*IMG))),
    ("InstanceNorm1d", lambda: (nn.InstanceNorm1d(4), _x(*SEQ))),
    ("InstanceNorm2d", lambda: (nn.InstanceNorm2d(3), _x(*IMG))),
    ("InstanceNorm3d", lambda: (nn.InstanceNorm3d(3), _x(1, 3, 4, 4, 4))),
    ("RMSNorm", lambda: (nn.RMSNorm(6), _x(*SEQ))),
    ("LocalResponseNorm", lambda: (nn.LocalResponseNorm(2), _x(*IMG))),
    ("Embedding", lambda: (nn.Embedding(10, 4), (torch.randint(0, 10, (2, 5)),))),
    (
        "EmbeddingBag",
        lambda: (nn.EmbeddingBag(10, 4), (torch.randint(0, 10, (7,)), torch.tensor([0, 2, 5]))),
    ),
    ("ReLU", lambda: (nn.ReLU(), _x(*IMG))),
    ("ReLU6", lambda: (nn.ReLU6(), _x(*IMG))),
    ("LeakyReLU", lambda: (nn.LeakyReLU(), _x(*IMG))),
    ("PReLU", lambda: (nn.PReLU(), _x(*IMG))),
    ("RReLU", lambda: (nn.RReLU(), _x(*IMG))),
    ("ELU", lambda: (nn.ELU(), _x(*IMG))),
    ("SELU", lambda: (nn.SELU(), _x(*IMG))),
    ("CELU", lambda: (nn.CELU(), _x(*IMG))),
    ("GELU", lambda: (nn.GELU(), _x(*IMG))),
    ("SiLU", lambda: (nn.SiLU(), _x(*IMG))),
    ("Mish", lambda: (nn.Mish(), _x(*IMG))),
    ("Sigmoid", lambda: (nn.Sigmoid(), _x(*IMG))),
    ("Tanh", lambda: (nn.Tanh(), _x(*IMG))),
    ("Hardtanh", lambda: (nn.Hardtanh(), _x(*IMG))),
    ("Hardsigmoid", lambda: (nn.Hardsigmoid(), _x(*IMG))),
    ("Hardswish", lambda: (nn.Hardswish(), _x(*IMG))),
    ("Hardshrink", lambda: (nn.Hardshrink(), _x(*IMG))),
    ("Softshrink", lambda: (nn.Softshrink(), _x(*IMG))),
    ("Tanhshrink", lambda: (nn.Tanhshrink(), _x(*IMG))),
    ("Softplus", lambda: (nn.Softplus(), _x(*IMG))),
    ("Softsign", lambda: (nn.Softsign(), _x(*IMG))),
    ("LogSigmoid", lambda: (nn.LogSigmoid(), _x(*IMG))),
    ("Threshold", lambda: (nn.Threshold(0.1, 0.0), _x(*IMG))),
    ("GLU", lambda: (nn.GLU(dim=1), _x(2, 4, 3))),
    ("Softmax", lambda: (nn.Softmax(dim=1), _x(*IMG))),
    ("Softmin", lambda: (nn.Softmin(dim=1), _x(*IMG))),
    ("Softmax2d", lambda: (nn.Softmax2d(), _x(*IMG))),
    ("LogSoftmax", lambda: (nn.LogSoftmax(dim=1), _x(*IMG))),
    ("MaxPool1d", lambda: (nn.MaxPool1d(2), _x(*SEQ))),
    ("MaxPool2d", lambda: (nn.MaxPool2d(2), _x(*IMG))),
    ("MaxPool3d", lambda: (nn.MaxPool3d(2), _x(1, 3, 4, 4, 4))),
    ("AvgPool1d", lambda: (nn.AvgPool1d(2), _x(*SEQ))),
    ("AvgPool2d", lambda: (nn.AvgPool2d(2), _x(*IMG))),
    ("AvgPool3d", lambda: (nn.AvgPool3d(2), _x(1, 3, 4, 4, 4))),
    ("AdaptiveMaxPool1d", lambda: (nn.AdaptiveMaxPool1d(4), _x(*SEQ))),
    ("AdaptiveMaxPool2d", lambda: (nn.AdaptiveMaxPool2d(3), _x(*IMG))),
    ("AdaptiveMaxPool3d", lambda: (nn.AdaptiveMaxPool3d(3), _x(1, 3, 4, 4, 4))),
    ("AdaptiveAvgPool1d", lambda: (nn.AdaptiveAvgPool1d(4), _x(*SEQ))),
    ("AdaptiveAvgPool2d", lambda: (nn.AdaptiveAvgPool2d(3), _x(*IMG))),
    ("AdaptiveAvgPool3d", lambda: (nn.AdaptiveAvgPool3d(3), _x(1, 3, 4, 4, 4))),
    ("LPPool1d", lambda: (nn.LPPool1d(2, 2), _x(*SEQ))),
    ("LPPool2d", lambda: (nn.LPPool2d(2, 2), _x(*IMG))),
    ("LPPool3d", lambda: (nn.LPPool3d(2, 2), _x(1, 3, 4, 4, 4))),
    ("FractionalMaxPool2d", lambda: (nn.FractionalMaxPool2d(2, output_ratio=0.5), _x(*IMG))),
    ("FractionalMaxPool3d", lambda: (nn.FractionalMaxPool3d(2, output_size=2), _x(1, 3, 5, 5, 5))),
    ("MaxUnpool1d", lambda: _pool_unpool(nn.MaxUnpool1d, 1)),
    ("MaxUnpool2d", lambda: _pool_unpool(nn.MaxUnpool2d, 2)),
    ("MaxUnpool3d", lambda: _pool_unpool(nn.MaxUnpool3d, 3)),
    ("Dropout", lambda: (nn.Dropout(), _x(*IMG))),
    ("Dropout1d", lambda: (nn.Dropout1d(), _x(*SEQ))),
    ("Dropout2d", lambda: (nn.Dropout2d(), _x(*IMG))),
    ("Dropout3d", lambda: (nn.Dropout3d(), _x(1, 3, 4, 4, 4))),
    ("AlphaDropout", lambda: (nn.AlphaDropout(), _x(*IMG))),
    ("FeatureAlphaDropout", lambda: (nn.FeatureAlphaDropout(), _x(*IMG))),
    ("Flatten", lambda: (nn.Flatten(), _x(*IMG))),
    ("Unflatten", lambda: (nn.Unflatten(1, (1, 3)), _x(*IMG))),
    ("Upsample", lambda: (nn.Upsample(scale_factor=2, mode="bilinear"), _x(*IMG))),
    ("UpsamplingNearest2d", lambda: (nn.UpsamplingNearest2d(scale_factor=2), _x(*IMG))),
    ("UpsamplingBilinear2d", lambda: (nn.UpsamplingBilinear2d(scale_factor=2), _x(*IMG))),
    ("PixelShuffle", lambda: (nn.PixelShuffle(2), _x(1, 8, 3, 3))),
    ("PixelUnshuffle", lambda: (nn.PixelUnshuffle(2), _x(*IMG))),
    ("ChannelShuffle", lambda: (nn.ChannelShuffle(2), _x(1, 4, 3, 3))),
    ("ZeroPad1d", lambda: (nn.ZeroPad1d(1), _x(*SEQ))),
    ("ZeroPad2d", lambda: (nn.ZeroPad2d(1), _x(*IMG))),
    ("ZeroPad3d", lambda: (nn.ZeroPad3d(1), _x(1, 3, 2, 2, 2))),
    ("ConstantPad1d", lambda: (nn.ConstantPad1d(1, 0.5), _x(*SEQ))),
    ("ConstantPad2d", lambda: (nn.ConstantPad2d(1, 0.5), _x(*IMG))),
    ("ConstantPad3d", lambda: (nn.ConstantPad3d(1, 0.5), _x(1, 3, 2, 2, 2))),
    ("ReflectionPad1d", lambda: (nn.ReflectionPad1d(1), _x(*SEQ))),
    ("ReflectionPad2d", lambda: (nn.ReflectionPad2d(1), _x(*IMG))),
    ("ReflectionPad3d", lambda: (nn.ReflectionPad3d(1), _x(1, 3, 2, 2, 2))),
    ("ReplicationPad1d", lambda: (nn.ReplicationPad1d(1), _x(*SEQ))),
    ("ReplicationPad2d", lambda: (nn.ReplicationPad2d(1), _x(*IMG))),
    ("ReplicationPad3d", lambda: (nn.ReplicationPad3d(1), _x(1, 3, 2, 2, 2))),
    ("CircularPad1d", lambda: (nn.CircularPad1d(1), _x(*SEQ))),
    ("CircularPad2d", lambda: (nn.CircularPad2d(1), _x(*IMG))),
    ("CircularPad3d", lambda: (nn.CircularPad3d(1), _x(1, 3, 2, 2, 2))),
    ("CosineSimilarity", lambda: (nn.CosineSimilarity(), (torch.randn(4, 6), torch.randn(4, 6)))),
    ("PairwiseDistance", lambda: (nn.PairwiseDistance(), (torch.randn(4, 6), torch.randn(4, 6)))),
    (
        "MultiheadAttention",
        lambda: (nn.MultiheadAttention(6, 2), (*_x(4, 2, 6), *_x(5, 2, 6), *_x(5, 2, 6))),
    ),
    ("TransformerEncoderLayer", lambda: (nn.TransformerEncoderLayer(6, 2, 12), _x(4, 2, 6))),
    (
        "TransformerDecoderLayer",
        lambda: (nn.TransformerDecoderLayer(6, 2, 12), (*_x(4, 2, 6), *_x(5, 2, 6))),
    ),
    ("RNN", lambda: (nn.RNN(6, 5), _x(*SEQ))),
    ("LSTM", lambda: (nn.LSTM(6, 5), _x(*SEQ))),
    ("GRU", lambda: (nn.GRU(6, 5), _x(*SEQ))),
    ("RNNCell", lambda: (nn.RNNCell(6, 5), _x(3, 6))),
    ("LSTMCell", lambda: (nn.LSTMCell(6, 5), _x(3, 6))),
    ("GRUCell", lambda: (nn.GRUCell(6, 5), _x(3, 6))),
]

REQUIRED = [
    "Linear",
    "Bilinear",
    "LazyLinear",
    "Identity",
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "LayerNorm",
    "GroupNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "RMSNorm",
    "LocalResponseNorm",
    "Embedding",
    "EmbeddingBag",
    "ReLU",
    "ReLU6",
    "LeakyReLU",
    "PReLU",
    "RReLU",
    "ELU",
    "SELU",
    "CELU",
    "GELU",
    "SiLU",
    "Mish",
    "Sigmoid",
    "Tanh",
    "Hardtanh",
    "Hardsigmoid",
    "Hardswish",
    "Hardshrink",
    "Softshrink",
    "Tanhshrink",
    "Softplus",
    "Softsign",
    "LogSigmoid",
    "Threshold",
    "GLU",
    "Softmax",
    "Softmin",
    "Softmax2d",
    "LogSoftmax",
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "LPPool1d",
    "LPPool2d",
    "LPPool3d",
    "FractionalMaxPool2d",
    "FractionalMaxPool3d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "AlphaDropout",
    "FeatureAlphaDropout",
    "Flatten",
    "Unflatten",
    "Upsample",
    "UpsamplingNearest2d",
    "UpsamplingBilinear2d",
    "PixelShuffle",
    "PixelUnshuffle",
    "ChannelShuffle",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "CosineSimilarity",
    "PairwiseDistance",
    "MultiheadAttention",
    "TransformerEncoderLayer",
    "TransformerDecoderLayer",
    "RNN",
    "LSTM",
    "GRU",
    "RNNCell",
    "LSTMCell",
    "GRUCell",
]


def test_required_list_is_covered() -> None:
    assert sorted(REQUIRED) == sorted(name for name, _ in CASES)
    names = supported_module_types()
    assert names == sorted(names)
    assert set(REQUIRED) <= set(names)
    activations = set(nn.modules.activation.__all__) - {"MultiheadAttention"}
    assert activations <= set(names)


def _to_meta(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return torch.empty(value.shape, dtype=value.dtype, device="meta")
    if isinstance(value, tuple):
        return tuple(_to_meta(item) for item in value)
    if isinstance(value, list):
        return [_to_meta(item) for item in value]
    return value


def _check(result: Estimate | None) -> Estimate:
    assert result is not None
    for value in (result.flops, result.macs, result.dmas):
        assert type(value) is int
        assert value >= 0
    return result


@pytest.mark.parametrize(("name", "factory"), CASES, ids=[name for name, _ in CASES])
@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
def test_every_required_class(
    name: str, factory: Callable[[], tuple[nn.Module, tuple[Any, ...]]], train: bool
) -> None:
    torch.manual_seed(0)
    module, inputs = factory()
    args, output = run(module, *inputs, train=train)
    assert type(module).__name__ == ("Linear" if name == "LazyLinear" else name)
    assert has_formula(module)
    result = _check(module_estimate(module, args, output))
    # Shapes only: storage-free meta tensors of the same shapes give the same estimate.
    assert module_estimate(module, _to_meta(args), _to_meta(output)) == result
    step = field_step(module, args, output)
    assert step is None or isinstance(step, FieldStep)
    if step is not None:
        assert len(step.kernel) == len(step.stride) == len(step.padding) == len(step.dilation)
        assert all(
            type(v) is int for v in (*step.kernel, *step.stride, *step.padding, *step.dilation)
        )


def test_rule_order_serves_subclasses_first() -> None:
    for index, rule in enumerate(RULES):
        for earlier in RULES[:index]:
            for kind in rule.types:
                assert not issubclass(kind, earlier.types), kind


# ---------------------------------------------------------------------------------------------
# Sweep of configurations: never raises, non-negative ints


def _conv_cases() -> list[tuple[nn.Module, tuple[Any, ...]]]:
    cases: list[tuple[nn.Module, tuple[Any, ...]]] = []
    conv = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}
    transpose = {1: nn.ConvTranspose1d, 2: nn.ConvTranspose2d, 3: nn.ConvTranspose3d}
    for dims, groups, stride, padding, dilation, bias, batched in itertools.product(
        (1, 2, 3), (1, 2), (1, 2), (0, 1, "same"), (1, 2), (True, False), (True, False)
    ):
        if padding == "same" and stride != 1:
            continue
        shape = (4, *([7] * dims)) if not batched else (2, 4, *([7] * dims))
        cases.append(
            (
                conv[dims](
                    4,
                    6,
                    3,
                    stride=stride,
                    padding=padding,
                    dilation=dilation,
                    groups=groups,
                    bias=bias,
                ),
                _x(*shape),
            )
        )
        if padding != "same":
            cases.append(
                (
                    transpose[dims](
                        4,
                        6,
                        3,
                        stride=stride,
                        padding=padding,
                        dilation=dilation,
                        groups=groups,
                        bias=bias,
                        output_padding=1 if stride == 2 else 0,
                    ),
                    _x(*shape),
                )
            )
    return cases


def _norm_cases() -> list[tuple[nn.Module, tuple[Any, ...]]]:
    cases: list[tuple[nn.Module, tuple[Any, ...]]] = []
    for affine, track, momentum in itertools.product((True, False), (True, False), (0.1, None)):
        cases.append(
            (
                nn.BatchNorm1d(4, affine=affine, track_running_stats=track, momentum=momentum),
                _x(3, 4),
            )
        )
        cases.append(
            (
                nn.BatchNorm2d(3, affine=affine, track_running_stats=track, momentum=momentum),
                _x(*IMG),
            )
        )
        cases.append((nn.InstanceNorm1d(4, affine=affine, track_running_stats=track), _x(4, 6)))
        cases.append(
            (nn.InstanceNorm3d(3, affine=affine, track_running_stats=track), _x(2, 3, 2, 3, 3))
        )
    for affine, bias in itertools.product((True, False), (True, False)):
        cases.append((nn.LayerNorm((4, 6), elementwise_affine=affine, bias=bias), _x(*SEQ)))
        cases.append((nn.LayerNorm(6, elementwise_affine=affine, bias=bias), _x(6)))
    cases.append((nn.GroupNorm(3, 3, affine=False), _x(*IMG)))
    cases.append((nn.RMSNorm((4, 6), eps=None), _x(*SEQ)))
    cases.append((nn.LocalResponseNorm(5), _x(2, 3, 6)))
    cases.append((nn.CrossMapLRN2d(3), _x(*IMG)))
    cases.append((nn.SyncBatchNorm(3), _x(*IMG)))
    return cases


def _recurrent_cases() -> list[tuple[nn.Module, tuple[Any, ...]]]:
    cases: list[tuple[nn.Module, tuple[Any, ...]]] = []
    for kind, layers, bidirectional, batch_first, bias, batched in itertools.product(
        (nn.RNN, nn.LSTM, nn.GRU),
        (1, 2),
        (False, True),
        (False, True),
        (True, False),
        (True, False),
    ):
        module = kind(
            5, 4, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first, bias=bias
        )
        cases.append((module, _x(3, 2, 5) if batched else _x(3, 5)))
    cases.append((nn.LSTM(5, 4, proj_size=2, num_layers=3, dropout=0.2), _x(3, 2, 5)))
    lengths = torch.tensor([3, 1])
    cases.append(
        (nn.GRU(5, 4, bidirectional=True), (pack_padded_sequence(torch.randn(3, 2, 5), lengths),))
    )
    for cell in (nn.RNNCell(5, 4), nn.LSTMCell(5, 4), nn.GRUCell(5, 4, bias=False)):
        cases.append((cell, _x(5)))
        cases.append((cell, _x(3, 5)))
    return cases


def _attention_cases() -> list[tuple[nn.Module, tuple[Any, ...]]]:
    cases: list[tuple[nn.Module, tuple[Any, ...]]] = []
    for batch_first, bias_kv, zero_attn, need_weights, average, batched in itertools.product(
        (False, True), (False, True), (False, True), (False, True), (False, True), (False, True)
    ):
        mha = nn.MultiheadAttention(
            8,
            2,
            kdim=6,
            vdim=4,
            add_bias_kv=bias_kv,
            add_zero_attn=zero_attn,
            batch_first=batch_first,
        )
        if batched:
            q = torch.randn(2, 3, 8) if batch_first else torch.randn(3, 2, 8)
            k = torch.randn(2, 5, 6) if batch_first else torch.randn(5, 2, 6)
            v = torch.randn(2, 5, 4) if batch_first else torch.randn(5, 2, 4)
            mask = torch.zeros(2, 5, dtype=torch.bool)
        else:
            q, k, v, mask = (
                torch.randn(3, 8),
                torch.randn(5, 6),
                torch.randn(5, 4),
                torch.zeros(5, dtype=torch.bool),
            )
        attn_mask = torch.zeros(3, 5, dtype=torch.bool)
        cases.append((mha, (q, k, v, mask, need_weights, attn_mask, average)))
    for norm_first, batch_first, activation in itertools.product(
        (False, True), (False, True), ("relu", "gelu")
    ):
        enc = nn.TransformerEncoderLayer(
            8, 2, 16, norm_first=norm_first, batch_first=batch_first, activation=activation
        )
        dec = nn.TransformerDecoderLayer(
            8, 2, 16, norm_first=norm_first, batch_first=batch_first, activation=activation
        )
        cases.append((enc, _x(2, 3, 8)))
        memory = torch.randn(2, 4, 8) if batch_first else torch.randn(4, 2, 8)
        target = torch.randn(2, 3, 8) if batch_first else torch.randn(3, 2, 8)
        cases.append((dec, (target, memory)))
    cases.append((nn.TransformerEncoderLayer(8, 2, 16, activation=nn.SiLU()), _x(3, 8)))
    cases.append((nn.TransformerEncoderLayer(8, 2, 16, activation=lambda t: t * 2), _x(3, 8)))
    return cases


def _misc_cases() -> list[tuple[nn.Module, tuple[Any, ...]]]:
    cases: list[tuple[nn.Module, tuple[Any, ...]]] = []
    for mode, psw in itertools.product(("sum", "mean", "max"), (False, True)):
        if psw and mode != "sum":
            continue
        bag = nn.EmbeddingBag(10, 3, mode=mode, max_norm=1.0 if psw else None, padding_idx=0)
        weights = torch.rand(6) if psw else None
        cases.append((bag, (torch.randint(0, 10, (6,)), torch.tensor([0, 0, 4]), weights)))
        cases.append((bag, (torch.randint(0, 10, (2, 3)),)))
    cases.append((nn.Embedding(10, 3, max_norm=2.0, padding_idx=1), (torch.randint(0, 10, (4,)),)))
    for ceil_mode, padding, dilation in itertools.product((False, True), (0, 1), (1, 2)):
        cases.append((nn.MaxPool2d(3, 2, padding, dilation, ceil_mode=ceil_mode), _x(3, 9, 9)))
        cases.append(
            (nn.AvgPool2d(3, 2, padding, ceil_mode=ceil_mode, count_include_pad=False), _x(*IMG))
        )
        cases.append((nn.LPPool2d(3, 3, stride=2, ceil_mode=ceil_mode), _x(*IMG)))
    for size in ((5, 3), (1, 9), (16, 16), (2, None)):
        cases.append((nn.AdaptiveAvgPool2d(size), _x(3, 7, 9)))
        cases.append((nn.AdaptiveMaxPool2d(size, return_indices=True), _x(*IMG)))
    for mode in ("nearest", "nearest-exact", "linear", "area"):
        cases.append((nn.Upsample(scale_factor=1.5, mode=mode), _x(*SEQ)))
    cases.append((nn.Upsample(size=(5, 7), mode="bicubic", align_corners=True), _x(*IMG)))
    cases.append((nn.Softmax(dim=None), _x(5)))
    cases.append((nn.Softmax(dim=0), (torch.tensor(1.0),)))
    cases.append((nn.ReLU(), (torch.tensor(1.0),)))
    cases.append((nn.GLU(), _x(*IMG)))
    cases.append((nn.Dropout2d(), _x(3, 4, 5)))
    cases.append((nn.Dropout3d(), _x(3, 2, 2, 2)))
    cases.append((nn.FeatureAlphaDropout(), _x(3, 4)))
    cases.append((nn.CosineSimilarity(dim=0), (torch.randn(4), torch.randn(4))))
    cases.append((nn.CosineSimilarity(dim=-1), (torch.randn(2, 1, 4), torch.randn(3, 4))))
    cases.append((nn.PairwiseDistance(p=1.0), (torch.randn(4), torch.randn(4))))
    cases.append((nn.Linear(4, 3), _x(2, 3, 5, 4)))
    cases.append((nn.Linear(4, 3), (torch.randn(0, 4),)))
    cases.append((nn.Conv2d(3, 4, 3), _x(0, 3, 5, 5)))
    cases.append((nn.ZeroPad2d((-1, 2, 1, 0)), _x(*IMG)))
    return cases


SWEEP = _conv_cases() + _norm_cases() + _recurrent_cases() + _attention_cases() + _misc_cases()


@pytest.mark.parametrize("index", range(len(SWEEP)))
def test_sweep_never_raises(index: int) -> None:
    module, inputs = SWEEP[index]
    for train in (False, True):
        torch.manual_seed(index)
        args, output = run(module, *inputs, train=train)
        _check(module_estimate(module, args, output))
        field_step(module, args, output)


def test_sweep_is_large() -> None:
    assert len(SWEEP) > 300


# ---------------------------------------------------------------------------------------------
# Unknown types, subclasses, missing inputs


class Custom(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


class MyLinear(nn.Linear):
    pass


def test_unknown_module_returns_none() -> None:
    module = Custom()
    args, output = run(module, torch.randn(2, 3))
    assert not has_formula(module)
    assert module_estimate(module, args, output) is None
    assert field_step(module, args, output) is None
    for container in (
        nn.Sequential(nn.ReLU()),
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2), 1),
    ):
        assert not has_formula(container)


def test_subclass_of_supported_type() -> None:
    module = MyLinear(16, 4)
    assert has_formula(module)
    assert estimate(module, torch.randn(8, 16)) == E(1_024, 512, 228)


def test_missing_inputs_give_none() -> None:
    assert module_estimate(nn.Linear(3, 2), (), None) is None
    assert module_estimate(nn.Conv2d(3, 2, 1), (None,), None) is None
    assert module_estimate(nn.MultiheadAttention(8, 2), (torch.randn(3, 8),), None) is None


# ---------------------------------------------------------------------------------------------
# Receptive-field steps


def _step(module: nn.Module, *inputs: Any) -> FieldStep | None:
    args, output = run(module, *inputs)
    return field_step(module, args, output)


def test_field_steps() -> None:
    img = torch.randn(1, 3, 16, 16)
    conv = nn.Conv2d(3, 8, 3, stride=2, padding=1, dilation=2)
    assert _step(conv, img) == FieldStep((3, 3), (2, 2), (1, 1), (2, 2))
    assert _step(nn.MaxPool2d(2), img) == FieldStep((2, 2), (2, 2), (0, 0), (1, 1))
    # Adaptive pooling with integral ratios: kernel = stride = in / out (7x7 -> 1x1).
    assert _step(nn.AdaptiveAvgPool2d((1, 1)), torch.randn(1, 3, 7, 7)) == FieldStep(
        (7, 7), (7, 7), (0, 0), (1, 1)
    )
    # Non-integral ratio (7 -> 2): None.
    assert _step(nn.AdaptiveAvgPool2d((2, 2)), torch.randn(1, 3, 7, 7)) is None
    assert _step(nn.ReLU(), img) == FieldStep((1, 1), (1, 1), (0, 0), (1, 1))
    assert _step(nn.Linear(16, 4), img) is None


def test_more_field_steps() -> None:
    img = torch.randn(1, 4, 8, 8)
    assert _step(nn.Conv2d(4, 4, (3, 5), padding="same", dilation=2), img) == FieldStep(
        (3, 5), (1, 1), (2, 4), (2, 2)
    )
    assert _step(nn.Conv1d(4, 4, 3, padding="valid"), torch.randn(1, 4, 8)) == FieldStep(
        (3,), (1,), (0,), (1,)
    )
    assert _step(nn.ConvTranspose2d(4, 4, 3, padding=1), img) == FieldStep(
        (3, 3), (1, 1), (1, 1), (1, 1)
    )
    assert _step(nn.ConvTranspose2d(4, 4, 3, stride=2), img) is None
    assert _step(nn.AvgPool2d(3, stride=2, padding=1), img) == FieldStep(
        (3, 3), (2, 2), (1, 1), (1, 1)
    )
    assert _step(nn.LPPool1d(2, 3), torch.randn(1, 4, 9)) == FieldStep((3,), (3,), (0,), (1,))
    assert _step(nn.MaxPool1d(3, 2, 1, 2), torch.randn(1, 4, 9)) == FieldStep(
        (3,), (2,), (1,), (2,)
    )
    assert _step(nn.BatchNorm2d(4), img) == FieldStep((1, 1), (1, 1), (0, 0), (1, 1))
    assert _step(nn.InstanceNorm2d(4), torch.randn(4, 8, 8)) == FieldStep(
        (1, 1), (1, 1), (0, 0), (1, 1)
    )
    assert _step(nn.Dropout2d(), img) == FieldStep((1, 1), (1, 1), (0, 0), (1, 1))
    assert _step(nn.Identity(), img) == FieldStep((1, 1), (1, 1), (0, 0), (1, 1))
    assert _step(nn.ZeroPad2d((1, 2, 3, 4)), img) == FieldStep((1, 1), (1, 1), (3, 1), (1, 1))
    assert _step(nn.PixelUnshuffle(2), img) == FieldStep((2, 2), (2, 2), (0, 0), (1, 1))
    assert _step(nn.Softmax(dim=1), img) == FieldStep((1, 1), (1, 1), (0, 0), (1, 1))
    assert _step(nn.Softmax(dim=-1), img) is None
    for module, inputs in (
        (nn.Flatten(), (img,)),
        (nn.Upsample(scale_factor=2), (img,)),
        (nn.Upsample(scale_factor=1.5), (img,)),
        (nn.PixelShuffle(2), (img,)),
        (nn.FractionalMaxPool2d(2, output_ratio=0.5), (img,)),
        (nn.LSTM(8, 4), (torch.randn(3, 2, 8),)),
        (nn.MultiheadAttention(8, 2), (torch.randn(3, 8),) * 3),
        (nn.Embedding(10, 3), (torch.tensor([1, 2]),)),
    ):
        assert _step(module, *inputs) is None


def _named_class(module: str, name: str, forward: Any, params: int = 0) -> type[nn.Module]:
    """A stand-in for a third-party class: same qualified name, no package needed."""

    def init(self: nn.Module) -> None:
        nn.Module.__init__(self)
        if params:
            self.weight = nn.Parameter(torch.ones(params))

    return type(name, (nn.Module,), {"__module__": module, "__init__": init, "forward": forward})


def test_third_party_modules_get_the_equivalent_formula() -> None:
    x = torch.randn(2, 3, 8)
    gelu = _named_class("transformers.activations", "GELUActivation", lambda self, t: F.gelu(t))()
    assert estimate(gelu, x) == estimate(nn.GELU(), x)
    new_gelu = _named_class(
        "transformers.activations",
        "NewGELUActivation",
        lambda self, t: F.gelu(t, approximate="tanh"),
    )()
    assert estimate(new_gelu, x) == estimate(nn.GELU(approximate="tanh"), x)
    rms = _named_class(
        "transformers.models.llama.modeling_llama",
        "LlamaRMSNorm",
        lambda self, t: t * self.weight,
        8,
    )()
    assert estimate(rms, x) == estimate(nn.RMSNorm(8), x)
    drop = _named_class("timm.layers.drop", "DropPath", lambda self, t: t)()
    assert estimate(drop, x) == E(0, 0, 2 * 48)
    # A subclass of a known class is matched through its bases.
    sub = type("MyGELU", (type(gelu),), {"__module__": "mine"})()
    assert estimate(sub, x) == estimate(nn.GELU(), x)
    # The same name in another package is not matched.
    other = _named_class("mine.activations", "GELUActivation", lambda self, t: F.gelu(t))()
    assert estimate(other, x) is None
    assert "transformers.activations.GELUActivation" in formulas.supported_third_party_types()


def test_transformers_conv1d_is_a_transposed_linear() -> None:
    class Conv1D(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(16, 4))
            self.bias = nn.Parameter(torch.zeros(4))

        def forward(self, t: torch.Tensor) -> torch.Tensor:
            return torch.addmm(self.bias, t.view(-1, 16), self.weight).view(*t.shape[:-1], 4)

    Conv1D.__module__ = "transformers.pytorch_utils"
    Conv1D.__qualname__ = "Conv1D"
    x = torch.randn(8, 16)
    assert estimate(Conv1D(), x) == estimate(nn.Linear(16, 4), x)


# ---------------------------------------------------------------------------------------------
# Operator FLOPs (torchscan.opflops.formulas): aten::_grouped_mm against its groups' matmuls


def _offsets(*ends: int) -> torch.Tensor:
    return torch.tensor(ends, dtype=torch.int32)


# (layout, self, mat2, offs, forward FLOPs by hand). Strides are multiples of 16 bytes, as the
# kernel requires. Each case with ``offs`` has an empty group or positions past the last offset,
# which no group computes.
GROUPED_MM_CASES: list[tuple[str, Callable[[], tuple[Any, ...]], int]] = [
    (
        # Rows of self cut into groups [0, 3), [3, 3) (empty), [3, 9); row 9 is in none.
        "2d_x_3d",
        lambda: (torch.randn(10, 16), torch.randn(3, 16, 8), _offsets(3, 3, 9)),
        2 * (3 + 0 + 6) * 16 * 8,
    ),
    (
        # mat2 given transposed (column-major), as transformers' experts pass their weights.
        "2d_x_3d_transposed",
        lambda: (
            torch.randn(10, 16),
            torch.randn(3, 8, 16).transpose(-2, -1),
            _offsets(4, 10, 10),
        ),
        2 * (4 + 6 + 0) * 16 * 8,
    ),
    (
        # Columns of mat2 cut into [0, 4), [4, 8), [8, 12) for self[0], self[1], self[2].
        "3d_x_2d",
        lambda: (torch.randn(3, 5, 16), torch.randn(16, 12), _offsets(4, 8, 12)),
        2 * 5 * 16 * (4 + 4 + 4),
    ),
    (
        # The contraction cut into [0, 2), [2, 7), [7, 10): out[g] = self[:, g] @ mat2[g, :];
        # positions 10 and 11 are in no group.
        "2d_x_2d",
        lambda: (torch.randn(5, 12), torch.randn(12, 8), _offsets(2, 7, 10)),
        2 * 5 * (2 + 5 + 3) * 8,
    ),
    (
        "3d_x_3d",
        lambda: (torch.randn(3, 5, 16), torch.randn(3, 16, 8), None),
        2 * 3 * 5 * 16 * 8,
    ),
]


def _groups(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor | None) -> list[Any]:
    """``(self_g, mat2_g, where)`` of each group: its operands and where its product goes."""
    if offs is None:
        return [(a[g], b[g], (g,)) for g in range(a.shape[0])]
    bounds = list(zip([0, *offs.tolist()[:-1]], offs.tolist(), strict=True))
    if a.dim() == 2 and b.dim() == 3:
        return [(a[s:e], b[g], (slice(s, e),)) for g, (s, e) in enumerate(bounds)]
    if a.dim() == 3:
        return [(a[g], b[:, s:e], (slice(None), slice(s, e))) for g, (s, e) in enumerate(bounds)]
    return [(a[:, s:e], b[s:e], (g,)) for g, (s, e) in enumerate(bounds)]


def _grouped_reference(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor | None) -> Any:
    """Each group's own ``mm``, the output positions it fills and the positions filled."""
    out = torch.zeros(torch._grouped_mm(a, b, offs).shape)
    filled = torch.zeros(out.shape, dtype=torch.bool)
    for a_g, b_g, where in _groups(a, b, offs):
        out[where] = a_g @ b_g
        filled[where] = True
    return out, filled


def _flop_counter_of_groups(a: Any, b: Any, offs: Any, backward: bool = False) -> int:
    """FlopCounterMode's count of the groups' matmuls (forward, or forward and backward)."""
    with FlopCounterMode(display=False) as mode:
        for a_g, b_g, _ in _groups(a, b, offs):
            product = torch.mm(a_g, b_g)
            if backward:
                product.backward(torch.ones_like(product))
    return int(mode.get_total_flops())


@pytest.mark.parametrize(
    ("layout", "make", "by_hand"), GROUPED_MM_CASES, ids=[case[0] for case in GROUPED_MM_CASES]
)
def test_grouped_mm_counts_each_groups_matmul(layout: str, make: Any, by_hand: int) -> None:
    torch.manual_seed(0)
    a, b, offs = make()
    # The groups are the kernel's: its output is each group's own matmul where one was computed.
    out = torch._grouped_mm(a, b, offs)
    expected_out, filled = _grouped_reference(a, b, offs)
    torch.testing.assert_close(out[filled], expected_out[filled])
    # Forward: the built-in formula, through measure_flops, with offs positional or by keyword.
    assert _flop_counter_of_groups(a, b, offs) == by_hand
    formula = builtin_formulas()[torch.ops.aten._grouped_mm]
    assert formula((a, b, offs), {}, out) == by_hand
    if offs is not None:
        assert formula((a, b), {"offs": offs}, out) == by_hand
    report = measure_flops(lambda: torch._grouped_mm(a, b, offs=offs))
    assert report["operator_flops"]["total"]["status"] == "complete"
    assert report["operator_flops"]["counted"] == [
        {"operator": "aten::_grouped_mm", "calls": 1, "flops": by_hand}
    ]
    # Forward and backward: the gradients are grouped matmuls of the other layouts (a 2-D x 3-D
    # forward has a 2-D x 2-D weight gradient, ...), each the forward's multiply-accumulates.
    a_leaf, b_leaf = a.detach().requires_grad_(), b.detach().requires_grad_()

    def step() -> None:
        product = torch._grouped_mm(a_leaf, b_leaf, offs)
        product.backward(torch.ones_like(product))

    report = measure_flops(step)
    assert report["operator_flops"]["total"]["status"] == "complete"
    assert report["operator_flops"]["total"]["value"] == 3 * by_hand
    assert _flop_counter_of_groups(a_leaf, b_leaf, offs, backward=True) == 3 * by_hand


def test_grouped_mm_offsets_past_the_end_are_clamped_as_the_kernel_slices() -> None:
    a, b = torch.randn(8, 16), torch.randn(2, 16, 4)
    offs = _offsets(6, 12)  # the second group is cut at row 8: rows 6 and 7 only
    out = torch._grouped_mm(a, b, offs)
    torch.testing.assert_close(out[6:], a[6:] @ b[1])
    formula = builtin_formulas()[torch.ops.aten._grouped_mm]
    assert formula((a, b, offs), {}, out) == 2 * (6 + 2) * 16 * 4
    # Without offsets a 2-D operand has no groups: the formula refuses rather than guess.
    with pytest.raises(ValueError, match="needs offs"):
        formula((a, b), {}, out)
