"""Every family the tabs use resolves to the vendored fonts under test (tests/font_pinning.py), also
where the machine's fontconfig offers other faces first."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from font_pinning import FONTS, MONO, SANS, VENDORED_FAMILIES, pin_fonts

# What Qt resolves for the families a tab can ask for: the default widget font, the fixed font,
# rich text's <code>/<pre>, bold and italic of both.
PROBE = r"""
import json, sys
from PySide6.QtGui import QFont, QFontDatabase, QFontInfo, QTextDocument
from PySide6.QtWidgets import QApplication
app = QApplication([])
fonts = {"default": app.font(), "fixed": QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont),
         "title": QFontDatabase.systemFont(QFontDatabase.SystemFont.TitleFont)}
for name in ("monospace", "Courier New", "sans-serif", "serif", "Helvetica", "no such family"):
    fonts[name] = QFont(name)
doc = QTextDocument()
doc.setHtml("<code>x</code>")
fonts["<code>"] = doc.begin().begin().fragment().charFormat().font()
out = {}
for key, font in list(fonts.items()):
    for style, (bold, italic) in {"": (False, False), " bold": (True, False), " italic": (False, True)}.items():
        font = QFont(font)
        font.setBold(bold)
        font.setItalic(italic)
        info = QFontInfo(font)
        out[key + style] = [info.family(), info.bold(), info.italic()]
print(json.dumps(out))
"""

# A machine that prefers other faces: its fontconfig maps monospace to the proportional DejaVu Sans
# and sans-serif to the fixed-pitch one (the vendored files, so the test needs no system fonts).
HOSTILE = f"""<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<fontconfig>
  <dir>{FONTS}</dir>
  <alias binding="strong"><family>monospace</family><prefer><family>{SANS}</family></prefer></alias>
  <alias binding="strong"><family>Sans Serif</family><prefer><family>{MONO}</family></prefer></alias>
  <alias binding="strong"><family>sans-serif</family><prefer><family>{MONO}</family></prefer></alias>
</fontconfig>
"""


def _probe(env: dict[str, str]) -> dict[str, list]:
    env = {**env, "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_vendored_fonts_win_over_a_fontconfig_that_prefers_others(tmp_path: Path) -> None:
    hostile = tmp_path / "hostile.conf"
    hostile.write_text(HOSTILE, encoding="utf-8")
    machine = {k: v for k, v in os.environ.items() if not k.startswith("FONTCONFIG")}
    machine["FONTCONFIG_FILE"] = str(hostile)
    # the hostile config really is: without the pinning, monospace is not monospaced
    unpinned = _probe(machine)
    assert unpinned["monospace"][0] == SANS and unpinned["default"][0] == MONO, unpinned
    pinned_env = dict(machine)
    pin_fonts(pinned_env, tmp_path / "pinned")
    pinned = _probe(pinned_env)
    for key, (family, bold, italic) in pinned.items():
        assert family in VENDORED_FAMILIES, (key, family)
        assert bold == key.endswith(" bold") and italic == key.endswith(" italic"), (key, bold, italic)
    for key in ("fixed", "monospace", "Courier New", "<code>", "<code> bold"):
        assert pinned[key][0] == MONO, (key, pinned[key])
    for key in ("default", "title", "sans-serif", "serif", "no such family", "default italic"):
        assert pinned[key][0] == SANS, (key, pinned[key])


def test_the_test_session_itself_is_pinned() -> None:
    """tests/conftest.py pinned this process (and so every subprocess a test starts)."""
    assert os.environ["FONTCONFIG_FILE"].endswith("fonts.conf")
    assert str(FONTS) in Path(os.environ["FONTCONFIG_FILE"]).read_text(encoding="utf-8")


def test_every_widget_of_the_window_uses_a_vendored_face(make_main_window, qtbot) -> None:
    from PySide6.QtGui import QFontInfo
    from PySide6.QtWidgets import QWidget

    window = make_main_window()
    window.show()
    qtbot.waitExposed(window)
    families = {QFontInfo(w.font()).family() for w in window.findChildren(QWidget)}
    assert families and families <= VENDORED_FAMILIES, families
