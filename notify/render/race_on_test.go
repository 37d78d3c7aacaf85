//go:build race

package render_test

// raceAllocFactor scales the tests' allocation bounds under the race
// detector: there sync.Pool drops a quarter of what is put back, so code
// that takes a pooled value per call (regexp takes a matcher per match)
// allocates several times what it does in a normal build.
const raceAllocFactor = 4
