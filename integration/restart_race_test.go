//go:build race

package integration

// raceBuild reports whether this test binary runs with the race detector,
// so the processes it builds run with it too.
const raceBuild = true
