package streams

import (
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// IsConflict reports whether a JetStream write lost a compare-and-set to a
// concurrent writer: a publish whose Nats-Expected-Last-Subject-Sequence no
// longer holds (10071, or 10164 on replicated streams), or a KV Create,
// Update or Delete whose revision moved (the KV forms of the same refusal).
// It is the one test of "somebody else wrote first" in Holdover.
func IsConflict(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant:
			return true
		}
	}
	return errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists)
}
