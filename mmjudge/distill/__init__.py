"""Distilling a judge: train a small local cross-encoder on grades a team already has (a
judge's, people's or a label file's) and write a folder the ``distilled`` judge runs from.

:func:`distill` is the library's entry (``mmjudge distill`` is a shell over it); the pairs and
their split are in :mod:`mmjudge.distill.pairs`, the training loop in
:mod:`mmjudge.distill.train`, and the folder's format in
:mod:`mmjudge.judges.distilled_folder`. torch is imported only when training starts.
"""

from __future__ import annotations

from mmjudge.distill.distil import HELD_OUT_SHARE, Distilled, distill
from mmjudge.distill.train import Trained, TrainSettings

__all__ = ["HELD_OUT_SHARE", "Distilled", "TrainSettings", "Trained", "distill"]
