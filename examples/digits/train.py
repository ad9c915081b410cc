"""Train the digits classifier once with PyTorch and write ``digits_mlp.npz``.

Run from the repository root (needs ``pip install torch==2.13.0``):
    .venv/bin/python examples/digits/train.py
"""

from __future__ import annotations

import numpy as np
import torch

from model import WEIGHTS, load_split


def main() -> None:
    torch.manual_seed(0)
    x_train, y_train, x_test, y_test = load_split()
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
    xs, ys = torch.from_numpy(x_train), torch.from_numpy(y_train).long()
    for epoch in range(60):
        order = torch.randperm(len(xs))
        for start in range(0, len(xs), 32):
            batch = order[start:start + 32]
            loss = torch.nn.functional.cross_entropy(model(xs[batch]), ys[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        accuracy = (model(torch.from_numpy(x_test)).argmax(1).numpy() == y_test).mean()
    print(f"test accuracy (PyTorch): {accuracy:.4f}")
    np.savez(WEIGHTS, **{k: v.numpy() for k, v in model.state_dict().items()})
    print(f"wrote {WEIGHTS} ({WEIGHTS.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
