// Package events owns the Session log's vocabulary: the event and message
// types that agents record and the question system reads, their JSON codec,
// the registry of message-source kinds, and the persistence catalog (D10)
// that makes every change of a stored shape a reviewed decision.
//
// It knows nothing of NATS. It never invents an event type for question
// state: the question projection is derived from these events alone (D1).
package events
