package ops

import (
	"context"
	"errors"
	"log/slog"
	"sync"
)

// Component is one long-running part of a process: the projection worker,
// the metrics server, later the question service or the gateway. Run
// blocks until its context ends (then returns nil) or it fails.
type Component struct {
	Name string
	Run  func(ctx context.Context) error
}

// Run starts components in order and keeps them running until ctx ends or
// one of them returns. Then it stops the rest and waits for all of them,
// so nothing outlives the call. It returns the first failure, or nil when
// the process was asked to stop.
func Run(ctx context.Context, logger *slog.Logger, components ...Component) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for _, c := range components {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.Run(ctx)
			if ctx.Err() != nil && (err == nil || errors.Is(err, context.Canceled)) {
				logger.Info("stopped", "component", c.Name)
				return
			}
			if err == nil {
				logger.Warn("component returned early; stopping the process", "component", c.Name)
			} else {
				logger.Error("component failed; stopping the process", "component", c.Name, Err(err))
			}
			once.Do(func() { first = err })
			stop()
		}()
		logger.Info("started", "component", c.Name)
	}
	wg.Wait()
	return first
}
