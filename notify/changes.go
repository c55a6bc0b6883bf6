package notify

import (
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/projection"
)

// change is one question transition made by folding one event.
type change struct {
	kind Kind
	call projection.Call
}

// was is what the View said of an active call before an event.
type was struct {
	id     string
	status projection.Status
	seq    uint64
}

// step folds e into v with projection's Apply, the only rule of question
// state, and returns the transitions that fold made, in the order of
// v.Active:
//
//   - a call that is open now and was not active before (or was tracked
//     from another event: a call id asked again) is a new question;
//   - a call that is continued now and was not continued before (open,
//     or not active: a run_code sub-call that returned pending) went
//     pending.
//
// It compares the View before and after; it never reads what e says.
func step(v *projection.View, e events.Event) []change {
	before := make([]was, len(v.Active))
	for i, c := range v.Active {
		before[i] = was{c.CallID, c.Status, c.Seq}
	}
	v.Apply(e)
	var out []change
	for _, c := range v.Active {
		prev, active := find(before, c.CallID)
		same := active && prev.seq == c.Seq
		switch {
		case c.Status == projection.Open && !same:
			out = append(out, change{KindQuestion, c})
		case c.Status == projection.Continued && !(same && prev.status == projection.Continued):
			out = append(out, change{KindPending, c})
		}
	}
	return out
}

func find(calls []was, id string) (was, bool) {
	for _, c := range calls {
		if c.id == id {
			return c, true
		}
	}
	return was{}, false
}
