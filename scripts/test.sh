#!/usr/bin/env bash
# The one test command: installs what the tests need, checks formatting,
# vets, lints, runs every test with the race detector, then runs each fuzz
# target for a bounded time. Usage: scripts/test.sh   (FUZZTIME=30s to fuzz longer)
set -euo pipefail
cd "$(dirname "$0")/.."

export PATH="$(go env GOPATH)/bin:$PATH"
FUZZTIME="${FUZZTIME:-10s}"
STATICCHECK_VERSION=v0.8.2

step() { printf '\n== %s\n' "$*"; }

step "tools"
if ! staticcheck -version 2>/dev/null | grep -q "${STATICCHECK_VERSION#v}"; then
	go install "honnef.co/go/tools/cmd/staticcheck@${STATICCHECK_VERSION}"
fi

step "npm ci (the pinned MCP servers of the plugins/mcp integration tests)"
if [ "${SKIP_MCP_SERVERS:-}" = 1 ]; then
	echo "SKIP_MCP_SERVERS=1: not installing them; the MCP integration tests will skip"
elif ! command -v npm >/dev/null; then
	echo "npm is required to install the MCP test servers (Node.js 20 or later); set SKIP_MCP_SERVERS=1 to skip those tests"; exit 1
else
	(cd plugins/mcp/testdata/npm && npm ci --no-audit --no-fund --loglevel=error)
fi

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

step "go vet"
go vet ./...

step "staticcheck"
staticcheck ./...

step "go test -race"
go test -race -count=1 ./...

step "AG-UI: the real @ag-ui/client against tenxgraph serve"
bin_dir=$(mktemp -d)
trap 'rm -rf "$bin_dir"' EXIT
go build -o "$bin_dir/tenxgraph" ./cmd/tenxgraph
(cd tests/agui && npm ci --no-audit --no-fund --loglevel=error && TENXGRAPH_BIN="$bin_dir/tenxgraph" node --test)

step "TypeScript client: @tenxgraph/client against tenxgraph serve, and the playground in chromium"
if [ ! -x /usr/bin/chromium ]; then
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
fi
(cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error &&
	TENXGRAPH_BIN="$bin_dir/tenxgraph" npm test && TENXGRAPH_BIN="$bin_dir/tenxgraph" npm run test:browser)

step "fuzz ($FUZZTIME each)"
grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r file; do
	pkg="./$(dirname "${file#./}")"
	for target in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | cut -d' ' -f2); do
		echo "-- $pkg $target"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg"
	done
done

step "all checks passed"
