//go:build !race

package render_test

// raceAllocFactor scales the tests' allocation bounds; see race_on_test.go.
const raceAllocFactor = 1
