#!/bin/sh
# ctest's entry to the server tests: pytest from the repository's .venv (setup.sh
# installs the clients there). Without it the tests are skipped (exit 77) with
# the reason, unless KILN_TESTS_REQUIRE_DATA=1 makes that a failure.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY="$ROOT/.venv/bin/python"
if ! "$PY" -c "import openai, pytest" 2>/dev/null; then
  echo "server tests skipped: $PY cannot import openai and pytest (run ./setup.sh)"
  [ "$KILN_TESTS_REQUIRE_DATA" = "1" ] && exit 1
  exit 77
fi
cd "$ROOT/tests/server" && exec "$PY" -m pytest -q -rs "$@"
