// Package streams owns Holdover's JetStream topology: the names of every
// stream, KV bucket and subject, the rules that turn ids into subject
// tokens and keys, and idempotent provisioning.
//
// Every subject and key is built here, so an id can never become a NATS
// wildcard or an invalid token somewhere else. It holds no business rules.
package streams
