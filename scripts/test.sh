#!/usr/bin/env bash
# The one test command: installs what the tests need, checks formatting,
# vets, lints, runs every test with the race detector, then runs each fuzz
# target for a bounded time. Usage: scripts/test.sh   (FUZZTIME=30s to fuzz longer)
set -euo pipefail
cd "$(dirname "$0")/.."

export PATH="$(go env GOPATH)/bin:$PATH"
# The tests never change go.mod or go.sum, whatever the caller's GOFLAGS
# say (a later -mod wins): a test that needs a module changed fails, and
# the tree stays as it was. Modules the tests make in temporary folders
# set their own.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=readonly"
FUZZTIME="${FUZZTIME:-10s}"
STATICCHECK_VERSION=v0.8.2
# The Go modules of the repository: the host, and the SDK plugin authors
# import (its own module, so that it drags nothing of the host along). The
# go command's ./... stops at a module's edge, so each step runs in each.
MODULES=(. sdk)

step() { printf '\n== %s\n' "$*"; }

# Temporary things to remove on exit, whichever step fails.
bin_dir= pg_dir=
cleanup() {
	if [ -n "$pg_dir" ]; then
		as_postgres "$pg_bin/pg_ctl" -D "$pg_dir/data" -m immediate -w stop >/dev/null 2>&1 || true
		rm -rf "$pg_dir"
	fi
	if [ -n "$bin_dir" ]; then rm -rf "$bin_dir"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM
# PostgreSQL refuses to run as root; / because postgres may not read the cwd.
as_postgres() { if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi; }

step "tools"
if ! staticcheck -version 2>/dev/null | grep -q "${STATICCHECK_VERSION#v}"; then
	go install "honnef.co/go/tools/cmd/staticcheck@${STATICCHECK_VERSION}"
fi

step "python3-grpcio (the Python plugin of examples/plugins/python), python3-jsonschema (the config schema's independent check)"
if /usr/bin/python3 -c 'import grpc, google.protobuf, jsonschema' 2>/dev/null; then
	echo "Debian's python3-grpcio, python3-protobuf and python3-jsonschema are installed"
elif [ "${SKIP_PYTHON_PLUGIN:-}" = 1 ]; then
	echo "SKIP_PYTHON_PLUGIN=1: not installing them; the Python plugin test will skip"
elif command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-grpcio python3-protobuf python3-jsonschema
else
	echo "the Python plugin test needs Debian's python3-grpcio and python3-protobuf, the schema test python3-jsonschema: install them as root, or set SKIP_PYTHON_PLUGIN=1 to skip it"; exit 1
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

step "generated code (toolprovider.v1 for Go and Python) is what the pinned generators write"
if ! command -v protoc >/dev/null; then
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq protobuf-compiler
fi
if [ "$(protoc --version)" != "libprotoc 3.21.12" ]; then
	echo "NOT CHECKED: protoc is \"$(protoc --version)\", and the files are generated with 3.21.12 (Debian 12's protobuf-compiler)"
else
	(cd sdk && go generate ./proto/...)
	sh examples/plugins/python/generate.sh
	git diff --exit-code -- sdk/proto examples/plugins/python/toolprovider ||
		{ echo "the generated code differs from the checked-in files: commit what go generate wrote"; exit 1; }
fi

step "go vet"
for m in "${MODULES[@]}"; do (cd "$m" && go vet ./...); done

step "staticcheck"
for m in "${MODULES[@]}"; do (cd "$m" && staticcheck ./...); done

step "postgres (a throwaway server for the postgres checkpointer tests)"
if [ "${SKIP_POSTGRES:-}" = 1 ]; then
	echo "SKIP_POSTGRES=1: not starting one; the postgres tests will skip"
elif [ -n "${TENXGRAPH_TEST_POSTGRES_DSN:-}" ]; then
	echo "using the server TENXGRAPH_TEST_POSTGRES_DSN names"
else
	if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql
	fi
	pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
	pg_dir=$(mktemp -d /tmp/tenxgraph-pg.XXXXXX) # short: it holds the socket
	if [ "$(id -u)" = 0 ]; then chown postgres "$pg_dir"; fi
	as_postgres "$pg_bin/initdb" -D "$pg_dir/data" -U postgres -A trust -E UTF8 --locale=C --no-sync >/dev/null
	# A Unix socket in $pg_dir only, no TCP; durability off, it is thrown away.
	as_postgres "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/log" -w \
		-o "-k $pg_dir -p 54329 -c listen_addresses= -c fsync=off -c synchronous_commit=off -c full_page_writes=off" start >/dev/null
	as_postgres "$pg_bin/createdb" -h "$pg_dir" -p 54329 -U postgres tenxgraph_test
	export TENXGRAPH_TEST_POSTGRES_DSN="host=$pg_dir port=54329 user=postgres dbname=tenxgraph_test"
	echo "PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') at $pg_dir"
fi

step "jaeger (the collector the trace tests export to), built from the version tools/jaeger pins"
jaeger_version=$(cd tools/jaeger && go list -m -f '{{.Version}}' github.com/jaegertracing/jaeger)
jaeger_bin="$(go env GOPATH)/bin/tenxgraph-test-jaeger-$jaeger_version"
if [ ! -x "$jaeger_bin" ]; then
	(cd tools/jaeger && go build -o "$jaeger_bin" github.com/jaegertracing/jaeger/cmd/jaeger)
fi
export TENXGRAPH_TEST_JAEGER="$jaeger_bin"
echo "Jaeger $jaeger_version at $jaeger_bin"

step "go test -race (the import rules are internal/layers)"
# host/cli starts dozens of real serve processes with their plugins; under
# -race on two busy cores it can outlast go test's default 10-minute
# package timeout without anything hanging (tests bound their own waits).
for m in "${MODULES[@]}"; do (cd "$m" && go test -race -count=1 -timeout 25m ./...); done
step "go test: memory held by clients that do not read, and by providers that send too much (no -race, which multiplies memory)"
go test -count=1 -run '^(TestSlowReadersAreDropped|TestSlowReadersShareOneLargeMessage|TestHugePluginResultsRefusedAsTheyArrive|TestHugeMCPResultsRefusedAsTheyArrive)$' ./host/server ./host/service

step "a plugin and a code-first program outside the repository, built as docs/plugins.md says"
scripts/plugin-outside.sh

step "AG-UI: the real @ag-ui/client against tenxgraph serve"
bin_dir=$(mktemp -d)
go build -o "$bin_dir/tenxgraph" ./cmd/tenxgraph
(cd tests/agui && npm ci --no-audit --no-fund --loglevel=error && TENXGRAPH_BIN="$bin_dir/tenxgraph" node --test)

step "TypeScript client: @tenxgraph/client against tenxgraph serve, and the playground in chromium"
if [ ! -x /usr/bin/chromium ]; then
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
fi
(cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error &&
	TENXGRAPH_BIN="$bin_dir/tenxgraph" npm test && TENXGRAPH_BIN="$bin_dir/tenxgraph" npm run test:browser)

step "fuzz ($FUZZTIME each)"
grep -rl --include='*_test.go' --exclude-dir=node_modules '^func Fuzz' . | sort | while read -r file; do
	dir=$(dirname "${file#./}")
	mod=.  # the module holding the package: the SDK's, or the host's
	for m in "${MODULES[@]}"; do
		if [ "$m" != . ] && { [ "$dir" = "$m" ] || [[ "$dir" == "$m"/* ]]; }; then mod=$m; fi
	done
	pkg="./${dir#"$mod"/}"
	if [ "$dir" = "$mod" ]; then pkg=.; fi
	for target in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | cut -d' ' -f2); do
		echo "-- $mod: $pkg $target"
		out=$(mktemp)
		if ! (cd "$mod" && go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg") 2>&1 | tee "$out"; then
			# Go 1.26's fuzz coordinator can report its own -fuzztime
			# deadline as the target failing: "context deadline exceeded",
			# no failing input written (go.dev/issue/75804, fixed in Go
			# 1.27). That alone is run again, once; a crash writes its
			# input, and fails.
			if grep -q 'context deadline exceeded$' "$out" && ! grep -q 'Failing input written' "$out"; then
				echo "-- $target: the fuzz coordinator's deadline race (go.dev/issue/75804); running it again"
				rm -f "$out"
				(cd "$mod" && go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg")
			else
				rm -f "$out"
				exit 1
			fi
		fi
		rm -f "$out"
	done
done

step "all checks passed"
