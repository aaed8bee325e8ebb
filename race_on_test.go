//go:build race

package adapter_test

// raceEnabled: the race detector is on. It turns sync.Pool's reuse off at
// random, so that bytes allocated per request (go-openai's regexp machines,
// encoding/json's scanners) are no measure of the library's own.
const raceEnabled = true
