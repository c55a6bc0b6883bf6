package termclient

import (
	"encoding/json"

	"github.com/holdover-dev/holdover"
)

// ProtocolVersion is the version of docs/protocol.md this Client says in
// hello. From 2 on a message from the gateway may carry several frames
// (messageFrames); this Client reads a protocol 1 gateway's single frames
// as well.
const ProtocolVersion = 2

// The Remote Event name and the methods the terminal Client uses; the
// gateway forwards them by rule and never looks inside.
const (
	QuestionRequestEvent = "user-questions/request"
	methodAnswer         = "userQuestions.answer"
	methodView           = "userQuestions.view"
	methodAttachWait     = "userQuestions.attachWait"
)

// Codes the terminal Client gives failures of its own. The codes of the
// gateway (UNAUTHORIZED, FORBIDDEN …) and of the question service
// (REPLY_QUEUED, BAD_ANSWER …) reach the caller unchanged.
const (
	// CodeUnavailable: the gateway cannot be reached, closed the
	// connection, or a question's answer channel did not arrive in time.
	CodeUnavailable holdover.Code = "UNAVAILABLE"
	// CodeUnauthorized: the gateway refused the token.
	CodeUnauthorized holdover.Code = "UNAUTHORIZED"
	// CodeForbidden: the token does not grant the Session.
	CodeForbidden holdover.Code = "FORBIDDEN"
	// CodeBadFrame: the gateway sent a frame this Client cannot read.
	CodeBadFrame holdover.Code = "BAD_FRAME"
)

// clientFrame is any frame this Client sends; which fields are set depends
// on Type, and empty ones are left out.
type clientFrame struct {
	Type     string          `json:"type"`
	ID       string          `json:"id,omitempty"`
	Protocol int             `json:"protocol,omitempty"`
	Client   string          `json:"client,omitempty"`
	Token    string          `json:"token,omitempty"`
	Session  string          `json:"session,omitempty"`
	FromSeq  uint64          `json:"fromSeq,omitempty"`
	Value    any             `json:"value,omitempty"`
	Error    *holdover.Error `json:"error,omitempty"`
	Method   string          `json:"method,omitempty"`
	Params   any             `json:"params,omitempty"`
}

// serverFrame is any frame the gateway sends, as parseServerFrame checked it.
type serverFrame struct {
	Type     string          `json:"type"`
	ID       string          `json:"id"`
	Session  string          `json:"session"`
	ClientID string          `json:"clientId"`
	User     string          `json:"user"`
	Sessions []string        `json:"sessions"`
	Protocol int             `json:"protocol"`
	Event    string          `json:"event"`
	Payload  json.RawMessage `json:"payload"`
	Events   []wireEvent     `json:"events"`
	View     json.RawMessage `json:"view"`
	Data     json.RawMessage `json:"data"`
	Result   json.RawMessage `json:"result"`
	Reason   string          `json:"reason"`
	Code     holdover.Code   `json:"code"`
	Message  string          `json:"message"`
	Error    *holdover.Error `json:"error"`
}

// wireEvent is a Session event as a watch delivers it. The terminal Client
// only counts seqs; the data stays undecoded.
type wireEvent struct {
	Seq  uint64 `json:"seq"`
	Type string `json:"type"`
}

// messageFrames splits one message from the gateway into its frames, in
// order: one frame object, or from protocol 2 on an array of them. Each is
// parsed with parseServerFrame, so one malformed frame costs no other; a
// message that is neither is BAD_FRAME.
func messageFrames(data []byte) ([]json.RawMessage, error) {
	for _, b := range data {
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		case '[':
			var frames []json.RawMessage
			if err := json.Unmarshal(data, &frames); err != nil {
				return nil, holdover.Newf(CodeBadFrame, "message is not a JSON array of frames: %v", err)
			}
			if len(frames) == 0 {
				return nil, holdover.New(CodeBadFrame, "message holds no frames")
			}
			return frames, nil
		}
		break
	}
	return []json.RawMessage{data}, nil
}

// parseServerFrame decodes one gateway frame and checks the fields its
// type needs, as the web Client does (web/src/protocol/frames.ts). A type
// this version does not know comes back with known false: a newer gateway
// may send more. Anything malformed is a BAD_FRAME error.
func parseServerFrame(data []byte) (f serverFrame, known bool, err error) {
	if err := json.Unmarshal(data, &f); err != nil {
		return serverFrame{}, false, holdover.Newf(CodeBadFrame, "frame is not a JSON object: %v", err)
	}
	need := func(ok bool, field string) error {
		if ok {
			return nil
		}
		return holdover.Newf(CodeBadFrame, "a %s frame needs %s", f.Type, field)
	}
	switch f.Type {
	case "":
		return f, false, holdover.New(CodeBadFrame, "frame has no type")
	case "welcome":
		err = need(f.Protocol != 0, "a protocol")
	case "events":
		err = firstErr(need(f.ID != "", "an id"), need(f.Session != "", "a session"))
		for _, e := range f.Events {
			if err == nil && e.Seq == 0 {
				err = need(false, "a seq on every event")
			}
		}
	case "view":
		// A null view: the Session has no projection yet.
		err = firstErr(need(f.ID != "", "an id"), need(isObject(f.View) || string(f.View) == "null", "a view object or null"))
	case "ready":
		err = firstErr(need(f.ID != "", "an id"), need(f.Session != "", "a session"))
	case "request":
		err = firstErr(need(f.ID != "", "an id"), need(f.Session != "", "a session"), need(f.Event != "", "an event"))
	case "cancel":
		err = firstErr(need(f.ID != "", "an id"), need(f.Session != "", "a session"))
	case "frame", "result":
		err = need(f.ID != "", "an id")
	case "close":
		err = firstErr(need(f.ID != "", "an id"), need(f.Error == nil || f.Error.Code != "", "an error with a code"))
	case "error":
		err = need(f.Code != "", "a code")
	default:
		return f, false, nil
	}
	return f, err == nil, err
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	for _, b := range raw {
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		}
		return false
	}
	return false
}
