"""The CNNs, the MLP and the LSTM that ``peers.py`` measures, written once against either library.

``nn`` mirrors ``torch.nn`` (class names, constructor arguments, parameter and buffer names),
so each architecture is a function of the library it is built from: ``resnet18(nn)`` and
``resnet18(torch.nn)`` have the same ``state_dict`` keys, and ``transfer`` copies torch's
random weights into ours. The architectures follow torchvision's ResNet-18 and
MobileNetV2 (same layers, strides and key names), written here because torchvision is not
a dependency.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

# (expansion t, output channels c, repeats n, first stride s): torchvision's MobileNetV2.
MOBILENET_V2_SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                         (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


def mlp(lib: ModuleType) -> Any:
    """784 -> 1024 -> 1024 -> 10 with ReLU: an MNIST-sized classifier."""
    return lib.Sequential(lib.Linear(784, 1024), lib.ReLU(), lib.Linear(1024, 1024),
                          lib.ReLU(), lib.Linear(1024, 10))


def lstm(lib: ModuleType, inputs: int = 64, hidden: int = 128) -> Any:
    """One LSTM layer (64 features in, hidden 128) returning the output of every step."""

    base: Any = lib.Module

    class Recurrent(base):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = lib.LSTM(inputs, hidden)

        def forward(self, x: Any) -> Any:
            return self.lstm(x)[0]  # (T, B, hidden)

    return Recurrent()


def resnet18(lib: ModuleType, num_classes: int = 1000) -> Any:
    """ResNet-18: conv7x7/2, bn, relu, maxpool, four stages of two BasicBlocks
    (64, 128, 256, 512 channels), global average pool, fc."""

    base: Any = lib.Module  # nn.Module or torch.nn.Module

    class BasicBlock(base):
        def __init__(self, inplanes: int, planes: int, stride: int) -> None:
            super().__init__()
            self.conv1 = lib.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
            self.bn1 = lib.BatchNorm2d(planes)
            self.relu = lib.ReLU()
            self.conv2 = lib.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = lib.BatchNorm2d(planes)
            self.downsample = None
            if stride != 1 or inplanes != planes:
                self.downsample = lib.Sequential(
                    lib.Conv2d(inplanes, planes, 1, stride, bias=False), lib.BatchNorm2d(planes))

        def forward(self, x: Any) -> Any:
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(out)) + identity)

    class ResNet(base):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = lib.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = lib.BatchNorm2d(64)
            self.relu = lib.ReLU()
            self.maxpool = lib.MaxPool2d(3, 2, 1)
            inplanes = 64
            for index, planes in enumerate((64, 128, 256, 512), start=1):
                stride = 1 if index == 1 else 2
                setattr(self, f"layer{index}", lib.Sequential(
                    BasicBlock(inplanes, planes, stride), BasicBlock(planes, planes, 1)))
                inplanes = planes
            self.avgpool = lib.AdaptiveAvgPool2d(1)
            self.flatten = lib.Flatten(1)
            self.fc = lib.Linear(512, num_classes)

        def forward(self, x: Any) -> Any:
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))  # (B, 64, 56, 56)
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))  # (B, 512, 7, 7)
            return self.fc(self.flatten(self.avgpool(x)))  # (B, num_classes)

    return ResNet()


def mobilenet_v2(lib: ModuleType, num_classes: int = 1000) -> Any:
    """MobileNetV2 (width 1.0): inverted residual blocks (1x1 expand, 3x3 depthwise, 1x1
    linear projection) with ReLU6, a 1280-channel head, global average pool, classifier."""

    def conv_bn(inp: int, oup: int, kernel: int, stride: int, groups: int = 1) -> Any:
        return lib.Sequential(
            lib.Conv2d(inp, oup, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
            lib.BatchNorm2d(oup), lib.ReLU6())

    base: Any = lib.Module

    class InvertedResidual(base):
        def __init__(self, inp: int, oup: int, stride: int, expand: int) -> None:
            super().__init__()
            hidden = inp * expand
            self.use_res_connect = stride == 1 and inp == oup
            layers = [conv_bn(inp, hidden, 1, 1)] if expand != 1 else []
            layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden),
                       lib.Conv2d(hidden, oup, 1, 1, 0, bias=False), lib.BatchNorm2d(oup)]
            self.conv = lib.Sequential(*layers)

        def forward(self, x: Any) -> Any:
            return x + self.conv(x) if self.use_res_connect else self.conv(x)

    class MobileNetV2(base):
        def __init__(self) -> None:
            super().__init__()
            features, inp = [conv_bn(3, 32, 3, 2)], 32
            for expand, channels, repeats, stride in MOBILENET_V2_SETTINGS:
                for i in range(repeats):
                    features.append(InvertedResidual(inp, channels, stride if i == 0 else 1,
                                                     expand))
                    inp = channels
            features.append(conv_bn(inp, 1280, 1, 1))
            self.features = lib.Sequential(*features)
            self.pool = lib.AdaptiveAvgPool2d(1)
            self.flatten = lib.Flatten(1)
            self.classifier = lib.Sequential(lib.Dropout(0.2), lib.Linear(1280, num_classes))

        def forward(self, x: Any) -> Any:
            x = self.features(x)  # (B, 1280, 7, 7)
            return self.classifier(self.flatten(self.pool(x)))  # (B, num_classes)

    return MobileNetV2()


def randomize_batchnorm(model: Any, seed: int = 0) -> None:
    """Give a torch model's BatchNorm layers non-trivial statistics and affine parameters,
    so folding them into the convolutions is actually exercised."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                bn: Any = module  # its running stats are typed Optional
                n = bn.num_features
                bn.running_mean.copy_(0.1 * torch.randn(n, generator=generator))
                bn.running_var.copy_(0.5 + torch.rand(n, generator=generator))
                bn.weight.copy_(0.5 + torch.rand(n, generator=generator))
                bn.bias.copy_(0.1 * torch.randn(n, generator=generator))


def transfer(torch_model: Any, ours: Any) -> Any:
    """Load ``torch_model``'s weights into ``ours`` (same keys); return ``ours`` in eval mode.

    Raises:
        RuntimeError: the key sets or shapes differ (as ``load_state_dict`` reports it).
    """
    # NOTE: np.array, not np.ascontiguousarray, which turns 0-d num_batches_tracked into 1-d.
    state = {key: np.array(value.detach().cpu().numpy())
             for key, value in torch_model.state_dict().items()}
    ours.load_state_dict(state)
    return ours.eval()
