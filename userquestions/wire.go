package userquestions

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/streams"
)

// The endpoint names of the durable half. The foreground half names its
// operations in its own files.
const (
	opAnswer = streams.EndpointAnswer
	opView   = streams.EndpointView
)

// ViewRequest asks for a Session's userQuestions projection.
type ViewRequest struct {
	Session string `json:"session"`
}

// MaxRequestBytes bounds one request or response body. It is the NATS
// payload limit the embedded server and the streams are configured with.
const MaxRequestBytes = 1 << 20

// The headers an error reply carries: the micro-service convention, with the
// holdover code string (not a number) as the code, so `nats micro` and any
// non-Go client see the code without parsing the body.
const (
	ErrorCodeHeader = micro.ErrorCodeHeader
	ErrorHeader     = micro.ErrorHeader
)

// decode parses one JSON request body into v. A body that is too large, is
// not one JSON object or has trailing data is BAD_REQUEST; nothing has been
// done yet, so the caller can fix its input and retry.
func decode(data []byte, v any) error {
	if len(data) > MaxRequestBytes {
		return holdover.Newf(holdover.CodeBadRequest, "request is %d bytes, over the %d byte limit", len(data), MaxRequestBytes)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return holdover.New(holdover.CodeBadRequest, "request must be one JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(v); err != nil {
		return holdover.Newf(holdover.CodeBadRequest, "request is not valid JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return holdover.New(holdover.CodeBadRequest, "request has data after its JSON object")
	}
	return nil
}

// encode renders a reply body, refusing one over the payload limit.
func encode(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, holdover.Newf(holdover.CodeInternal, "encode reply: %v", err)
	}
	if len(data) > MaxRequestBytes {
		return nil, holdover.Newf(holdover.CodeInternal, "reply is %d bytes, over the %d byte limit", len(data), MaxRequestBytes)
	}
	return data, nil
}

// errorMsg is the reply that carries err across the wire: its code and
// message in the headers and, as {code, message}, in the body.
func errorMsg(subject string, err error) *nats.Msg {
	w := holdover.Wire(err)
	body, _ := json.Marshal(w) // a struct of two strings always encodes
	msg := nats.NewMsg(subject)
	msg.Header.Set(ErrorCodeHeader, string(w.Code))
	msg.Header.Set(ErrorHeader, w.Message)
	msg.Data = body
	return msg
}

// replyError rebuilds the typed error a reply carries, or returns nil for a
// successful reply. The body is preferred, since headers lose newlines; a
// reply whose body is not the {code, message} object falls back to the
// headers.
func replyError(msg *nats.Msg) error {
	code := msg.Header.Get(ErrorCodeHeader)
	if code == "" {
		return nil
	}
	var w holdover.Error
	if json.Unmarshal(msg.Data, &w) != nil || w.Code == "" {
		w = holdover.Error{Code: holdover.Code(code), Message: msg.Header.Get(ErrorHeader)}
	}
	return &w
}

// checkSession validates a Session id from a request: a bad id is
// BAD_REQUEST, never a wildcard in a subject or key.
func checkSession(sid string) error { return streams.CheckSession(sid) }

// checkCall validates a call id from a request; call ids are tokenised
// before they enter a subject or key, so only emptiness and length matter.
func checkCall(callID string) error {
	_, err := streams.Token(callID)
	if err != nil {
		return holdover.Newf(holdover.CodeBadRequest, "call id: %v", err)
	}
	return nil
}
