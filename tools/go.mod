// Module tools pins the code generators of the repository, so that
// `go generate ./proto/...` in the sdk module writes the same .pb.go
// files byte for byte on every machine. It is never imported.
module github.com/tenxgraph/tenxgraph/tools

go 1.26.0

tool (
	google.golang.org/grpc/cmd/protoc-gen-go-grpc
	google.golang.org/protobuf/cmd/protoc-gen-go
)

require (
	google.golang.org/grpc/cmd/protoc-gen-go-grpc v1.5.1 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
