"""Helpers for comparing ``nn`` against torch (the independent reference)."""

from __future__ import annotations

from typing import Any

import numpy as np

import nn

ATOL = RTOL = 1e-5


def randomize(module: Any, seed: int = 0) -> Any:
    """Give every parameter and float buffer of a torch module non-default values."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in module.parameters():
            param.copy_(torch.randn(param.shape, generator=generator) * 0.5)
        for name, buf in module.named_buffers():
            if buf.is_floating_point():
                values = torch.rand(buf.shape, generator=generator)
                buf.copy_(values + 0.5 if name.endswith("running_var") else values - 0.5)
    return module


def numpy_state(module: Any) -> dict[str, np.ndarray]:
    """A torch module's state dict as numpy arrays."""
    return {key: value.detach().numpy() for key, value in module.state_dict().items()}


def copy_into(ours: nn.Module, theirs: Any) -> nn.Module:
    """Load torch's state dict into ours, strictly, and match its training mode."""
    ours.load_state_dict(numpy_state(theirs))
    return ours.train(theirs.training)


def to_torch(value: Any) -> Any:
    import torch

    return torch.from_numpy(np.ascontiguousarray(value)) if isinstance(value, np.ndarray) \
        else value


def assert_close(ours: Any, theirs: Any, atol: float = ATOL, rtol: float = RTOL) -> None:
    """Outputs (arrays, or tuples of them, or None) equal within float32 tolerance."""
    if theirs is None:
        assert ours is None
        return
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert_close(a, b, atol, rtol)
        return
    expected = theirs.detach().numpy()
    assert np.asarray(ours).shape == expected.shape
    np.testing.assert_allclose(np.asarray(ours), expected, atol=atol, rtol=rtol)
