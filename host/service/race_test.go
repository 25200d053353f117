//go:build race

package service_test

// raceEnabled: this test binary has the race detector, which multiplies
// memory and CPU; measurements of them are not the real binary's.
const raceEnabled = true
