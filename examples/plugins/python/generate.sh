#!/bin/sh
# Regenerates the protobuf messages of toolprovider.v1 for Python
# (toolprovider/v1/toolprovider_pb2.py) with protoc 3.21.12, Debian's
# protobuf-compiler, whose output Debian's python3-protobuf reads. The gRPC
# service needs no generated stub: plugin.py registers its handlers itself.
set -eu
cd "$(dirname "$0")"
want="libprotoc 3.21.12"
got=$(protoc --version 2>/dev/null) || { echo "generate.sh: protoc not found: apt-get install protobuf-compiler ($want)" >&2; exit 1; }
[ "$got" = "$want" ] || { echo "generate.sh: protoc is \"$got\", want \"$want\"" >&2; exit 1; }
protoc -I ../../../sdk/proto --python_out=. toolprovider/v1/toolprovider.proto
