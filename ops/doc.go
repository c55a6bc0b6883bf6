// Package ops owns what an operator sees of a Holdover process: its
// Prometheus metrics, its /healthz and /metrics endpoints, its structured
// logs, the NATS connection settings every binary shares, the runner
// that starts a process's components and stops them together, and the
// admission of served requests by their origin (auth's rule, counted and
// logged: Origins).
//
// It is plumbing only. It must never decide question state or read the
// Session log; components report into it, it never calls back into them.
package ops
