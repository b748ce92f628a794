"""Formulas of the recurrent layers: RNN, LSTM, GRU and their cells."""

from __future__ import annotations

from torch import nn
from torch.nn.utils.rnn import PackedSequence

from ._common import Estimate, Inputs, Rule, dot_flops, total

__all__ = ["RULES", "estimate_cell", "estimate_recurrent", "recurrent_step_cost"]

# Elementwise FLOPs per hidden unit and step after the gate pre-activations (sigmoid 4,
# tanh 6, as the activation formulas count them):
# LSTM: i, f, o sigmoids 12, g tanh 6, c = f*c + i*g 3, h = o * tanh(c) 7 -> 28.
# GRU: r, z sigmoids 8, n = tanh(.. + r * (W_hn h + b_hn)) 1 + 6, h = (1-z)*n + z*h 4 -> 19.
# RNN: tanh 6 or relu 1.
_LSTM_ELEMENTWISE = 28
_GRU_ELEMENTWISE = 19


def _gates(module: nn.Module) -> int:
    if isinstance(module, (nn.LSTM, nn.LSTMCell)):
        return 4
    if isinstance(module, (nn.GRU, nn.GRUCell)):
        return 3
    return 1


def _elementwise(module: nn.Module) -> int:
    if isinstance(module, (nn.LSTM, nn.LSTMCell)):
        return _LSTM_ELEMENTWISE
    if isinstance(module, (nn.GRU, nn.GRUCell)):
        return _GRU_ELEMENTWISE
    nonlinearity = getattr(module, "nonlinearity", None)
    if nonlinearity is None:
        nonlinearity = "relu" if getattr(module, "mode", "") == "RNN_RELU" else "tanh"
    return 1 if nonlinearity == "relu" else 6


def recurrent_step_cost(
    module: nn.Module,
    pairs: int,
    steps: int,
    input_size: int,
    hidden: int,
    proj: int,
    bias: bool,
) -> Estimate:
    """One layer and direction of a recurrent module over ``pairs`` (step, sample) pairs.

    With ``G`` gates (RNN 1, GRU 3, LSTM 4), ``I`` the layer's input size, ``H`` the hidden
    size and ``R`` the recurrent input size (``proj_size`` when set, else ``H``), per pair:

    * MACs: ``G*H*(I + R)`` gate products, plus ``proj*H`` for an LSTM projection;
    * FLOPs: ``G*H*((2I - 1) + (2R - 1) + 1)`` for the two dot products and their sum,
      ``+ 2*G*H`` for the two biases, ``+`` the gates' elementwise work per hidden unit
      (RNN tanh 6 / relu 1, GRU 19, LSTM 28), ``+ proj*(2H - 1)`` for a projection. With
      biases this is ``2 * MACs + G*H + elementwise``.
    * DMAs: per pair, read the input, the previous hidden state (and cell state) and write
      the new ones; per time step (``steps``), read the layer's weights and biases once.
    """
    gates = _gates(module)
    recurrent = proj if proj > 0 else hidden
    out_size = recurrent
    cell = hidden if gates == 4 else 0
    macs = gates * hidden * (input_size + recurrent)
    flops = gates * hidden * (dot_flops(input_size) + dot_flops(recurrent) + 1)
    flops += (2 * gates * hidden if bias else 0) + _elementwise(module) * hidden
    params = gates * hidden * (input_size + recurrent) + (2 * gates * hidden if bias else 0)
    if proj > 0:
        macs += proj * hidden
        flops += proj * dot_flops(hidden)
        params += proj * hidden
    per_pair = Estimate(flops, macs, input_size + recurrent + cell + out_size + cell)
    return Estimate(
        pairs * per_pair.flops, pairs * per_pair.macs, pairs * per_pair.dmas + steps * params
    )


def _pairs_and_steps(module: nn.RNNBase, x: object) -> tuple[int, int] | None:
    """(step-sample pairs, time steps) of a tensor or packed input."""
    if isinstance(x, PackedSequence):
        return int(x.data.shape[0]), int(x.batch_sizes.numel())
    shape = getattr(x, "shape", None)
    if shape is None:
        return None
    if len(shape) == 3:
        length, batch = (shape[1], shape[0]) if module.batch_first else (shape[0], shape[1])
        return int(length) * int(batch), int(length)
    if len(shape) == 2:
        return int(shape[0]), int(shape[0])
    return None


def estimate_recurrent(module: nn.RNNBase, inputs: Inputs, output: object) -> Estimate | None:
    """``nn.RNN``, ``nn.LSTM``, ``nn.GRU``: :func:`recurrent_step_cost` over layers and directions.

    Layer 0 reads ``input_size`` features, deeper layers ``num_directions * H_out`` (``H_out
    = proj_size`` when set). Tensor inputs, batched (``batch_first`` honoured) or unbatched,
    and PackedSequence inputs (the pairs are its data rows, the steps its batch sizes) are
    covered. In training mode with ``dropout > 0`` the mask multiply between layers adds
    ``pairs * num_directions * H_out`` FLOPs per inner boundary (and 3 DMAs per element).
    """
    del output
    if not inputs:
        return None
    counts = _pairs_and_steps(module, inputs[0])
    if counts is None:
        return None
    pairs, steps = counts
    directions = 2 if module.bidirectional else 1
    proj = int(getattr(module, "proj_size", 0))
    out_size = proj if proj > 0 else module.hidden_size
    parts = []
    for layer in range(module.num_layers):
        layer_input = module.input_size if layer == 0 else directions * out_size
        for _ in range(directions):
            parts.append(
                recurrent_step_cost(
                    module, pairs, steps, layer_input, module.hidden_size, proj, module.bias
                )
            )
    if module.training and module.dropout > 0 and module.num_layers > 1:
        dropped = (module.num_layers - 1) * pairs * directions * out_size
        parts.append(Estimate(dropped, 0, 3 * dropped))
    return total(parts)


def estimate_cell(module: nn.RNNCellBase, inputs: Inputs, output: object) -> Estimate | None:
    """``nn.RNNCell``, ``nn.LSTMCell`` and ``nn.GRUCell``: one step, :func:`recurrent_step_cost`.

    Input ``(N, input_size)`` is ``N`` pairs, unbatched ``(input_size,)`` one; the weights
    are read once. The previous state is counted as read even when omitted (torch uses zeros).
    """
    del output
    if not inputs:
        return None
    shape = getattr(inputs[0], "shape", None)
    if shape is None:
        return None
    pairs = int(shape[0]) if len(shape) == 2 else 1
    return recurrent_step_cost(
        module, pairs, 1, module.input_size, module.hidden_size, 0, module.bias
    )


RULES: tuple[Rule, ...] = (
    Rule((nn.RNN, nn.LSTM, nn.GRU), estimate_recurrent),
    Rule((nn.RNNCell, nn.LSTMCell, nn.GRUCell), estimate_cell),
)
