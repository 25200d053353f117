package idlepoll

import (
	"encoding/binary"
	"fmt"
	"os"
)

// device is the PM QoS file for the CPUs' wake-up latency, in µs.
const device = "/dev/cpu_dma_latency"

func hold() (func() error, error) {
	f, err := os.OpenFile(device, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("idle CPUs cannot be kept polling: %w (it needs root)", err)
	}
	// The kernel reads a native 32-bit integer: the latency allowed, 0 µs.
	if _, err := f.Write(binary.NativeEndian.AppendUint32(nil, 0)); err != nil {
		f.Close()
		return nil, fmt.Errorf("idle CPUs cannot be kept polling: write %s: %w", device, err)
	}
	return f.Close, nil
}
