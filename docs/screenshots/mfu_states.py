"""The MFU tab's states after "Send to MFU", from the real window (offscreen), for the README.

    QT_QPA_PLATFORM=offscreen .venv/bin/python docs/screenshots/mfu_states.py TRACE OUT_FOLDER

Writes mfu_trace_asks.png (the trace's figures marked, the model and tokens asked for),
mfu_trace.png (the traced run's model and tokens entered: a result) and mfu_input_error.png
(tokens too large for the traced step: an explained input error, no MFU). The default state,
a preset's example run, is `gpuperf-gui --tab mfu --screenshot docs/screenshots/mfu.png`.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("XDG_CONFIG_HOME", tempfile.mkdtemp(prefix="gpuperf-shots-"))


def main(trace: str, out: str) -> int:
    from PySide6.QtWidgets import QApplication

    from gpuperf_gui.core.mfu_inputs import load_trace_run
    from gpuperf_gui.views.context import AppContext
    from gpuperf_gui.views.main_window import WINDOW_SIZE, MainWindow

    app = QApplication.instance() or QApplication([])
    window = MainWindow(AppContext(device_id="h200"))
    window.device_combo.setCurrentIndex(window.device_combo.findData("h200"))
    window.resize(WINDOW_SIZE)
    window.show()
    tab = window.mfu_tab
    tab.apply_trace_figures(load_trace_run(trace).figures)  # what Send to MFU emits
    window.show_tab("mfu")

    def shot(name: str) -> None:
        app.processEvents()
        window.grab().save(str(Path(out) / name), "PNG")

    shot("mfu_trace_asks.png")
    # healthy_gpt_small.meta.json: N 247,259,136 without embeddings, 6 layers, 12 heads, d 1536, seq 1024
    tab.fields["n_params"].setText("247259136")
    tab._on_n_edited("")
    for key, text in (("layers", "6"), ("heads", "12"), ("d_model", "1536"), ("seq_len", "1024"),
                      ("tokens_per_step", "16384")):
        tab.fields[key].setText(text)
    shot("mfu_trace.png")
    tab.fields["tokens_per_step"].setText("163840")  # ten times the traced batch
    shot("mfu_input_error.png")
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
