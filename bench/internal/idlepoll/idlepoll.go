// Package idlepoll asks Linux to keep idle CPUs polling instead of sleeping,
// for as long as a measurement runs. It separates what a program costs from
// what the machine charges to wake a sleeping CPU: on a virtual machine
// whose idle vCPUs halt, every hand-off to a process on another vCPU waits
// for the hypervisor to run that vCPU again.
//
// It uses the kernel's PM QoS interface, as tuned's latency-performance
// profile does: while a process holds /dev/cpu_dma_latency open with a
// value of 0, the cpuidle governor picks only the polling state, and the
// request ends when the file is closed (or the process exits). Idle CPUs
// then spin, so this is for measurements, not a setting to leave on.
package idlepoll

// Hold keeps idle CPUs polling until the returned function is called. It
// needs Linux and the right to open /dev/cpu_dma_latency (root).
func Hold() (release func() error, err error) { return hold() }
