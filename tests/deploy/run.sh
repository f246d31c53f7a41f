#!/bin/sh
# ctest's entry to the deploy/ checks: pytest from the repository's .venv (setup.sh
# installs kubernetes-validate and jsonschema there). Without it the tests are
# skipped (exit 77) with the reason, unless KILN_TESTS_REQUIRE_DATA=1.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY="$ROOT/.venv/bin/python"
if ! "$PY" -c "import kubernetes_validate, jsonschema, yaml, pytest" 2>/dev/null; then
  echo "deploy tests skipped: $PY cannot import kubernetes_validate, jsonschema, yaml and pytest (run ./setup.sh)"
  [ "$KILN_TESTS_REQUIRE_DATA" = "1" ] && exit 1
  exit 77
fi
cd "$ROOT/tests/deploy" && exec "$PY" -m pytest -q -rs -p no:cacheprovider "$@"
