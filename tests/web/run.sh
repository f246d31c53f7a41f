#!/bin/sh
# ctest's entry to the browser tests: pytest from the repository's .venv driving
# Debian's chromium through chromium-driver (Selenium). Skipped (exit 77) with the
# reason when any of them is missing, unless KILN_TESTS_REQUIRE_DATA=1.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY="$ROOT/.venv/bin/python"
missing=""
"$PY" -c "import selenium, pytest" 2>/dev/null || missing="$missing selenium/pytest in .venv"
[ -x /usr/bin/chromium ] || missing="$missing /usr/bin/chromium"
[ -x /usr/bin/chromedriver ] || missing="$missing /usr/bin/chromedriver"
if [ -n "$missing" ]; then
  echo "browser tests skipped: missing$missing (run ./setup.sh)"
  [ "$KILN_TESTS_REQUIRE_DATA" = "1" ] && exit 1
  exit 77
fi
cd "$ROOT/tests/web" && exec "$PY" -m pytest -q -rs "$@"
