"""Tests draw with the vendored fonts only (tests/data/fonts), never the machine's.

A desktop whose fontconfig prefers another face for a generic family (``fonts-noto-mono`` makes
``monospace`` Noto Mono on many Debian/Ubuntu installs) would otherwise change the glyphs of every
``<code>`` span and fixed-pitch label, and the baseline images would fail there. tests/conftest.py
calls :func:`pin_fonts` before Qt starts: ``FONTCONFIG_FILE`` then names a config that lists the
vendored folder as the only font directory and maps every family the tabs ask for to it, so no system
configuration (conf.d, ~/.fonts, a user's FONTCONFIG_FILE) is read. Subprocesses inherit it.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import MutableMapping
from pathlib import Path
from xml.sax.saxutils import escape

FONTS = Path(__file__).resolve().parent / "data" / "fonts"
SANS = "DejaVu Sans"
MONO = "DejaVu Sans Mono"
VENDORED_FAMILIES = frozenset({SANS, MONO})

# The names Qt and its rich text ask fontconfig for. Qt's html ``<code>``/``<pre>``/``<tt>`` ask for
# "monospace"; QFontDatabase.systemFont(FixedFont) too; the default widget font is "Sans Serif";
# TitleFont/SmallestReadableFont name "DejaVu LGC Sans"; the rest are the metric aliases that the
# system's conf.d would otherwise resolve (30-metric-aliases.conf).
MONO_ALIASES = ("monospace", "Monospace", "mono", "Courier New", "Courier", "courier", "Liberation Mono",
                "Noto Mono", "Noto Sans Mono", "DejaVu LGC Sans Mono")
SANS_ALIASES = ("sans-serif", "Sans Serif", "sans", "serif", "Serif", "Helvetica", "Arial", "Times",
                "Times New Roman", "Liberation Sans", "Noto Sans", "DejaVu LGC Sans", "DejaVu Serif",
                "system-ui", "cursive", "fantasy")


def _alias(name: str, target: str) -> str:
    return (f'  <alias binding="same"><family>{escape(name)}</family>'
            f"<prefer><family>{escape(target)}</family></prefer></alias>\n")


def fonts_conf(fonts_dir: Path, cache_dir: Path) -> str:
    """A complete fontconfig file: only ``fonts_dir``, every known family mapped to the vendored ones,
    and anything else falling back to DejaVu Sans (the last rule appends it to every pattern)."""
    aliases = "".join(_alias(n, MONO) for n in MONO_ALIASES) + "".join(_alias(n, SANS) for n in SANS_ALIASES)
    return (
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">\n<fontconfig>\n'
        f"  <dir>{escape(str(fonts_dir))}</dir>\n  <cachedir>{escape(str(cache_dir))}</cachedir>\n"
        f"{aliases}"
        f'  <match target="pattern"><edit name="family" mode="append_last"><string>{SANS}</string></edit></match>\n'
        "</fontconfig>\n"
    )


def pin_fonts(environ: MutableMapping[str, str], work_dir: Path | None = None) -> Path:
    """Point ``environ``'s fontconfig at the vendored fonts only; returns the config written."""
    work_dir = Path(work_dir or tempfile.mkdtemp(prefix="gpuperf-fonts-"))
    (work_dir / "cache").mkdir(parents=True, exist_ok=True)
    conf = work_dir / "fonts.conf"
    conf.write_text(fonts_conf(FONTS, work_dir / "cache"), encoding="utf-8")
    environ["FONTCONFIG_FILE"] = str(conf)
    environ.pop("FONTCONFIG_PATH", None)  # a folder of configs would only be read by an <include>
    return conf


if __name__ == "__main__":  # print the config, e.g. to look at it
    print(fonts_conf(FONTS, Path(tempfile.gettempdir()) / "gpuperf-fonts-cache"))
