"""The convolutional architectures of ``torch_archs``: ConvNeXt blocks, an EfficientNet MBConv
with squeeze-excite, a YOLOv8-style detector (C2f, SPPF, nearest upsampling, DFL head) and a
small U-Net with a sinusoidal time embedding, each spelled as its reference implementation
spells it."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F


class ConvNeXtBlock(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.dwconv = nn.Conv2d(d, d, 7, padding=3, groups=d)
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.pwconv1, self.pwconv2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.gamma = nn.Parameter(torch.rand(d) * 0.5 + 0.1)

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)  # (N, H, W, C)
        y = self.gamma * self.pwconv2(F.gelu(self.pwconv1(self.norm(y))))
        return x + y.permute(0, 3, 1, 2)  # (N, C, H, W)


class ConvNeXt(nn.Module):
    """A 4x4/4 patchify stem, two blocks, global average pool, LayerNorm, a linear head."""

    def __init__(self, d: int = 16, classes: int = 10):
        super().__init__()
        self.stem = nn.Conv2d(3, d, 4, stride=4)
        self.blocks = nn.Sequential(ConvNeXtBlock(d), ConvNeXtBlock(d))
        self.norm, self.head = nn.LayerNorm(d, eps=1e-6), nn.Linear(d, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.head(self.norm(x.mean([-2, -1])))


def _conv_bn_silu(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.SiLU())


class MBConv(nn.Module):
    """Expand 1x1, depthwise kxk, squeeze-excite, project 1x1, residual when shapes match."""

    def __init__(self, cin: int, cout: int, k: int, stride: int, expand: int = 4):
        super().__init__()
        hidden, squeezed = cin * expand, max(1, cin // 4)
        self.expand = _conv_bn_silu(cin, hidden, 1)
        self.depthwise = _conv_bn_silu(hidden, hidden, k, stride, groups=hidden)
        self.se_reduce = nn.Conv2d(hidden, squeezed, 1)
        self.se_expand = nn.Conv2d(squeezed, hidden, 1)
        self.project = nn.Sequential(nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.depthwise(self.expand(x))
        s = F.adaptive_avg_pool2d(y, 1)
        y = y * torch.sigmoid(self.se_expand(F.silu(self.se_reduce(s))))
        y = self.project(y)
        return x + y if self.residual else y


class EfficientNet(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.stem = _conv_bn_silu(3, 16, 3, 2)
        self.blocks = nn.Sequential(MBConv(16, 24, 5, 2), MBConv(24, 24, 3, 1))
        self.head = _conv_bn_silu(24, 64, 1)
        self.classifier = nn.Linear(64, classes)

    def forward(self, x):
        x = self.head(self.blocks(self.stem(x)))
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class Bottleneck(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.cv1, self.cv2 = _conv_bn_silu(c, c, 3), _conv_bn_silu(c, c, 3)

    def forward(self, x):
        return x + self.cv2(self.cv1(x))


class C2f(nn.Module):
    """Split in two by ``chunk``, run bottlenecks on the second half keeping every output,
    concatenate them all."""

    def __init__(self, cin: int, cout: int, n: int = 1):
        super().__init__()
        self.c = cout // 2
        self.cv1 = _conv_bn_silu(cin, 2 * self.c, 1)
        self.cv2 = _conv_bn_silu((2 + n) * self.c, cout, 1)
        self.m = nn.ModuleList(Bottleneck(self.c) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.cv1, self.cv2 = _conv_bn_silu(cin, cin // 2, 1), _conv_bn_silu(cin * 2, cout, 1)
        self.m = nn.MaxPool2d(5, 1, 2)

    def forward(self, x):
        y = [self.cv1(x)]
        y.extend(self.m(y[-1]) for _ in range(3))
        return self.cv2(torch.cat(y, 1))


class YOLOv8(nn.Module):
    """Backbone with C2f and SPPF, a neck with nearest upsampling and concats, and the
    decoupled detect head: DFL (softmax over 16 bins, expectation by a fixed 1x1 conv),
    anchors from ``arange``, boxes as xywh scaled by the stride, sigmoid class scores."""

    def __init__(self, classes: int = 3, reg_max: int = 16):
        super().__init__()
        self.reg_max, self.classes = reg_max, classes
        self.b1 = nn.Sequential(_conv_bn_silu(3, 8, 3, 2), _conv_bn_silu(8, 16, 3, 2), C2f(16, 16))
        self.b2 = nn.Sequential(_conv_bn_silu(16, 32, 3, 2), C2f(32, 32), SPPF(32, 32))
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.neck = C2f(48, 16)
        self.down = _conv_bn_silu(16, 16, 3, 2)
        self.neck2 = C2f(48, 32)
        self.box = nn.ModuleList(
            nn.Sequential(_conv_bn_silu(c, 16, 3), nn.Conv2d(16, 4 * reg_max, 1)) for c in (16, 32))
        self.cls = nn.ModuleList(
            nn.Sequential(_conv_bn_silu(c, 16, 3), nn.Conv2d(16, classes, 1)) for c in (16, 32))
        self.dfl = nn.Conv2d(reg_max, 1, 1, bias=False).requires_grad_(False)
        self.dfl.weight.data[:] = torch.arange(reg_max, dtype=torch.float32).view(1, reg_max, 1, 1)

    def forward(self, x):
        p3 = self.b1(x)
        p4 = self.b2(p3)
        n3 = self.neck(torch.cat([self.up(p4), p3], 1))
        n4 = self.neck2(torch.cat([self.down(n3), p4], 1))
        outs, anchors, strides = [], [], []
        for i, (feat, stride) in enumerate(((n3, 4.0), (n4, 8.0))):
            b, _, h, w = feat.shape
            outs.append(torch.cat([self.box[i](feat), self.cls[i](feat)], 1).view(b, -1, h * w))
            sy, sx = torch.meshgrid(torch.arange(h, dtype=feat.dtype) + 0.5,
                                    torch.arange(w, dtype=feat.dtype) + 0.5, indexing="ij")
            anchors.append(torch.stack((sx, sy), -1).view(-1, 2))
            strides.append(torch.full((h * w, 1), stride, dtype=feat.dtype))
        out = torch.cat(outs, 2)  # (B, 4 * reg_max + classes, A)
        anchor_points, stride_tensor = torch.cat(anchors).T, torch.cat(strides).T  # (2, A), (1, A)
        box, cls = out.split((4 * self.reg_max, self.classes), 1)
        b, _, a = box.shape
        dist = self.dfl(box.view(b, 4, self.reg_max, a).transpose(2, 1).softmax(1)).view(b, 4, a)
        lt, rb = dist.chunk(2, 1)
        x1y1, x2y2 = anchor_points - lt, anchor_points + rb
        dbox = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * stride_tensor
        return torch.cat((dbox, cls.sigmoid()), 1)


def _timestep_embedding(t, dim: int):
    """The diffusion models' sinusoidal embedding of a float time step."""
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
    args = t[:, None].float() * freqs[None]  # (B, half)
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class ResBlock(nn.Module):
    def __init__(self, cin: int, cout: int, tdim: int):
        super().__init__()
        self.norm1, self.norm2 = nn.GroupNorm(4, cin), nn.GroupNorm(4, cout)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.temb = nn.Linear(tdim, cout)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb(F.silu(temb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return self.skip(x) + h


class UNet(nn.Module):
    """Two resolutions: ResBlocks with GroupNorm, SiLU and a time embedding, a stride-2
    down conv, a ConvTranspose2d up, and skip concatenations."""

    def __init__(self, c: int = 8, tdim: int = 16):
        super().__init__()
        self.tdim = tdim
        self.time_mlp = nn.Sequential(nn.Linear(tdim, tdim), nn.SiLU(), nn.Linear(tdim, tdim))
        self.conv_in = nn.Conv2d(4, c, 3, padding=1)
        self.down1 = ResBlock(c, c, tdim)
        self.downsample = nn.Conv2d(c, c, 3, stride=2, padding=1)
        self.down2 = ResBlock(c, 2 * c, tdim)
        self.mid = ResBlock(2 * c, 2 * c, tdim)
        self.upsample = nn.ConvTranspose2d(2 * c, 2 * c, 4, stride=2, padding=1)
        self.up1 = ResBlock(3 * c, c, tdim)
        self.up2 = ResBlock(2 * c, c, tdim)
        self.norm_out, self.conv_out = nn.GroupNorm(4, c), nn.Conv2d(c, 4, 3, padding=1)

    def forward(self, x, t):
        temb = self.time_mlp(_timestep_embedding(t, self.tdim))
        h0 = self.conv_in(x)
        h1 = self.down1(h0, temb)
        h2 = self.mid(self.down2(self.downsample(h1), temb), temb)
        h = self.up1(torch.cat([self.upsample(h2), h1], 1), temb)
        h = self.up2(torch.cat([h, h0], 1), temb)
        return self.conv_out(F.silu(self.norm_out(h)))
