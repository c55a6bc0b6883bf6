package gateway

import (
	"encoding/json"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/clientwire"
)

// clientFrames is how the gateway takes each frame a Client sends
// (docs/protocol.md; the frames themselves are package clientwire's). A
// row says what the frame needs before it runs, how the rate limit paces
// it, and its handler, whose parameter is the frame's clientwire struct:
// onWatch takes a clientwire.WatchFrame, so the row is the watch frame's.
// The connection reads, counts, paces, admits and handles every frame by
// its row, and by nothing else; a frame type is added by adding one. A
// type not in the table is no error: a newer Client may send more, and
// the connection passes it over.
var clientFrames = frameTable(
	takes(needsNothing, starts, (*conn).onHello),
	takes(needsSession, starts, (*conn).onWatch),
	takes(needsHello, releases, (*conn).onUnwatch),
	takes(needsHello, releases, (*conn).onSettle),
	takes(needsHello, releases, (*conn).onReject),
	takes(needsHello, releases, (*conn).onDelegate),
	takes(needsParamsSession, starts, (*conn).onOpen),
	takes(needsHello, releases, (*conn).onClose),
	takes(needsParamsSession, starts, (*conn).onCall),
	takes(needsHello, starts, (*conn).onInbox),
)

// need is what a frame needs before its handler runs.
type need int

const (
	// needsNothing: the frame may come first. Only hello does.
	needsNothing need = iota
	// needsHello: the connection has said hello (UNAUTHORIZED before).
	needsHello
	// needsSession: hello, and a token that grants the Session the
	// frame's session member names (FORBIDDEN otherwise).
	needsSession
	// needsParamsSession: hello, and a token that grants the Session the
	// frame's params.session names, or every Session when they name none.
	// The handler gets the params as they were checked (scope), never the
	// bytes as they came.
	needsParamsSession
)

// pace is how the rate limits treat a frame (Limits.FramesPerSecond and
// the token's share, tokenlimits.go). Every frame counts, whatever its
// type, well-formed or not.
type pace int

const (
	// starts: the frame starts something; beyond the rate it is refused,
	// RATE_LIMITED. A frame of a type not in the table is paced so too.
	starts pace = iota
	// releases: the frame only ends or answers something the gateway gave
	// the Client. Beyond the rate it waits for its turn, and the
	// connection is read no faster meanwhile; it is never refused: a
	// dropped close or outcome would keep a claim or a request open (W4),
	// and each can only go through once.
	releases
)

// frameSpec is how the gateway takes one type of Client frame.
type frameSpec struct {
	typ   string
	needs need
	pace  pace
	// decode reads and checks one frame of the type (clientwire.Decode).
	decode func(data []byte) (clientwire.ClientFrame, error)
	// handle runs the frame, once its needs hold.
	handle func(c *conn, f clientwire.ClientFrame, s scope)
}

// scope is what a frame's needs established: the Session it concerns,
// and for needsParamsSession the params as checked.
type scope struct {
	session string
	params  json.RawMessage
}

// takes is the spec of the frames of type F: what they need, how they
// are paced and what handles them.
func takes[F clientwire.ClientFrame](needs need, pace pace, handle func(*conn, F, scope)) frameSpec {
	var zero F
	return frameSpec{
		typ: zero.FrameType(), needs: needs, pace: pace,
		decode: func(data []byte) (clientwire.ClientFrame, error) { return clientwire.Decode[F](data) },
		handle: func(c *conn, f clientwire.ClientFrame, s scope) { handle(c, f.(F), s) },
	}
}

func frameTable(specs ...frameSpec) map[string]*frameSpec {
	table := make(map[string]*frameSpec, len(specs))
	for i := range specs {
		table[specs[i].typ] = &specs[i]
	}
	return table
}

// frame is one Client frame as read: its head (clientwire.Head: its type,
// its id for the error that refuses it, and what a need checks against
// the token), its spec (nil for a type not in the table) and its body as
// the spec decoded it.
type frame struct {
	head clientwire.Head
	spec *frameSpec
	body clientwire.ClientFrame
}

// parseFrame decodes one Client frame and checks the fields its type
// needs. The error is BAD_REQUEST; the frame it returns alongside carries
// whatever head could be read, so the error frame can name its id. A type
// not in the table is no error.
func parseFrame(data []byte) (frame, error) {
	var f frame
	var err error
	if f.head, err = clientwire.ReadHead(data); err != nil {
		return frame{}, holdover.Newf(holdover.CodeBadRequest, "frame is not a JSON object: %v", err)
	}
	if len(f.head.ID) > clientwire.MaxIDBytes {
		return frame{}, holdover.Newf(holdover.CodeBadRequest, "frame id is %d bytes, over the %d byte limit", len(f.head.ID), clientwire.MaxIDBytes)
	}
	if f.head.Type == "" {
		return f, holdover.New(holdover.CodeBadRequest, "frame has no type")
	}
	f.spec = clientFrames[f.head.Type]
	if f.spec == nil {
		return f, nil
	}
	f.body, err = f.spec.decode(data)
	return f, err
}

// label is the metrics label of a frame: its type when the table has it,
// "other" for anything a Client made up.
func (f frame) label() string {
	if f.spec == nil {
		return "other"
	}
	return f.spec.typ
}

// Outgoing frames. Each is encoded once and may be written to many Clients.

// encodeFrame renders an outgoing frame. Every frame type is plain data,
// so a failure is a programming error reported as INTERNAL.
func encodeFrame(f clientwire.GatewayFrame) []byte {
	data, err := json.Marshal(f)
	if err != nil {
		data, _ = json.Marshal(clientwire.ErrorFrame{Type: clientwire.TypeError, Code: holdover.CodeInternal, Message: "encode frame: " + err.Error()})
	}
	return data
}

// errorOf renders err as an error frame about the frame with id.
func errorOf(id string, err error) []byte {
	w := holdover.Wire(err)
	return encodeFrame(clientwire.ErrorFrame{Type: clientwire.TypeError, ID: id, Code: w.Code, Message: w.Message})
}
