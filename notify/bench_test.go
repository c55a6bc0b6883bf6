package notify

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/projection"
	"github.com/holdover-dev/holdover/steer/steertest"
)

// settledSession is the log of a Session that asked n questions, each
// gone pending and answered late, with the agent's text between: a View
// with n settled calls and none active.
func settledSession(n int) *log {
	var l log
	l.header(steertest.TimedSchema)
	for i := range n {
		id := fmt.Sprintf("call_%d", i)
		l.ask(id, seconds(30))
		l.pending(id)
		l.add(&events.AssistantMessage{ID: "m" + id, Content: events.Text("Going on meanwhile.")})
		l.add(&events.UserMessage{Message: events.Message{ID: "r" + id, Role: "user", Content: events.Text("late"), Source: events.QuestionReply(id)}})
	}
	return &l
}

// What the notifier pays per event on a kept View: one event of the
// agent's text in a Session with 50 settled questions, folded by
// projection's Apply alone ("apply") and by step, which also compares the
// View before and after ("step").
func BenchmarkTextEvent(b *testing.B) {
	for _, name := range []string{"apply", "step"} {
		b.Run(name, func(b *testing.B) {
			v := projection.Fold(settledSession(50).evts)
			e := events.New(t0, &events.AssistantMessage{ID: "m", Content: events.Text("More work.")})
			b.ReportAllocs()
			for i := range b.N {
				e.Seq = v.LastSeq + uint64(i) + 1
				if name == "apply" {
					v.Apply(e)
				} else if len(step(&v, e)) != 0 {
					b.Fatal("text is no transition")
				}
			}
		})
	}
}

// BenchmarkDecodeStoredView is what a watch of the userQuestions bucket
// would pay per projection write of the same Session before it could
// even diff: decoding the whole stored View, which keeps every settled
// call (D5) and so grows with the Session.
func BenchmarkDecodeStoredView(b *testing.B) {
	l := settledSession(50)
	data, err := json.Marshal(projection.Fold(l.evts))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(data)), "view-bytes")
	b.ReportAllocs()
	for range b.N {
		var v projection.View
		if err := json.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
	}
}
