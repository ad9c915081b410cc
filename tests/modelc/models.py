"""The models the compiler tests share: seeded, in eval mode, with non-trivial statistics."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import nn
from nn import functional as F


class Lookup(nn.Module):
    """An embedding of 10 ids into 3 floats: a model whose bad input (an id out of range)
    traps."""

    def __init__(self) -> None:
        super().__init__()
        self.table = nn.Embedding(10, 3)

    def forward(self, ids):
        return self.table(ids)


def randomize(model: nn.Module, seed: int = 0) -> nn.Module:
    rng = np.random.default_rng(seed)
    for _, param in model.named_parameters():
        param[...] = rng.standard_normal(param.shape).astype(np.float32) * 0.3
    for name, buf in model.named_buffers():
        if name.endswith("running_mean"):
            buf[...] = rng.standard_normal(buf.shape).astype(np.float32) * 0.1
        elif name.endswith("running_var"):
            buf[...] = rng.uniform(0.5, 2.0, buf.shape).astype(np.float32)
    return model.eval()


class BasicBlock(nn.Module):
    """A ResNet basic block with a strided projection shortcut, then a classifier head."""

    def __init__(self, cin: int = 4, cout: int = 8) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=2, bias=False),
                                      nn.BatchNorm2d(cout))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cout, 5)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)) + self.shortcut(x))
        return self.fc(F.flatten(self.pool(y), 1))


class DepthwiseSeparable(nn.Module):
    """MobileNet's block: depthwise 3x3 + BN + ReLU6, pointwise 1x1 + BN, max pooling."""

    def __init__(self, channels: int = 6, out: int = 10) -> None:
        super().__init__()
        self.dw = nn.Conv2d(channels, channels, 3, padding=1, groups=channels, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.pw = nn.Conv2d(channels, out, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out)

    def forward(self, x):
        y = F.relu6(self.bn1(self.dw(x)))
        return F.max_pool2d(self.bn2(self.pw(y)), 2)


class Decoder(nn.Module):
    """An upsampler: reflect-padded conv, two stride-2 transposed convs (output padding,
    groups) with BN and ReLU between, a 1x1 sigmoid head; (N, 4, H, W) -> (N, 3, 4H, 4W)."""

    def __init__(self, cin: int = 4) -> None:
        super().__init__()
        self.stem = nn.Conv2d(cin, 8, 3, padding=1, padding_mode="reflect")
        self.up1 = nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1)
        self.bn = nn.BatchNorm2d(6)
        self.up2 = nn.ConvTranspose2d(6, 4, 4, stride=2, padding=1, groups=2)
        self.head = nn.Conv2d(4, 3, 1)

    def forward(self, x):
        y = F.relu(self.bn(self.up1(F.relu(self.stem(x)))))
        return F.sigmoid(self.head(F.relu(self.up2(y))))


def transformer_encoder(dim: int = 16, heads: int = 2) -> nn.Module:
    return nn.TransformerEncoderLayer(dim, heads, 2 * dim, batch_first=True,
                                      activation="gelu")


# name: (build, example input shape, {axis: (dim, min, max)} of input0, shapes to run at)
MODEL_CASES: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...],
                             dict[int, tuple[str, int, int]], list[tuple[int, ...]]]] = {
    "resnet_block": (lambda: randomize(BasicBlock()), (2, 4, 8, 8),
                     {0: ("batch", 1, 4)}, [(1, 4, 8, 8), (3, 4, 8, 8)]),
    "decoder": (lambda: randomize(Decoder()), (2, 4, 5, 5), {0: ("batch", 1, 4)},
                [(1, 4, 5, 5), (3, 4, 5, 5)]),
    "depthwise_separable": (lambda: randomize(DepthwiseSeparable()), (2, 6, 8, 8),
                            {0: ("batch", 1, 4)}, [(1, 6, 8, 8), (4, 6, 8, 8)]),
    "transformer_encoder": (lambda: randomize(transformer_encoder()), (2, 5, 16),
                            {0: ("batch", 1, 4), 1: ("seq", 1, 12)},
                            [(1, 3, 16), (4, 12, 16)]),
}
"""The #5 model set, run at two values of each symbolic dim (neither the traced one)."""
