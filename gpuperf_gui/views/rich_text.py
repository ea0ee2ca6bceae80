"""Text from a trace shown where Qt may read it as rich text.

Qt shows a tooltip (and a QLabel in its default AutoText format) as HTML whenever the text looks
like HTML (``Qt::mightBeRichText``): a kernel named ``<img src=file:///...>`` showed a local image
in its tooltip. Every string that comes from a file (kernel and op names, lanes, notes) goes
through :func:`plain_tooltip` before ``setToolTip``, and labels that show such strings are set to
``Qt.TextFormat.PlainText``.
"""
from __future__ import annotations

import html

from PySide6.QtGui import Qt


def plain_tooltip(text: str) -> str:
    """A tooltip that shows ``text`` itself. Text Qt would read as markup (its own test,
    ``mightBeRichText``) is escaped, in rich text that keeps its line breaks and does not wrap (as
    a plain tooltip shows); any other text is returned as it is."""
    if not Qt.mightBeRichText(text):
        return text
    return f"<p style='white-space:pre'>{html.escape(text, quote=False)}</p>"
