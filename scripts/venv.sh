# Sourced by the other scripts after they set $root: make $root/.venv with pflux
# and its dev tools, once. Needs only python3 (3.11+); re-installs when
# pyproject.toml changes.
set -eu
cd "$root"
py=${PYTHON:-python3}
venv="$root/.venv"
if [ ! -x "$venv/bin/python" ]; then
    if ! "$py" -m venv "$venv" 2>/dev/null; then
        # Debian splits ensurepip into python3-venv; virtualenv needs nothing from apt
        rm -rf "$venv"
        "$py" -m pip install --user --quiet virtualenv
        "$py" -m virtualenv --quiet "$venv"
    fi
fi
stamp="$venv/.pflux-installed"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet -e ".[dev]"
    touch "$stamp"
fi
export PATH="$venv/bin:$PATH"
# Byte-compile once: with PYTHONDONTWRITEBYTECODE set, every command would
# otherwise recompile pflux on each start.
"$venv/bin/python" -m compileall -q src/pflux >/dev/null
