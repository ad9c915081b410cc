"""``LSTM``, ``GRU`` and ``RNN``: torch's constructors, parameter names and call conventions.

Each layer and direction projects the inputs of all steps with one ``linear`` and runs one
``nn.functional`` recurrence (``lstm``, ``gru`` or ``rnn``) over them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import functional as F
from .. import init
from ..module import Module, Parameter

__all__ = ["GRU", "LSTM", "RNN"]

GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


class RNNBase(Module):
    """Stacked, optionally bidirectional recurrent layers (torch's ``nn.RNNBase``).

    Raises:
        ValueError: an unknown mode, a ``proj_size`` (not supported), or a dropout outside
            [0, 1].
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if mode not in GATES:
            raise ValueError(f"unknown recurrent mode {mode!r}; expected one of {list(GATES)}")
        if proj_size:
            raise ValueError(f"proj_size={proj_size} is not supported; expected 0")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"dropout should be a number in range [0, 1], got {dropout}")
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = 0
        directions = 2 if bidirectional else 1
        gate_size = GATES[mode] * hidden_size
        float_type = dtype or np.float32
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else hidden_size * directions
            for suffix in ("", "_reverse")[:directions]:
                shapes: dict[str, tuple[int, ...]] = {"weight_ih": (gate_size, layer_input),
                          "weight_hh": (gate_size, hidden_size)}
                if bias:
                    shapes |= {"bias_ih": (gate_size,), "bias_hh": (gate_size,)}
                for name, shape in shapes.items():
                    setattr(self, f"{name}_l{layer}{suffix}",
                            Parameter(np.empty(shape, float_type)))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """torch's default: every parameter from U(±1/sqrt(hidden_size))."""
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for param in self.parameters():
            init.uniform_(param, -bound, bound)

    def _direction(self, x: Any, layer: int, suffix: str, states: list[Any]) -> list[Any]:
        """One layer in one direction over x (T, B, in): [y, h_n(, c_n)]."""
        def param(name: str) -> Any:
            return getattr(self, f"{name}_l{layer}{suffix}", None)

        w_ih, w_hh, b_ih, b_hh = (param(n) for n in ("weight_ih", "weight_hh", "bias_ih",
                                                      "bias_hh"))
        reverse = bool(suffix)
        if self.mode == "GRU":
            return list(F.gru(F.linear(x, w_ih, b_ih), w_hh, b_hh, states[0],
                              reverse=reverse))
        bias = None if b_ih is None else np.asarray(b_ih) + np.asarray(b_hh)
        gates = F.linear(x, w_ih, bias)
        if self.mode == "LSTM":
            return list(F.lstm(gates, w_hh, states[0], states[1], reverse=reverse))
        return list(F.rnn(gates, w_hh, states[0], reverse=reverse,
                          nonlinearity=self.mode.removeprefix("RNN_").lower()))

    def forward(self, input: Any, hx: Any = None) -> tuple[Any, Any]:
        """``input`` (T, B, in), (B, T, in) with ``batch_first``, or unbatched (T, in);
        ``hx`` the initial state(s) (layers * directions, B, H) (a pair for LSTM) or None
        for zeros. Returns ``(output, h_n)`` (``(output, (h_n, c_n))`` for LSTM).

        Raises:
            ValueError: ``input`` of the wrong rank or feature size.
        """
        if len(input.shape) not in (2, 3) or input.shape[-1] != self.input_size:
            raise ValueError(f"{type(self).__name__}: expected input (T, B, {self.input_size})"
                             f" or (T, {self.input_size}), got shape {list(input.shape)}")
        batched = len(input.shape) == 3
        x = input if not batched else (F.transpose(input, 0, 1) if self.batch_first
                                       else input)
        if not batched:
            x = F.unsqueeze(x, 1)
        count = 2 if self.mode == "LSTM" else 1
        given = [] if hx is None else (list(hx) if self.mode == "LSTM" else [hx])
        if not batched:
            given = [F.unsqueeze(s, 1) for s in given]
        finals: list[list[Any]] = [[] for _ in range(count)]
        directions = ("", "_reverse") if self.bidirectional else ("",)
        for layer in range(self.num_layers):
            outputs = []
            for d, suffix in enumerate(directions):
                k = layer * len(directions) + d
                states = ([F.squeeze(F.slice(s, 0, k, k + 1), 0) for s in given] if given
                          else [None] * count)
                y, *final = self._direction(x, layer, suffix, states)
                outputs.append(y)
                for store, state in zip(finals, final):
                    store.append(F.unsqueeze(state, 0))
            x = outputs[0] if len(outputs) == 1 else F.concat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        stacked = [f[0] if len(f) == 1 else F.concat(f, 0) for f in finals]
        if not batched:
            x = F.squeeze(x, 1)
            stacked = [F.squeeze(s, 1) for s in stacked]
        elif self.batch_first:
            x = F.transpose(x, 0, 1)
        return x, (tuple(stacked) if self.mode == "LSTM" else stacked[0])

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        defaults = {"num_layers": 1, "bias": True, "batch_first": False, "dropout": 0.0,
                    "bidirectional": False}
        for name, default in defaults.items():
            if getattr(self, name) != default:
                text += f", {name}={getattr(self, name)}"
        return text


class LSTM(RNNBase):
    """Long short-term memory, as ``torch.nn.LSTM``.

    >>> out, (h, c) = LSTM(3, 4)(np.ones((5, 2, 3), np.float32))
    >>> out.shape, h.shape, c.shape
    ((5, 2, 4), (1, 2, 4), (1, 2, 4))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """Gated recurrent unit, as ``torch.nn.GRU``.

    >>> out, h = GRU(3, 4, bidirectional=True)(np.ones((5, 2, 3), np.float32))
    >>> out.shape, h.shape
    ((5, 2, 8), (2, 2, 4))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("GRU", *args, **kwargs)


class RNN(RNNBase):
    """Elman RNN with ``nonlinearity`` ``'tanh'`` or ``'relu'``, as ``torch.nn.RNN``.

    Raises:
        ValueError: an unknown ``nonlinearity``.

    >>> out, h = RNN(3, 4, num_layers=2)(np.ones((5, 2, 3), np.float32))
    >>> out.shape, h.shape
    ((5, 2, 4), (2, 2, 4))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", *args: Any, **kwargs: Any) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"unknown nonlinearity {nonlinearity!r}; expected 'tanh' or "
                             "'relu'")
        super().__init__(f"RNN_{nonlinearity.upper()}", input_size, hidden_size, num_layers,
                         *args, **kwargs)
        self.nonlinearity = nonlinearity
