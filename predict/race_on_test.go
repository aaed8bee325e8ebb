//go:build race

package predict_test

// raceEnabled: the race detector is on, and changes allocation counts.
const raceEnabled = true
