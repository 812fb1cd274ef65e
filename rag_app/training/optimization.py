"""The optimizer both small trainers use: AdamW, linear warm-up over a tenth of the steps, then
linear decay to 5% of the learning rate."""

from __future__ import annotations

import torch
from torch import nn


def adamw_with_warmup(
    model: nn.Module, learning_rate: float, steps: int, weight_decay: float = 0.01
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler]:
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=weight_decay)
    warmup = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / warmup) * max(0.05, 1 - step / steps)
    )
    return optimizer, schedule


def step(
    loss: torch.Tensor,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    schedule: torch.optim.lr_scheduler.LRScheduler,
) -> float:
    """One update with the gradient clipped at norm 1; returns the loss."""
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    schedule.step()
    return float(loss.detach())
