"""Help ▸ Keyboard shortcuts (also on ``?``, as Perfetto does) and Help ▸ How to read a trace.

The shortcut sheet is made from :data:`SHORTCUTS`, the one list of the app's keys and mouse gestures;
a test checks that the keys the timeline and the presentation handle are in it.
"""
from __future__ import annotations

import html

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from gpuperf_gui.core.trace.diagnosis.signatures import REGISTRY
from gpuperf_gui.views.trace.style import SIGNATURE_COLOURS

SHORTCUTS: tuple[tuple[str, str, str], ...] = (
    # (where, keys, what)
    ("Anywhere", "Ctrl+O", "open a trace (a file; File ▸ Open trace folder for one file per rank)"),
    ("Anywhere", "F5", "presentation mode"),
    ("Anywhere", "?", "this sheet"),
    ("Anywhere", "Ctrl+Q", "quit"),
    ("Trace timeline", "W / S", "zoom in / out about the time under the mouse (the centre when the mouse is elsewhere)"),
    ("Trace timeline", "A / D", "pan left / right by 15 % of the view"),
    ("Trace timeline", "wheel", "zoom about the mouse"),
    ("Trace timeline", "Shift+wheel", "scroll the lanes up and down"),
    ("Trace timeline", "drag", "pan"),
    ("Trace timeline", "right-drag or Shift+drag", "select a time range (its figures in the side panel)"),
    ("Trace timeline", "click", "select an event: its details and an arrow to its launch or kernel"),
    ("Trace timeline", "double-click a CPU lane", "fold its rows into one (again: unfold)"),
    ("Trace timeline", "click a rank header", "collapse or expand the rank"),
    ("Trace tab", "F", "zoom to the selected event and its partners"),
    ("Trace tab", "Esc", "clear the selection and the selected range"),
    ("Presentation", "→ / PgDown / Space", "next (on the gap page: the next cause first)"),
    ("Presentation", "← / PgUp", "back"),
    ("Presentation", "Esc", "close"),
)

GAP_SIGNATURES = ("launch_bound", "data_starved", "host_bound", "host_sync_bound", "comm_bound", "straggler",
                  "pipeline_bubble")
"""The signatures the page teaches by their gaps, in its order (labels, hints and colours: the registry's)."""

_HOW_TO_READ_A_TRACE = """
<h2>How to read a trace</h2>
<p>A torch.profiler trace has two sides: the <b>host</b> (CPU threads running Python and PyTorch ops,
which <i>launch</i> kernels) and the <b>device</b> (GPU streams running those kernels). gpuperf draws
one lane per thread and per stream, each rank under its own header, the steps
(<code>ProfilerStep#N</code>) shaded behind them.</p>
<ol>
<li><b>Find the steady state.</b> The first step or two are warm-up (allocations, autotuning,
compilation): gpuperf leaves them out of the figures and says which steps it used.</li>
<li><b>Look at the GPU compute lane first.</b> Red marks the time the compute stream was idle. The
question is always: what was the GPU waiting for?</li>
<li><b>Read the gap against the host lane above it.</b> What the lanes look like, by the signature
the diagnosis names (the colour is its colour in the window):
<ul>
{gap_signatures}
</ul></li>
<li><b>A busy GPU is not the end.</b> {memory_bound}: the Overview's % of roof and the Roofline tab say how
far each kernel is from its ceiling.</li>
<li><b>Click an event</b> to see its details and the arrow from its launch to its kernel; the op
table lists where the time went by operator; the diagnosis names the signature, its evidence and
what to try first.</li>
</ol>
<p>Profiling slows the host: step times in a trace are longer than without the profiler. Compare
runs with unprofiled timings where you have them (<code>gpuperf profile</code> records both).</p>
"""


def _signature_item(name: str) -> str:
    sig = REGISTRY[name]
    return (f"<span style='color:{SIGNATURE_COLOURS[name]}'>■</span> <b>{html.escape(sig.label)}</b>: "
            f"{html.escape(sig.hint)}")


def how_to_read_a_trace_html() -> str:
    """Help ▸ How to read a trace, with each signature's label, hint and colour from the registry."""
    items = "\n".join(f"<li>{_signature_item(n)}.</li>" for n in GAP_SIGNATURES)
    return _HOW_TO_READ_A_TRACE.format(gap_signatures=items, memory_bound=_signature_item("memory_bound"))


HOW_TO_READ_A_TRACE = how_to_read_a_trace_html()


def shortcuts_html() -> str:
    rows = []
    last_where = None
    for where, keys, what in SHORTCUTS:
        if where != last_where:
            rows.append(f"<tr><th colspan=2 align=left><br>{html.escape(where)}</th></tr>")
            last_where = where
        rows.append(f"<tr><td><b>{html.escape(keys)}</b>&nbsp;&nbsp;</td><td>{html.escape(what)}</td></tr>")
    return f"<h2>Keyboard shortcuts</h2><table>{''.join(rows)}</table>"


def show_page(parent: QWidget, title: str, page_html: str) -> QDialog:
    """A non-modal page with the text and a Close button."""
    dialog = QDialog(parent)
    dialog.setWindowTitle(title)
    browser = QTextBrowser(dialog)
    browser.setHtml(page_html)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, dialog)
    buttons.rejected.connect(dialog.close)
    layout = QVBoxLayout(dialog)
    layout.addWidget(browser)
    layout.addWidget(buttons)
    dialog.resize(640, 600)
    dialog.show()
    return dialog
