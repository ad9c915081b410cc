"""layer_norm: normalise over the trailing ``normalized_shape`` axes, then scale and shift."""

from ._families import SameShape


class LayerNorm(SameShape):
    name = "layer_norm"


OP = LayerNorm()
