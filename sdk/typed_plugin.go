package sdk

import "github.com/hashicorp/go-plugin"

// PluginSet is the go-plugin plugin set that serves p, for test kits and
// custom hosts that run a provider behind go-plugin themselves (a plugin's
// main uses Serve, which does this and more). The set works on the host side
// too: what it dispenses is a Provider speaking toolprovider.v1, like the
// value HostPlugins dispenses.
func PluginSet(p Provider) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &grpcPlugin{impl: p}}
}
