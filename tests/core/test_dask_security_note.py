"""The --dask-scheduler help says what a tcp:// scheduler exposes (docs/robustness.md): it is unauthenticated
and exchanges pickles, so a user reads it before pointing the tool at one."""
from __future__ import annotations

import pytest

from gpuperf_gui.cli import main


def test_diagnose_help_carries_the_dask_security_note(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        main(["diagnose", "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "tcp:// scheduler is unauthenticated" in text and "exchange pickles" in text
    assert "trusted network" in text and "tls://" in text
