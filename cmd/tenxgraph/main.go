// Command tenxgraph serves, validates and runs agent graphs described by
// 10xgraph.json. See docs/cli.md.
package main

import "github.com/tenxgraph/tenxgraph/host/cli"

func main() { cli.Main() }
