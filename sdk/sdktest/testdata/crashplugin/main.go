// Command crashplugin panics before its handshake, as a plugin does whose
// set-up fails in main.
package main

import "github.com/tenxgraph/tenxgraph/sdk"

func main() {
	load()
	sdk.Serve(sdk.MustTools("crashplugin", "0.1.0"))
}

func load() { panic("the configuration file is missing") }
