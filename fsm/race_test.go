//go:build race

package fsm

// raceEnabled shortens the default randomised runs under the race detector,
// which makes them several times slower (the sequences are single-threaded;
// -race is for the rest of the package and its callers).
const raceEnabled = true
