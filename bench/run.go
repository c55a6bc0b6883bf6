package bench

import (
	"context"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/auth"
	"github.com/holdover-dev/holdover/streams"
)

// A Part is a group of rows Run measures.
type Part string

// The parts, in the order Run measures them.
const (
	// PartForeground: askTimed → Client delivery and Client answer →
	// result, beside a core request-reply.
	PartForeground Part = "foreground"
	// PartLate: late answer → reply durable, beside a JetStream publish.
	PartLate Part = "late"
	// PartFanOut: the gateway fan-out of one request (Plan.OneRequest),
	// beside core NATS reaching as many connections.
	PartFanOut Part = "fanout"
	// PartBurst: the gateway fan-out of the burst (Plan.Burst), likewise.
	PartBurst Part = "burst"
)

// Parts are every part, in Run's order.
var Parts = []Part{PartForeground, PartLate, PartFanOut, PartBurst}

// ParsePart reads a part's name.
func ParsePart(name string) (Part, error) {
	if p := Part(name); slices.Contains(Parts, p) {
		return p, nil
	}
	return "", holdover.Newf(holdover.CodeBadRequest, "no part %q to measure: the parts are %v", name, Parts)
}

// A Plan says what Run measures, and how much.
type Plan struct {
	// Parts are what to measure; empty means all of them. Run measures
	// them in the order of Parts, whatever order they are given in.
	Parts []Part
	// Calls is how many samples each question path takes.
	Calls int
	// OneRequest and Burst shape the two fan-outs.
	OneRequest, Burst FanOutConfig
}

// DefaultPlan is what `holdover bench` measures unless told otherwise:
// enough calls for a steady p99, and the two fan-outs of issue 12.
var DefaultPlan = Plan{Parts: Parts, Calls: 1000, OneRequest: OneRequest, Burst: Burst}

// measures reports whether the plan measures part p.
func (p Plan) measures(part Part) bool { return len(p.Parts) == 0 || slices.Contains(p.Parts, part) }

// Run measures the plan's rows, in order: askTimed → Client delivery,
// Client answer → result, late answer → reply durable, and the gateway
// fan-out of one request and of the burst (each to the last Client and to
// each Client). Each row goes to measured as soon as it is known.
func (r *Rig) Run(ctx context.Context, plan Plan, measured func(Row)) error {
	for _, part := range Parts {
		if !plan.measures(part) {
			continue
		}
		var rows []Row
		var err error
		switch part {
		case PartForeground:
			rows, err = r.Foreground(ctx, plan.Calls)
		case PartLate:
			var late Row
			late, err = r.LateAnswer(ctx, plan.Calls)
			rows = []Row{late}
		case PartFanOut:
			rows, err = r.FanOut(ctx, plan.OneRequest)
		case PartBurst:
			rows, err = r.FanOut(ctx, plan.Burst)
		}
		if err != nil {
			return err
		}
		for _, row := range rows {
			measured(row)
		}
	}
	return nil
}

// Foreground measures n timed Questions answered in time in one Session,
// beside a core request-reply between two admin connections of their own.
func (r *Rig) Foreground(ctx context.Context, n int) ([]Row, error) {
	roundTrip, err := r.roundTrip()
	if err != nil {
		return nil, err
	}
	sid := r.Session("foreground", 0)
	r.forget(sid)
	ref, err := r.live(ctx, sid)
	if err != nil {
		return nil, err
	}
	call, stop, err := ForegroundCalls(ctx, r.calls, r.answering, sid, ref)
	if err != nil {
		return nil, err
	}
	defer stop()
	return Foreground(ctx, call, roundTrip, n)
}

// LateAnswer measures n late answers, each to a Session of its own,
// beside a synchronous publish of the same reply on a reply subject of
// the same stream.
func (r *Rig) LateAnswer(ctx context.Context, n int) (Row, error) {
	if n < 1 {
		return Row{}, holdover.Newf(holdover.CodeBadRequest, "measure at least one answer, not %d", n)
	}
	sids := make([]string, n)
	for i := range sids {
		sids[i] = r.Session("late", i)
		r.forget(sids[i])
	}
	answer, err := LateAnswers(ctx, Continued{Log: r.logs, Roots: r.roots, Instance: r.instance, Tool: r.tool, Store: r.store}, r.answering, sids)
	if err != nil {
		return Row{}, err
	}
	rawSid := r.Session("late-raw", 0)
	r.forget(rawSid)
	raw, err := ReplyPublisher(ctx, r.adminJS, rawSid, LateCall, Questions, Answers)
	if err != nil {
		return Row{}, err
	}
	return LateAnswer(ctx, answer, raw, n)
}

// roundTrip is a core request-reply between two admin connections of
// their own, on a subject of this run.
func (r *Rig) roundTrip() (Timed, error) {
	responder, _, err := r.Connect(auth.Admin, "raw-responder")
	if err != nil {
		return nil, err
	}
	requester, _, err := r.Connect(auth.Admin, "raw-requester")
	if err != nil {
		return nil, err
	}
	return RoundTrip(responder, requester, "holdover.bench."+r.run+".rtt")
}

// forget removes what the measurement wrote for sid when the Rig closes,
// on a deployment only (an embedded server's files go as a whole): its
// log, its inbox and replies, its projection and its live-root record.
func (r *Rig) forget(sid string) {
	if r.own {
		return
	}
	r.later(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if subj, err := streams.SessionWildcard(sid); err == nil {
			_ = r.top.Sessions.Purge(ctx, jetstream.WithPurgeSubject(subj)) // its log, inbox and replies
		}
		_ = r.top.Questions.Purge(ctx, sid)
		_ = r.top.Roots.Purge(ctx, sid)
	})
}
