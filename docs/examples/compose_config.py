"""Compose a cell's config from the same overrides the command line takes."""

from pathlib import Path

import mmjudge

cfg = mmjudge.compose(["model=lexical", "modality=text", "dataset.limit=20"])
print(f"{cfg.model.name} on {cfg.dataset.name} ({cfg.modality.name}), {cfg.dataset.limit} items")

# A misspelt setting fails in one line, naming the valid ones.
try:
    mmjudge.compose(["runner.concurency=4"])
except mmjudge.ConfigError as error:
    print(f"refused: {error}")

# A folder of your own configs extends the shipped groups: model/strict_lexical.yaml here
# is chosen with model=strict_lexical, next to the shipped judges.
mine = Path("my_configs")
(mine / "model").mkdir(parents=True, exist_ok=True)
(mine / "model" / "strict_lexical.yaml").write_text(
    "defaults:\n  - lexical\n  - _self_\n"
    "name: strict_lexical\noptions:\n  score_span: [0.5, 0.9]\n",
    encoding="utf-8",
)
own = mmjudge.compose(["model=strict_lexical"], config_dir=mine)
print(f"{own.model.name}: score span {list(own.model.options['score_span'])}")
