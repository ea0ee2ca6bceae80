"""An MFU result (and its gap breakdown) as text, Markdown or JSON, to paste into a report."""
from __future__ import annotations

import json

from gpuperf_gui.core.mfu import MfuResult
from gpuperf_gui.core.mfu_gap import GapBreakdown, breakdown_json

__all__ = ["report"]


def report(result: MfuResult, breakdown: GapBreakdown | None, fmt: str = "text") -> str:
    """The result (and breakdown) as ``"text"``, ``"markdown"`` or ``"json"`` for a report."""
    if fmt == "json":
        payload = result.to_json_dict()
        if breakdown is not None:
            payload["gap_breakdown"] = breakdown_json(breakdown)
        return json.dumps(payload, indent=2, allow_nan=False)
    if fmt not in ("text", "markdown"):
        raise ValueError(f"unknown format {fmt!r}")
    markdown = fmt == "markdown"
    parts = [result.to_markdown() if markdown else result.to_text()]
    if breakdown is not None:
        rows = [(s.label, s.fraction) for s in breakdown.causes if s.fraction > 0]
        rows.append(("Unexplained", breakdown.unexplained))
        if markdown:
            lines = ["", "| Where the rest of 100 % went | Share of peak |", "|---|---|"]
            lines += [f"| {label} | {value:.1%} |" for label, value in rows]
        else:
            lines = ["", "Where the rest of 100 % went:"]
            lines += [f"  {label:<24} {value:6.1%}" for label, value in rows]
        if breakdown.message:
            lines += ["", breakdown.message] if markdown else [breakdown.message]
        parts.append("\n".join(lines))
    return "\n".join(parts)
