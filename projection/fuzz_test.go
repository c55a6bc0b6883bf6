package projection_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/projection"
)

// FuzzFold folds random Session logs and checks what must hold for every
// log: no panic, call ids unique across Active and Settled, both lists in
// the order their entries arrived, and that folding event by event, with
// the View stored and reloaded as JSON in between as the KV worker does,
// gives the same View as folding the whole log at once.
func FuzzFold(f *testing.F) {
	// Each event takes its kind, its choices, a seq gap, whether it goes
	// through the codec and how the View is stored after it (see session).
	var (
		timedHdr   = []byte{0, 0, 0, 1}
		legacyHdr  = []byte{1, 0, 0, 0}
		askC0      = []byte{3, 0, 7, 0, 0, 1, 0}
		askC1      = []byte{3, 1, 7, 0, 0, 0, 0}
		askC0Block = []byte{3, 0, 0, 0, 0, 0, 2}
		pendingC0  = []byte{6, 0, 0, 0, 0, 2}
		answerC0   = []byte{6, 0, 2, 3, 0, 0, 1}
		repairC1   = []byte{6, 1, 3, 0, 0, 0}
		replyC0    = []byte{8, 0, 0, 3, 3, 0, 1, 1}
		garbledC0  = []byte{8, 0, 0, 3, 0, 0, 0, 1}
		spliceC0   = []byte{9, 0, 1, 3, 3, 0, 0, 1}
		discardM1  = []byte{10, 1, 0, 0, 0}
		turnEnd    = []byte{12, 0, 1, 0}
		ptcC2      = []byte{7, 2, 5, 1, 0, 0, 0, 1}
		replyC2    = []byte{8, 2, 2, 0, 3, 1, 0, 1}
		unknown    = []byte{14, 1, 1}
		redeliver  = []byte{15, 1, 1}
	)
	for _, seed := range [][]byte{
		{},
		slices.Concat(timedHdr, askC0, pendingC0, replyC0),
		slices.Concat(timedHdr, askC0, pendingC0, spliceC0, discardM1, turnEnd, spliceC0, replyC0, askC0, answerC0),
		slices.Concat(legacyHdr, askC1, timedHdr, repairC1, askC1, repairC1, ptcC2, legacyHdr, replyC2, askC0Block, garbledC0),
		slices.Concat(timedHdr, redeliver, askC0, unknown, redeliver, pendingC0, redeliver, spliceC0, redeliver, replyC0, redeliver),
		[]byte("the quick brown fox asks the lazy dog a timed question"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &logGen{data: data}
		log, reload := g.session()

		whole := projection.Fold(log)
		checkFoldInvariants(t, whole)
		if again := projection.Fold(log); !reflect.DeepEqual(whole, again) {
			t.Fatalf("Fold is not deterministic:\n%+v\n%+v", whole, again)
		}

		v := projection.New()
		for i, e := range log {
			last := v.LastSeq
			v.Apply(e)
			checkFoldInvariants(t, v)
			if v.LastSeq < last {
				t.Fatalf("event %d moved LastSeq back from %d to %d", i, last, v.LastSeq)
			}
			switch reload[i] {
			case reloadJSON:
				v = roundTrip(t, v)
			case reloadClone:
				v = v.Clone()
			}
		}
		if got, want := mustMarshal(t, v), mustMarshal(t, whole); got != want {
			t.Fatalf("incremental fold differs from Fold:\n got %s\nwant %s", got, want)
		}
	})
}

func checkFoldInvariants(t *testing.T, v projection.View) {
	t.Helper()
	checkInvariants(t, v)
	for i := 1; i < len(v.Active); i++ {
		if v.Active[i-1].Seq >= v.Active[i].Seq {
			t.Fatalf("active calls out of order: %+v", v.Active)
		}
	}
	for i := 1; i < len(v.Settled); i++ {
		if v.Settled[i-1].Seq >= v.Settled[i].Seq {
			t.Fatalf("settled calls not in the order of settling: %+v", v.Settled)
		}
	}
	for _, c := range v.Active {
		if c.Seq > v.LastSeq {
			t.Fatalf("call %s opened at %d, after the last folded seq %d", c.CallID, c.Seq, v.LastSeq)
		}
	}
}

