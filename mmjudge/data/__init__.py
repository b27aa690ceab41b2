"""Datasets: the canonical example type, loaders and validation."""

from mmjudge.data.schema import Example, load_dataset

__all__ = ["Example", "load_dataset"]
