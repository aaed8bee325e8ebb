//go:build !race

package adapter_test

// raceEnabled: the race detector is on (see race_on_test.go).
const raceEnabled = false
