"""Structured configs: one dataclass per config group, registered in Hydra's ConfigStore.

The primary config is typed by :class:`SweepConfig`, so a misspelt key in any group file or on
the command line fails at compose time, and an unknown group option lists the valid choices.
Values are checked by each dataclass's ``validate()``; :meth:`SweepConfig.validate` runs them
all once, where the typed config is built, before anything runs.

The groups' dataclasses live in the modules named after what they describe (:mod:`.judge`,
:mod:`.dataset`, :mod:`.request`, :mod:`.run`); this module assembles them and is where every
caller imports them from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from mmjudge.config.dataset import (
    DEFAULT_MAX_TEXT_TOKENS,
    GRADE_RULES,
    DatasetConfig,
    ScaleConfig,
    TestBanksConfig,
)
from mmjudge.config.model import ModalityConfig, ModelConfig
from mmjudge.config.race import RaceConfig
from mmjudge.config.request import (
    N_WORDINGS,
    PERTURB_KINDS,
    PerturbConfig,
    PromptConfig,
)
from mmjudge.config.run import PathsConfig, PricingConfig, ReportConfig, RunnerConfig
from mmjudge.errors import ConfigError
from mmjudge.images.settings import ImageSettings

__all__ = [
    "DEFAULT_MAX_TEXT_TOKENS",
    "GRADE_RULES",
    "N_WORDINGS",
    "PERTURB_KINDS",
    "DatasetConfig",
    "ModalityConfig",
    "ModelConfig",
    "PathsConfig",
    "PerturbConfig",
    "PricingConfig",
    "PromptConfig",
    "ReportConfig",
    "RunnerConfig",
    "ScaleConfig",
    "SweepConfig",
    "TestBanksConfig",
    "register_configs",
]


@dataclass
class SweepConfig:
    """The primary config: one cell of a sweep."""

    model: ModelConfig = MISSING
    modality: ModalityConfig = MISSING
    dataset: DatasetConfig = MISSING
    prompt: PromptConfig = MISSING
    pricing: PricingConfig = MISSING
    runner: RunnerConfig = MISSING
    paths: PathsConfig = MISSING
    report: ReportConfig = MISSING
    images: ImageSettings = field(default_factory=ImageSettings)
    """How pictures are prepared; checked when the node becomes an :class:`ImageSettings`."""
    perturb: PerturbConfig = field(default_factory=PerturbConfig)
    """What is done to each result before it is judged (``none``: nothing)."""
    race: RaceConfig = field(default_factory=RaceConfig)
    """How ``mmjudge race`` runs a grid in rounds (a cell on its own ignores it)."""
    seed: int = 0
    """Seed for anything random (query samples, bootstrap, tie-breaks, backoff jitter)."""

    def validate(self) -> None:
        """Check every value that composing the config cannot check (ranges, choices)."""
        self.model.validate()
        self.modality.validate()
        self.dataset.validate()
        self.prompt.validate()
        self.pricing.validate()
        self.runner.validate()
        self.paths.validate()
        self.report.validate()
        try:
            self.images.validate()  # made checked; checked again in case it was changed since
        except ValueError as error:
            raise ConfigError(str(error)) from None
        self.perturb.validate()
        self.race.validate()
        if self.prompt.passages_per_call > 1 and self.runner.samples > 1:
            raise ConfigError(
                f"prompt.passages_per_call={self.prompt.passages_per_call} with "
                f"runner.samples={self.runner.samples}: repeats are asked one result at a "
                "time; set one of them to 1"
            )
        if self.perturb.kind == "inject_image" and self.images.encoding == "url":
            raise ConfigError(
                "perturb=inject_image draws into the pictures it sends, which "
                "images.encoding=url does not; use images.encoding=data_url or base64"
            )


def register_configs() -> None:
    """Register the schema of the primary config; group files are validated against it."""
    store = ConfigStore.instance()
    store.store(name="sweep_schema", node=SweepConfig)
