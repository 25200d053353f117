#!/usr/bin/env bash
# Does what docs/plugins.md ("Depend on the SDK") tells a plugin author to
# do, in a temporary folder outside the repository: the commands and the
# Go files are read from that section of the page, so the page cannot go
# stale without this failing. The plugin is then built, tested, pinned and
# listed by `tenxgraph tools`; and a code-first program (the one of
# examples/custom-graph) is built against the host the same way and lists
# its tools. Needs the go command and the Go module proxy.
# Usage: scripts/plugin-outside.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
# As in an author's shell: no workspace, no flags of the repository's.
export GOWORK=off
unset GOFLAGS

# The section's fenced blocks, in order, each in a file: N.sh holds a
# block's commands (its "$ " lines), N.go a block of Go.
awk -v dir="$tmp" '
	/^## / { in_section = ($0 == "## Depend on the SDK") }
	!in_section { next }
	/^```/ {
		if (fence) { fence = 0; close(file); next }
		fence = 1; n++
		file = sprintf("%s/%d.%s", dir, n, $0 == "```go" ? "go" : "sh")
		printf "" > file
		next
	}
	fence && file ~ /\.sh$/ { if (sub(/^\$ /, "")) print > file; next }
	fence { print > file }
' "$repo/docs/plugins.md"
blocks=("$tmp"/*.sh "$tmp"/*.go)
if [ "${#blocks[@]}" -ne 5 ]; then
	echo "docs/plugins.md, Depend on the SDK: expected 3 command blocks and 2 Go blocks, found: ${blocks[*]##*/}"; exit 1
fi
run() { # run BLOCK DIR: the block's commands, one shell, in DIR
	echo "-- in the temporary folder${2#"$tmp"}:"; sed 's/^/   $ /' "$1"
	(cd "$2" && bash -euo pipefail "$1")
}

# The checkout beside the plugin's folder, as the page has it.
ln -s "$repo" "$tmp/tenxgraph"
run "$tmp/1.sh" "$tmp"
cp "$tmp/2.go" "$tmp/shout/main.go"
cp "$tmp/3.go" "$tmp/shout/main_test.go"
run "$tmp/4.sh" "$tmp/shout"

echo "-- tenxgraph tools lists the plugin"
go build -o "$tmp/tenxgraph-bin" "$repo/cmd/tenxgraph"
sum=$(sha256sum "$tmp/shout/bin/shout-plugin" | cut -d' ' -f1)
cat >"$tmp/shout/10xgraph.json" <<EOF
{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
 "checkpointer": {"type": "memory"},
 "plugins": [{"name": "shout", "command": ["./bin/shout-plugin"], "sha256": "$sum"}]}
EOF
echo '{"rules": [{"match": "hello", "text": "hello"}]}' >"$tmp/shout/script.json"
out=$("$tmp/tenxgraph-bin" tools --config "$tmp/shout/10xgraph.json" 2>&1) || { echo "$out"; exit 1; }
echo "$out" | grep -E '^tools +shout +shout +server ' || { echo "no shout tool in:"; echo "$out"; exit 1; }

echo "-- a code-first program (examples/custom-graph) against the host"
mkdir "$tmp/myagent"
(cd "$tmp/myagent" && go mod init example.com/myagent)
cp "$repo/examples/custom-graph/main.go" "$repo/examples/custom-graph/10xgraph.json" "$repo/examples/custom-graph/script.json" "$tmp/myagent/"
run "$tmp/5.sh" "$tmp/myagent"
out=$(cd "$tmp/myagent" && ./bin/myagent tools --config 10xgraph.json 2>&1) || { echo "$out"; exit 1; }
echo "$out" | grep -E '^tools +word_count ' || { echo "no word_count tool in:"; echo "$out"; exit 1; }
echo "-- a plugin and a program outside the repository build and run as docs/plugins.md says"
