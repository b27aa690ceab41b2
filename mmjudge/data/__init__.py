"""Datasets: the canonical example type (:mod:`~mmjudge.data.schema`), the loaders registered
by name (:mod:`~mmjudge.data.loader_registry`), reading a dataset (:mod:`~mmjudge.data.loading`),
validation and the line readers the loaders share."""

from mmjudge.data.loading import load_dataset
from mmjudge.data.schema import Example

__all__ = ["Example", "load_dataset"]