func roundTrip(t *testing.T, v projection.View) projection.View {
	t.Helper()
	var out projection.View
	if err := json.Unmarshal([]byte(mustMarshal(t, v)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustMarshal(t *testing.T, v projection.View) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// How the incremental fold stores its View after an event.
const (
	reloadNone = iota
	reloadJSON
	reloadClone
)

// logGen turns fuzz bytes into a Session log. Each event kind takes a few
// bytes for its choices; call and message ids come from small sets so that
// events meet the same calls often. When the bytes run out every choice
// reads 0 and the log ends.
type logGen struct {
	data []byte
	pos  int
}

func (g *logGen) more() bool { return g.pos < len(g.data) }

func (g *logGen) pick(n int) int {
	if g.pos >= len(g.data) {
		return 0
	}
	b := g.data[g.pos]
	g.pos++
	return int(b) % n
}

var (
	genCallIDs    = []string{"c0", "c1", "c2", "c3"}
	genMessageIDs = []string{"m0", "m1", "m2"}
	oneQuestion   = []holdover.Question{{ID: "db", Question: "Which database?"}}
)

func (g *logGen) callID() string    { return genCallIDs[g.pick(len(genCallIDs))] }
func (g *logGen) messageID() string { return genMessageIDs[g.pick(len(genMessageIDs))] }

func (g *logGen) questions() []holdover.Question {
	if g.pick(2) == 0 {
		return twoQuestions
	}
	return oneQuestion
}

// args returns ask_user_question arguments, valid or not.
func (g *logGen) args() json.RawMessage {
	switch g.pick(8) {
	case 0:
		return argsJSON(g.questions(), seconds(-1))
	case 1:
		return argsJSON(g.questions(), nil)
	case 2:
		return argsJSON(g.questions(), seconds(0))
	case 3:
		return argsJSON(nil, seconds(30))
	case 4:
		return json.RawMessage(`{"questions":[{"id":"db"`)
	default:
		return argsJSON(g.questions(), seconds(30))
	}
}

// answers returns an answer batch that fits one of the call shapes, or not.
func (g *logGen) answers() []holdover.Answer {
	switch g.pick(5) {
	case 0:
		return []holdover.Answer{{ID: "db", Selected: []string{"SQLite"}}}
	case 1:
		return []holdover.Answer{{ID: "db"}, {ID: "name"}}
	case 2:
		return []holdover.Answer{}
	default:
		return bothAnswered
	}
}

// outcome returns a tool outcome for callID: pending, an answer batch, an
// error or something unreadable.
func (g *logGen) outcome(callID string) *events.ToolResult {
	switch g.pick(8) {
	case 0, 1:
		return pending(callID)
	case 2:
		return answered(callID, g.answers()...)
	case 3:
		return failedWith(callID, holdover.CodeToolOutcomeUnknown)
	case 4:
		return failedWith(callID, []holdover.Code{holdover.CodeAskAborted, holdover.CodeAskCancelled, holdover.CodeNoProvider}[g.pick(3)])
	case 5:
		return &events.ToolResult{CallID: callID, Content: events.Text("not json")}
	case 6:
		return &events.ToolResult{CallID: callID}
	default:
		return &events.ToolResult{CallID: callID, Content: events.Text(`{"answers":[]}`)}
	}
}

// message returns a late reply to callID, readable or not, or an ordinary
// message with the same text.
func (g *logGen) message(callID string) events.Message {
	m, err := events.NewReply(g.messageID(), callID, twoQuestions, g.answers())
	if err != nil {
		panic(err)
	}
	switch g.pick(4) {
	case 0:
		m.Content = events.Text("unreadable")
	case 1:
		m.Source = events.Source{Kind: events.SourceUser}
	}
	return m
}

// session returns a log and, for each event, how the incremental fold
// stores its View after folding it.
func (g *logGen) session() ([]events.Event, []int) {
	var log []events.Event
	var reload []int
	var seq uint64
	for g.more() && len(log) < 300 {
		var body events.Body
		e := events.Event{}
		switch kind := g.pick(16); kind {
		case 0:
			body = timedHeader()
		case 1:
			body = legacyHeader()
		case 2:
			body = header("run_code", runCodeSchema)
		case 3, 4:
			body = askWith(g.callID(), g.args())
		case 5:
			body = &events.ToolCall{CallID: g.callID(), Name: "read_file", Arguments: json.RawMessage(`{}`)}
		case 6:
			body = g.outcome(g.callID())
		case 7:
			id := g.callID()
			body = dispatched("run-"+id, id, g.args(), g.outcome(id))
		case 8:
			body = &events.UserMessage{Message: g.message(g.callID())}
		case 9:
			body = &events.InboxSpliced{Message: g.message(g.callID())}
		case 10:
			body = &events.InboxDiscarded{MessageID: g.messageID()}
		case 11:
			body = &events.InboxClaimed{MessageID: g.messageID()}
		case 12:
			body = &events.TurnEnd{Turn: "t"}
		case 13:
			body = &events.StepEnd{Turn: "t"}
		case 14:
			e.Type = "tool/progress"
			e.Data = json.RawMessage(`{"callId":"c0"}`)
		case 15:
			if len(log) > 0 {
				// A redelivery: an earlier event arrives again with its own seq.
				log = append(log, log[g.pick(len(log))])
				reload = append(reload, g.pick(3))
				continue
			}
		}
		seq += 1 + uint64(g.pick(4)/3) // Session seqs may skip (other subjects)
		e.Seq = seq
		if body != nil {
			e.Type, e.Body = body.EventType(), body
			if g.pick(2) == 0 {
				e = decoded(e)
			}
		}
		log = append(log, e)
		reload = append(reload, g.pick(3))
	}
	return log, reload
}

// decoded returns e as the worker sees it: encoded and decoded again.
// An event the codec refuses (malformed arguments cannot be recorded)
// stays as built: the fold must cope with it either way.
func decoded(e events.Event) events.Event {
	data, err := events.Encode(e)
	if err != nil {
		return e
	}
	out, err := events.Decode(data)
	if err != nil {
		panic(err)
	}
	out.Seq = e.Seq
	return out
}
