package config

// The model providers register themselves (package model); the tests of
// this package read files that name them.
import (
	_ "github.com/tenxgraph/tenxgraph/host/model/anthropic"
	_ "github.com/tenxgraph/tenxgraph/host/model/openai"
	_ "github.com/tenxgraph/tenxgraph/host/model/scripted"
)
