// Package toolproviderv1 is the generated code of toolprovider.v1
// (sdk/proto/toolprovider/v1/toolprovider.proto). Regenerate it with
// `go generate ./sdk/internal/toolproviderv1` after installing the pinned
// generators: protoc 3.21.12 (Debian's protobuf-compiler),
// google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12 and
// google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1.
package toolproviderv1

//go:generate protoc -I ../../proto --go_out=. --go_opt=module=github.com/tenxgraph/tenxgraph/sdk/internal/toolproviderv1 --go-grpc_out=. --go-grpc_opt=module=github.com/tenxgraph/tenxgraph/sdk/internal/toolproviderv1 toolprovider/v1/toolprovider.proto
