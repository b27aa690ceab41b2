"""Nothing heavy loads before a sweep's first call: tables, statistics, plotting and local-model
libraries are imported when the summary or the report needs them."""

from __future__ import annotations

import json
import subprocess
import sys

from mmjudge import PROJECT_ROOT

#: Libraries a cell does not need until its last call has been answered.
LATER = ("pandas", "numpy", "scipy", "matplotlib", "sklearn", "torch", "sentence_transformers")

_PROBE = """
import json, sys
import mmjudge.sweep, mmjudge.running.cell, mmjudge.judges.openai, mmjudge.judges.anthropic
import mmjudge.judges.lexical
print(json.dumps(sorted(name for name in sys.modules if name.split(".")[0] in {later})))
"""


def test_the_sweep_and_its_judges_load_no_heavy_library() -> None:
    probe = _PROBE.format(later=set(LATER))
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []
