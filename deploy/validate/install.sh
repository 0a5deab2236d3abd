#!/usr/bin/env bash
# Installs the manifest validator deploy/validate/validate.py runs with: PyPI kubernetes-validate
# (its bundled Kubernetes JSON schemas; jsonschema and PyYAML come with it) in a venv under
# $LLMSCOPE_K8S_VALIDATE_HOME (default ~/.cache/llmscope/kubernetes-validate-1.37.0). A second
# run costs nothing. The test crates/cli/tests/cli/deploy.rs finds it there.
set -euo pipefail
VERSION=1.37.0
HOME_DIR="${LLMSCOPE_K8S_VALIDATE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/llmscope/kubernetes-validate-$VERSION}"
PY="$HOME_DIR/venv/bin/python"
if [ -x "$PY" ] && "$PY" -c 'import kubernetes_validate' 2>/dev/null; then
  echo "kubernetes-validate $VERSION already in $HOME_DIR"
  exit 0
fi
command -v python3 >/dev/null || { echo "python3 not found (apt-get install python3 python3-venv)" >&2; exit 1; }
mkdir -p "$HOME_DIR"
python3 -m venv "$HOME_DIR/venv"
"$PY" -m pip --disable-pip-version-check --no-input -q install "kubernetes-validate==$VERSION"
"$HOME_DIR/venv/bin/kubernetes-validate" --version
