#!/usr/bin/env bash
# Builds the one-folder app and checks that it starts: the window (offscreen screenshot, with a
# trace loaded through the bundled helper process) and the CLI. Takes ~4-5 min and ~1 GB (torch).
#   packaging/pyinstaller/build_and_check.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-build/pyinstaller}
.venv/bin/pip install -q 'pyinstaller>=6'
.venv/bin/pyinstaller --noconfirm --distpath "$out/dist" --workpath "$out/work" \
    packaging/pyinstaller/gpuperf_gui.spec
app="$out/dist/gpuperf-gui"
QT_QPA_PLATFORM=offscreen "$app/gpuperf-gui" --tab trace --screenshot "$out/check.png" \
    resources/demo/healthy_gpt_small.json.gz
"$app/gpuperf" roofline --gpu h200 --precision bf16 --ai 50 --json
"$app/gpuperf" diagnose resources/demo/memory_bound_visible.json.gz | tail -4
du -sh "$app"
echo "bundle OK: $app (screenshot $out/check.png)"
