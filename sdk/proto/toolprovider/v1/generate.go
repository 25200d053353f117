// Package toolproviderv1 is the generated Go code of toolprovider.v1, the
// protocol between the tenxgraph host and a tool provider plugin
// (toolprovider.proto beside this file). Go plugins do not need it: they
// implement sdk.Provider and call sdk.Serve. It is for programs that speak
// the protocol directly.
//
// Regenerate it with `go generate ./proto/...` in the sdk module: the
// generators are pinned (see ../../generate.sh and the repository's
// tools/go.mod), so the files come out byte for byte the same.
package toolproviderv1

//go:generate sh ../../generate.sh
