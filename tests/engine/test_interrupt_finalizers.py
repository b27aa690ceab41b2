"""A Ctrl-C that lands while Python runs a finalizer: sent again rather than lost, with no
"Exception ignored" traceback
(:func:`mmjudge.engine.interrupt.redeliver_interrupts_lost_in_finalizers`)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import gc, signal, sys, time
    from mmjudge.engine.interrupt import redeliver_interrupts_lost_in_finalizers

    if sys.argv[1] == "on":
        redeliver_interrupts_lost_in_finalizers()
        redeliver_interrupts_lost_in_finalizers()  # a second call changes nothing

    class Finalised:
        def __del__(self):
            raise KeyboardInterrupt  # as a SIGINT handler would, had it run here

    class Broken:
        def __del__(self):
            raise ValueError("an ordinary unraisable error")

    try:
        Broken()
        Finalised()
        gc.collect()
        for _ in range(200):  # two seconds of ordinary code for the signal to arrive in
            time.sleep(0.01)
    except KeyboardInterrupt:
        print("stopped in ordinary code")
        sys.exit(0)
    print("ran to the end")
    """
)


def run(switch: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, switch],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.slow  # two Python processes, about 1 s
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_an_interrupt_raised_in_a_finalizer_is_raised_again_in_ordinary_code() -> None:
    on = run("on")
    assert on.stdout.strip() == "stopped in ordinary code", on.stderr
    assert "KeyboardInterrupt" not in on.stderr
    # Other unraisable errors are still reported by the hook in place before.
    assert "ValueError: an ordinary unraisable error" in on.stderr
    # Without it, Python drops the interruption with a traceback and runs on.
    off = run("off")
    assert off.stdout.strip() == "ran to the end"
    assert "Exception ignored in" in off.stderr and "KeyboardInterrupt" in off.stderr
