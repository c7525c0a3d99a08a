#!/usr/bin/env bash
# Run the MCP conformance suite (server leg) against examples/everything_server.py over HTTP.
#
#   tests/conformance/run_conformance.sh [REQUIREMENTS...]     (default: 2026-07-28 2025-11-25)
#
# Needs python (PYTHON, default python3) with mcp_agent_kit importable, and npx; Node 22 is
# fetched from the npm registry by npx itself. Exits non-zero unless every scenario of every
# requirement set passes (scored and not scored alike). Results go to $CONFORMANCE_OUT.
set -euo pipefail

CONFORMANCE_PKG="${CONFORMANCE_PKG:-@modelcontextprotocol/conformance@0.2.0-alpha.12}"
PYTHON="${PYTHON:-python3}"
PORT="${CONFORMANCE_PORT:-3917}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="${CONFORMANCE_OUT:-$(mktemp -d)}"
SETS=("$@")
[ ${#SETS[@]} -eq 0 ] && SETS=(2026-07-28 2025-11-25)

"$PYTHON" "$ROOT/examples/everything_server.py" --http "127.0.0.1:$PORT" >"$OUT/server.log" 2>&1 &
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
  if "$PYTHON" -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1',$PORT)))"; then break; fi
  sleep 0.2
done

status=0
for set in "${SETS[@]}"; do
  echo "=== conformance server --requirements $set"
  if ! npx -y -p node@22 -p "$CONFORMANCE_PKG" -- conformance server \
      --url "http://127.0.0.1:$PORT/mcp" --requirements "$set" -o "$OUT/$set" 2>&1 | tee "$OUT/$set.txt"; then
    status=1
  fi
done
echo "results in $OUT"
exit $status
