#!/bin/sh
# Regenerates the Go code of toolprovider.v1 from toolprovider/v1/toolprovider.proto
# with pinned generators, so the .pb.go files come out byte for byte the same:
# protoc 3.21.12 (Debian's protobuf-compiler package) and the protoc-gen-go and
# protoc-gen-go-grpc versions pinned in the repository's tools/go.mod.
# Run it as `go generate ./proto/...` in the sdk module.
set -eu
cd "$(dirname "$0")"
want="libprotoc 3.21.12"
got=$(protoc --version 2>/dev/null) || {
	echo "generate.sh: protoc not found: install it (apt-get install protobuf-compiler, $want)" >&2
	exit 1
}
if [ "$got" != "$want" ]; then
	echo "generate.sh: protoc is \"$got\", want \"$want\": another version writes different files" >&2
	exit 1
fi
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go -C ../../tools build -o "$bin/" google.golang.org/protobuf/cmd/protoc-gen-go google.golang.org/grpc/cmd/protoc-gen-go-grpc
protoc -I . \
	--plugin=protoc-gen-go="$bin/protoc-gen-go" --go_out=paths=source_relative:. \
	--plugin=protoc-gen-go-grpc="$bin/protoc-gen-go-grpc" --go-grpc_out=paths=source_relative:. \
	toolprovider/v1/toolprovider.proto
