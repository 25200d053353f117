//go:build !linux

package idlepoll

import "errors"

func hold() (func() error, error) {
	return nil, errors.New("idle CPUs can be kept polling only on Linux (PM QoS, /dev/cpu_dma_latency)")
}
