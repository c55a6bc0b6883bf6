package events

import (
	"bytes"
	"encoding/json"
	"reflect"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/strictjson"
)

// exactNames are the types whose bodies identify a question call.
var exactNames = map[Type]bool{TypeToolCall: true, TypeToolResult: true, TypePTCDispatch: true}

// codec is the JSON implementation behind Encode and Decode.
//
// The question projection decodes every event of every Session it folds,
// and with encoding/json decoding was nine tenths of the fold's cost
// (projection's BenchmarkDecodeFold). goccy/go-json gives the same results
// several times faster: the same values, the same strictness and errors at
// the same inputs, which FuzzDecodeMatchesStd and FuzzEncodeMatchesStd
// check against encoding/json, the reference. Only the events' own types
// go through it; the rest of the module uses encoding/json.
type codec struct {
	marshal   func(any) ([]byte, error)
	unmarshal func([]byte, any) error
}

// fast is the codec of Encode and Decode.
var fast = codec{marshal: gojson.Marshal, unmarshal: gojson.Unmarshal}

func (c codec) encode(e Event) ([]byte, error) {
	if e.Body == nil {
		return nil, holdover.Newf(holdover.CodeBadRequest, "event %q has no body", e.Type)
	}
	if e.Body.EventType() != e.Type {
		return nil, holdover.Newf(holdover.CodeBadRequest, "event type %q does not match its %q body", e.Type, e.Body.EventType())
	}
	if err := e.Body.Validate(); err != nil {
		return nil, err
	}
	data, err := c.marshal(e.Body)
	if err != nil {
		return nil, holdover.Wrapf(err, holdover.CodeBadRequest, "encode %s", e.Type)
	}
	out, err := c.marshal(struct {
		Type Type            `json:"type"`
		At   time.Time       `json:"at"`
		Data json.RawMessage `json:"data"`
	}{e.Type, e.At.UTC(), data})
	if err != nil {
		return nil, holdover.Wrapf(err, holdover.CodeBadRequest, "encode %s", e.Type)
	}
	if len(out) > MaxEventBytes {
		return nil, holdover.Newf(holdover.CodeBadRequest, "event %s is %d bytes, over the %d byte limit", e.Type, len(out), MaxEventBytes)
	}
	return out, nil
}

func (c codec) decode(data []byte) (Event, error) {
	if len(data) > MaxEventBytes {
		return Event{}, holdover.Newf(holdover.CodeBadRequest, "event is %d bytes, over the %d byte limit", len(data), MaxEventBytes)
	}
	var e Event
	if err := c.unmarshal(data, &e); err != nil {
		return Event{}, holdover.Wrap(err, holdover.CodeBadRequest, "event is not valid JSON")
	}
	if e.Type == "" {
		return Event{}, holdover.New(holdover.CodeBadRequest, "event has no type")
	}
	// Encode writes At in UTC, and JSON times stop at year 9999: an offset
	// can carry a parsable time past that, which could never be written again.
	if y := e.At.UTC().Year(); y < 0 || y > 9999 {
		return Event{}, holdover.Newf(holdover.CodeBadRequest, "event time %s is outside the years 0 to 9999", e.At.Format(time.RFC3339))
	}
	newBody, ok := bodies[e.Type]
	if !ok {
		return e, nil
	}
	body := newBody()
	if len(bytes.TrimSpace(e.Data)) == 0 {
		return e, holdover.Newf(holdover.CodeBadRequest, "event %s has no data", e.Type)
	}
	if err := c.unmarshal(e.Data, body); err != nil {
		return e, holdover.Wrapf(err, holdover.CodeBadRequest, "event %s", e.Type)
	}
	// The bodies that open and move question calls are read by exact
	// member names, as their schemas are closed: a misspelt callID is an
	// invalid body, never a call id the case-folding decoder filled in.
	if exactNames[e.Type] {
		if err := strictjson.Check(e.Data, reflect.TypeOf(body)); err != nil {
			return e, holdover.Wrapf(err, holdover.CodeBadRequest, "event %s", e.Type)
		}
	}
	if err := body.Validate(); err != nil {
		return e, err
	}
	e.Body = body
	return e, nil
}
