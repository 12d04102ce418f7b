"""The wheel ships the frontend bundle and nothing else of the frontend: not the TypeScript sources
in canning_tb/frontend/, not node_modules (npm packages may carry .py files, as node-gyp does).

The wheel is built by setuptools (with setup.py's build hook) from a copy of the project in a
temporary folder, so the checkout's build/ and egg-info stay untouched.
"""
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "src" / "canning_tb" / "plugin" / "static" / "index.js"


def test_wheel_holds_the_bundle_not_the_frontend_sources(tmp_path):
    assert BUNDLE.exists(), "build the bundle first: make frontend"
    project = tmp_path / "project"
    project.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(REPO / name, project / name)
    shutil.copytree(REPO / "src", project / "src",
                    ignore=shutil.ignore_patterns("node_modules", "__pycache__", "*.egg-info", ".canning"))
    # what `npm ci` leaves beside the sources, python files included
    modules = project / "src" / "canning_tb" / "frontend" / "node_modules" / "node-gyp"
    modules.mkdir(parents=True)
    (modules / "gyp_main.py").write_text("print('gyp')\n")
    (modules / "index.js").write_text("module.exports = {};\n")
    out = tmp_path / "dist"
    subprocess.run([sys.executable, "-c", f"from setuptools import build_meta; build_meta.build_wheel({str(out)!r})"],
                   cwd=project, check=True, capture_output=True)
    (wheel,) = out.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "canning_tb/plugin/static/index.js" in names
    assert "canning_tb/analysis/digest.proto" in names
    leaked = [n for n in names if n.startswith("canning_tb/frontend") or "node_modules" in n or n.endswith(".ts")]
    assert leaked == []
