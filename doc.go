// Package holdover holds the domain types every part of Holdover shares:
// the questions an agent asks, the answers a user gives, and the error codes
// that keep their meaning when they cross a process boundary.
//
// It depends on nothing but the standard library and the error library, so
// that the tool, the worker, the gateway and the runtimes can all import it.
// It must never import NATS or any transport.
package holdover
