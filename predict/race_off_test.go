//go:build !race

package predict_test

// raceEnabled: the race detector is off.
const raceEnabled = false
