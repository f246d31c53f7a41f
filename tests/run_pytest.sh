#!/bin/sh
# ctest's entry to a pytest suite: tests/run_pytest.sh DIR MODULE... runs pytest
# in tests/DIR from the repository's .venv (setup.sh installs its packages).
# Without the venv or one of the MODULEs the suite is skipped (exit 77) with the
# reason, unless KILN_TESTS_REQUIRE_DATA=1 makes that a failure.
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY="$ROOT/.venv/bin/python"
DIR=$1
shift
for m in pytest "$@"; do
  if ! "$PY" -c "import $m" 2>/dev/null; then
    echo "tests/$DIR skipped: $PY cannot import $m (run ./setup.sh)"
    [ "$KILN_TESTS_REQUIRE_DATA" = "1" ] && exit 1
    exit 77
  fi
done
cd "$ROOT/tests/$DIR" && exec "$PY" -m pytest -q -rs -p no:cacheprovider
