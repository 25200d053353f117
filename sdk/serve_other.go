//go:build !unix

package sdk

func onTerminate(func()) {}

func killGroup() {}

func ignoreBrokenPipes() {}
