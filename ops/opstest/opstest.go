// Package opstest runs components ([ops.Component]) in tests.
package opstest

import (
	"context"
	"testing"

	"github.com/holdover-dev/holdover/ops"
)

// Start starts c and returns once it is ready, failing the test if it
// fails to start. The test's end stops it, and fails the test if it
// failed or stopped early; stop it before with Stop to see its failure.
func Start(t testing.TB, c ops.Component) *ops.Started {
	t.Helper()
	s, err := ops.Start(context.Background(), c)
	if err != nil {
		t.Fatalf("start %s: %v", c.Name, err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop %s: %v", c.Name, err)
		}
	})
	return s
}
