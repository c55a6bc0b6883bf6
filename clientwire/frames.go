package clientwire

import (
	"encoding/json"
	"strings"

	"github.com/holdover-dev/holdover"
)

// Frame is one frame of the protocol: a JSON object whose type member
// says which.
type Frame interface {
	// FrameType is the frame's type member, the same for every frame of
	// its Go type.
	FrameType() string
	// Check says what the frame lacks of what its type needs, as an error
	// with the reader's code: BAD_REQUEST for a Client frame (the gateway
	// reads it), BAD_FRAME for a gateway frame (a Client reads it).
	Check() error
}

// ClientFrame is a frame a Client sends.
type ClientFrame interface {
	Frame
	clientFrame()
}

// GatewayFrame is a frame the gateway sends.
type GatewayFrame interface {
	Frame
	gatewayFrame()
}

// Spec is one frame type as the wire knows it.
type Spec struct {
	// Type is the frame's type member.
	Type string
	// Zero is a frame of the type with no field set; its Go type is the
	// frame's.
	Zero Frame
	// Decode reads and checks one frame of the type, as [Decode] does.
	Decode func(data []byte) (Frame, error)
}

// Schema is the frame's JSON Schema file in the schemas folder.
func (s Spec) Schema() string {
	if _, ok := s.Zero.(ClientFrame); ok {
		return "websocket/client/" + s.Type + ".json"
	}
	return "websocket/gateway/" + s.Type + ".json"
}

func specOf[F Frame]() Spec {
	var zero F
	return Spec{Type: zero.FrameType(), Zero: zero, Decode: func(data []byte) (Frame, error) {
		return Decode[F](data)
	}}
}

var gatewayByType = byType(gatewayFrames)

// ClientFrames lists every frame type a Client sends.
func ClientFrames() []Spec { return append([]Spec(nil), clientFrames...) }

// GatewayFrames lists every frame type the gateway sends.
func GatewayFrames() []Spec { return append([]Spec(nil), gatewayFrames...) }

func byType(specs []Spec) map[string]Spec {
	m := make(map[string]Spec, len(specs))
	for _, s := range specs {
		m[s.Type] = s
	}
	return m
}

// Decode reads data, one frame, as a frame of type F and checks it (its
// Check). What is not one JSON object of F's fields, or lacks a field
// its type needs, is an error with the reader's code (Frame.Check). The
// frame's type member is not looked at: the caller chose F by it.
func Decode[F Frame](data []byte) (F, error) {
	var f F
	if err := unmarshal(data, &f); err != nil {
		var zero F
		return zero, holdover.Newf(badCode(f), "frame is not a JSON object: %v", err)
	}
	return f, f.Check()
}

// Head is what a reader learns of any frame before its type's struct:
// its type, its id (an error about the frame names it), and the members
// by which a Client frame names a Session, which the gateway checks
// against the token before it takes the frame: a watch's session, the
// params.session of an open or a call.
type Head struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Session string          `json:"session"`
	Params  json.RawMessage `json:"params"`
}

// ReadHead reads the head of one frame. The error is the decoder's, for
// the reader to give its code: data that is not a JSON object, or whose
// head members are not strings (params: any JSON).
func ReadHead(data []byte) (Head, error) {
	var h Head
	err := unmarshal(data, &h)
	return h, err
}

// ReadGatewayFrame reads one frame from the gateway, as a Client does. A
// type this version does not know comes back as nil with no error: a
// newer gateway may send more. Anything malformed is BAD_FRAME.
func ReadGatewayFrame(data []byte) (GatewayFrame, error) {
	h, err := ReadHead(data)
	if err != nil {
		return nil, holdover.Newf(CodeBadFrame, "frame is not a JSON object: %v", err)
	}
	if h.Type == "" {
		return nil, holdover.New(CodeBadFrame, "frame has no type")
	}
	spec, known := gatewayByType[h.Type]
	if !known {
		return nil, nil
	}
	f, err := spec.Decode(data)
	if err != nil {
		return nil, err
	}
	return f.(GatewayFrame), nil
}

// SplitMessage splits one message from the gateway into its frames, in
// order: one frame object, or from BatchingProtocol on a JSON array of
// them. Each is read on its own, so one malformed frame costs no other; a
// message that is neither, or an empty array, is BAD_FRAME.
func SplitMessage(data []byte) ([]json.RawMessage, error) {
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

// badCode is the code of a problem with frame f: the code of its reader.
func badCode(f Frame) holdover.Code {
	if _, ok := f.(ClientFrame); ok {
		return holdover.CodeBadRequest
	}
	return CodeBadFrame
}

// need is one field a frame's type needs, and whether the frame has it.
type need struct {
	ok   bool
	what string
}

func has(ok bool, what string) need { return need{ok, what} }

// check is the problem of frame f lacking any of needs, each named.
func check(f Frame, needs ...need) error {
	var missing []string
	for _, n := range needs {
		if !n.ok {
			missing = append(missing, "a "+f.FrameType()+" frame needs "+n.what)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return holdover.New(badCode(f), strings.Join(missing, "\n"))
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

// isNull reports whether raw is JSON null.
func isNull(raw json.RawMessage) bool {
	return strings.TrimSpace(string(raw)) == "null"
}
