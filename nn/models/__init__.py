"""Whole models written against ``nn``, loading their published checkpoints unchanged."""

from .bert import BertConfig, BertModel

__all__ = ["BertConfig", "BertModel"]
