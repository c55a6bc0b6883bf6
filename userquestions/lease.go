package userquestions

import (
	leases "github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/streams"
)

// Liveness without heartbeats (DESIGN.md), with the leases of package
// lease. A worker holds one for the waits it owns, so callers and
// answerers notice its death; a caller holds one for the calls it waits
// on, so the worker notices the caller's death. A lost worker lease turns
// its timed calls pending and its blocking ones asked again; a lost
// caller lease aborts the caller's waits (W5, W7).

// The roles a lease name carries, for operators reading `nats consumer ls`.
const (
	RoleWorker = streams.LeaseWorker
	RoleCaller = streams.LeaseCaller
)

// DefaultReleaseBound is how long NATS keeps a claim or lease after its
// holder's interest is gone: the bound on noticing a dead Client, gateway,
// agent or worker.
const DefaultReleaseBound = leases.DefaultReleaseBound

// MinReleaseBound is the shortest release bound accepted (see
// lease.MinReleaseBound).
const MinReleaseBound = leases.MinReleaseBound
