package termclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/clientwire"
	"github.com/holdover-dev/holdover/projection"
)

// flow is one person answering a Session's questions at a terminal, or
// one answer given by flags. Notices and outcomes go to out; failures come
// back as errors carrying their codes.
type flow struct {
	c     *Conn
	s     *Session
	in    <-chan string // typed lines; closed at the end of input
	out   io.Writer
	wait  time.Duration // bounds each wait for the gateway or the projection
	typed bool          // answers are typed, not given by flags
}

// errEndOfInput: the input ended (Ctrl-D, or a script ran out of lines).
var errEndOfInput = errors.New("end of input")

// answersFor gives the answers to qs, typed or from flags. check runs at
// every change of the Session while it waits, and stops it with its error.
type answersFor func(ctx context.Context, qs []holdover.Question, check func() error) ([]holdover.Answer, error)

// pick lists the Session's questions and answers the ones the person
// picks, until the input ends or they quit.
func (f *flow) pick(ctx context.Context) error {
	fmt.Fprintf(f.out, "Connected as %s.\n", f.c.Welcome().User)
	for {
		entries := f.list()
		if len(entries) == 0 {
			fmt.Fprint(f.out, "Enter lists again, q quits: ")
		} else {
			fmt.Fprintf(f.out, "Answer which? [1-%d] (Enter lists again, q quits): ", len(entries))
		}
		line, err := f.readLine(ctx, nil)
		switch {
		case errors.Is(err, errEndOfInput), errors.Is(err, context.Canceled):
			fmt.Fprintln(f.out)
			return nil
		case err != nil:
			return err
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if line == "q" || line == "quit" {
			return nil
		}
		n, err := strconv.Atoi(line)
		if err != nil || n < 1 || n > len(entries) {
			fmt.Fprintf(f.out, "There is no question %q in the list.\n", line)
			continue
		}
		err = f.answer(ctx, entries[n-1], f.typedAnswers)
		switch {
		case errors.Is(err, errEndOfInput), errors.Is(err, context.Canceled):
			fmt.Fprintln(f.out)
			return nil
		case err != nil && f.c.Err() != nil:
			return f.c.Err()
		case err != nil:
			fmt.Fprintln(f.out, Describe(err))
		}
		fmt.Fprintln(f.out)
	}
}

// answer answers one entry through the channel it has (C3): an open call
// through the waterfall, claiming its wait first like the web Client does
// (W3); a continued call through the late-answer RPC (D6).
func (f *flow) answer(ctx context.Context, e Entry, give answersFor) error {
	a := &attempt{f: f, callID: e.CallID, req: e.Request, seen: e.Call != nil}
	defer a.finish()
	if e.Call != nil && e.Call.Queued != nil && f.typed {
		// Locked, as the web card is while a late reply awaits admission (P5).
		fmt.Fprintf(f.out, "Your answer to call %s is queued for the agent:\n", e.CallID)
		f.showAnswers(e.Call.Questions, e.Call.Queued.Answers)
		return nil
	}
	if e.Channel() == ChannelRPC {
		a.late = true
	} else if err := a.attach(ctx); err != nil {
		return err
	}
	answers, err := give(ctx, e.Questions(), a.check)
	if err != nil {
		return err
	}
	return a.submit(ctx, answers)
}

// attempt is one answer to one call on its way.
type attempt struct {
	f      *flow
	callID string       // "" for an unkeyed request
	req    *Request     // the live request the waterfall answer settles
	claim  *ClaimStream // this Client's claim on the request's wait (W2)
	seen   bool         // the projection has listed the call
	late   bool         // the call continued: the answer goes through the RPC
}

// attach finds the call's live request, waiting for it a while when it
// has not reached this Client yet, and claims its wait when it is timed:
// the claim's one frame says how long the worker would have waited, and from
// then on the Host deadline is paused until this Client lets go (W2, W3).
func (a *attempt) attach(ctx context.Context) error {
	f := a.f
	if a.callID == "" && a.req.answered() {
		return holdover.New(holdover.CodeNotFound, "this Client has answered that request already")
	}
	if a.req == nil || a.req.answered() {
		if f.typed {
			fmt.Fprintln(f.out, "Connecting to this question…")
		}
		a.req = nil
		err := f.await(ctx, "an answer channel for call "+a.callID, func() (bool, error) {
			if done, err := a.continuedOrGone(); done || err != nil {
				return done, err
			}
			if e, _ := f.s.Entry(a.callID); e.Channel() == ChannelWaterfall {
				a.req = e.Request
				return true, nil
			}
			return false, nil
		})
		if err != nil || a.late {
			return err
		}
	}
	if !a.req.Timed {
		if f.typed {
			fmt.Fprintln(f.out, "No time limit: the agent waits until you answer.")
		}
		return nil
	}
	claim, err := a.req.AttachWait()
	if err != nil {
		return err
	}
	a.claim = claim
	bounded, cancel := context.WithTimeout(ctx, f.wait)
	defer cancel()
	ms, ok, err := claim.Remaining(bounded)
	switch {
	case err != nil && claim.Err() != nil:
		return a.claimFailed(claim.Err())
	case err != nil:
		return err
	case !ok:
		// The wait ended before the frame came (W3): the projection says
		// whether work continued, so the answer can go late.
		a.claim = nil
		return f.await(ctx, "the end of call "+a.callID+"'s wait", a.continuedOrGone)
	}
	if f.typed {
		if ms == NoDeadline {
			fmt.Fprintln(f.out, "No time limit: the agent waits until you answer.")
		} else {
			fmt.Fprintf(f.out, "Continuing in %ds (paused while you answer here).\n", seconds(ms))
		}
	}
	return nil
}

// continuedOrGone reports whether the call has continued (the answer goes
// late) and fails once it can take no answer at all.
func (a *attempt) continuedOrGone() (bool, error) {
	if a.callID == "" {
		return false, nil // the projection never lists an unkeyed request
	}
	v := a.f.s.View()
	if call, ok := v.Find(a.callID); ok {
		a.seen = true
		if call.Status == projection.Continued {
			a.late = true
			return true, nil
		}
		return false, nil
	}
	if _, ok := v.FindSettled(a.callID); ok {
		return true, holdover.Newf(holdover.CodeConflict, "call %s was answered elsewhere", a.callID)
	}
	if a.seen {
		return true, holdover.Newf(holdover.CodeNotFound, "call %s ended without an answer; it cannot take one any more", a.callID)
	}
	return false, nil
}

// check runs while the person types: it says so once the call has
// continued (the answer will go late, C4), ends the attempt once the call
// can take no answer, and rejects the request after a terminal claim
// failure (SPEC §7).
func (a *attempt) check() error {
	if a.late {
		return nil
	}
	if _, err := a.continuedOrGone(); err != nil {
		return err
	}
	if a.late {
		a.releaseClaim()
		fmt.Fprintf(a.f.out, "\n%s: your answer will reach the agent as a late answer.\n", workContinued)
		return nil
	}
	if a.claim != nil {
		select {
		case <-a.claim.Closed():
			if err := a.claim.Err(); err != nil {
				return a.claimFailed(err)
			}
			a.claim = nil // the worker closed it: the request has settled somehow (W4)
		default:
		}
	}
	return nil
}

// submit sends the answers: through the waterfall while the request is
// live, else through the RPC once the call has continued.
func (a *attempt) submit(ctx context.Context, answers []holdover.Answer) error {
	f := a.f
	if !a.late && a.req != nil && !ended(a.req) {
		if err := a.req.Settle(answers); err != nil {
			return err
		}
		return a.settled(ctx, answers)
	}
	if !a.late {
		if a.callID == "" {
			return holdover.Newf(holdover.CodeNotFound, "the question ended (%s) before the answer was sent", a.req.Reason())
		}
		// The request ended while the person typed; the projection says
		// whether work continued.
		if err := f.await(ctx, "the end of call "+a.callID+"'s wait", a.continuedOrGone); err != nil {
			return err
		}
	}
	return a.sendLate(ctx, answers)
}

// settled follows a waterfall answer until the projection shows what
// happened (C4): settled with it in time, or continued because it lost to
// the end of the wait, in which case it goes again through the RPC. The
// claim stays until the worker closes it (W4).
func (a *attempt) settled(ctx context.Context, answers []holdover.Answer) error {
	f := a.f
	if a.callID == "" {
		// No projection lists an unkeyed request: the worker's end of it is
		// all there is to see.
		err := f.await(ctx, "the end of the request", func() (bool, error) {
			if err := a.req.Refusal(); err != nil {
				return true, err
			}
			return ended(a.req), nil
		})
		if err == nil {
			fmt.Fprintf(f.out, "Sent; the question worker ended the request (%s).\n", a.req.Reason())
		}
		return err
	}
	lost := false
	err := f.await(ctx, "the outcome of the answer to call "+a.callID, func() (bool, error) {
		if err := a.req.Refusal(); holdover.HasCode(err, holdover.CodeBadAnswer) {
			return true, err
		}
		v := f.s.View()
		if s, ok := v.FindSettled(a.callID); ok {
			if !s.Late && sameAnswers(s.Answers, answers) {
				return true, nil
			}
			return true, holdover.Newf(holdover.CodeConflict, "call %s was answered elsewhere first", a.callID)
		}
		if call, ok := v.Find(a.callID); ok {
			a.seen = true
			lost = call.Status == projection.Continued
			return lost, nil
		}
		if a.seen {
			return true, holdover.Newf(holdover.CodeNotFound, "call %s ended without taking the answer", a.callID)
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	if !lost {
		fmt.Fprintf(f.out, "Answered in time: the agent has your answer to call %s.\n", a.callID)
		return nil
	}
	fmt.Fprintln(f.out, "The answer did not arrive before work continued; submit it again.")
	a.late = true
	if f.typed {
		fmt.Fprint(f.out, "Send it again as a late answer? [Y/n] ")
		line, err := f.readLine(ctx, nil)
		if err != nil {
			return err
		}
		if !yes(line) {
			fmt.Fprintln(f.out, "Not sent; the question stays answerable.")
			return nil
		}
	}
	return a.sendLate(ctx, answers)
}

// sendLate sends the answers through the late-answer RPC (D6). Accepted
// queues a user message for the agent; it settles nothing until the agent
// admits it (D5).
func (a *attempt) sendLate(ctx context.Context, answers []holdover.Answer) error {
	res, err := a.f.c.Answer(ctx, a.f.s.ID(), a.callID, answers)
	if err != nil {
		return err
	}
	switch {
	case !res.Accepted && res.Reason != nil:
		return res.Reason // why, with its code: CALL_SETTLED, CALL_OPEN, …
	case !res.Accepted:
		return holdover.Newf(holdover.CodeNotFound, "call %s is no longer answerable", a.callID) // a worker that gives no reason
	}
	fmt.Fprintf(a.f.out, "Accepted: your answer to call %s is queued for the agent (message %s).\n", a.callID, res.MessageID)
	return nil
}

// claimFailed rejects the request with a terminal claim failure's error,
// as the web Client does (SPEC §7).
func (a *attempt) claimFailed(err error) error {
	w := holdover.Wire(err)
	a.claim = nil
	if rerr := a.req.Reject(w); rerr != nil {
		return rerr
	}
	return holdover.Newf(w.Code, "the claim on call %s failed, so its question was rejected: %s", a.callID, w.Message)
}

func (a *attempt) releaseClaim() {
	if a.claim != nil {
		a.claim.Release()
		a.claim = nil
	}
}

// finish lets go of the claim once the attempt is over: its outcome is
// known, or it failed.
func (a *attempt) finish() { a.releaseClaim() }

// await calls done after every change of the Session until it reports
// true or fails, for at most f.wait; what names it in the timeout's error.
func (f *flow) await(ctx context.Context, what string, done func() (bool, error)) error {
	err := f.within(ctx, f.wait, done)
	if errors.Is(err, errTimedOut) {
		return holdover.Newf(clientwire.CodeUnavailable, "%s did not come within %s", what, f.wait)
	}
	return err
}

// errTimedOut: within ran out of time.
var errTimedOut = errors.New("timed out")

// within calls done after every change of the Session until it reports
// true or fails, for at most d.
func (f *flow) within(ctx context.Context, d time.Duration, done func() (bool, error)) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		changed := f.s.Changed()
		if ok, err := done(); ok || err != nil {
			return err
		}
		select {
		case <-changed:
		case <-timer.C:
			return errTimedOut
		case <-ctx.Done():
			return ctx.Err()
		case <-f.c.Done():
			return f.c.Err()
		}
	}
}

// listGrace bounds how long the first listing waits for the requests of
// the open calls. The gateway forwards a Session's in-flight requests as
// the watch starts, but not necessarily before the watch is live; an open
// call whose worker is waiting has one, so the wait is usually no wait.
const listGrace = time.Second

// awaitRequests waits, for at most listGrace, until every open call the
// projection lists has its live request here.
func (f *flow) awaitRequests(ctx context.Context) error {
	err := f.within(ctx, listGrace, func() (bool, error) {
		for _, e := range f.s.Entries() {
			if e.Call != nil && e.Call.Status == projection.Open && e.Request == nil {
				return false, nil
			}
		}
		return true, nil
	})
	if errors.Is(err, errTimedOut) {
		return nil // such a call is listed as not connected; picking it waits longer
	}
	return err
}

// readLine waits for the next typed line, running check (when set) after
// every change of the Session meanwhile.
func (f *flow) readLine(ctx context.Context, check func() error) (string, error) {
	for {
		changed := f.s.Changed()
		if check != nil {
			if err := check(); err != nil {
				return "", err
			}
		}
		select {
		case line, ok := <-f.in:
			if !ok {
				return "", errEndOfInput
			}
			return line, nil
		case <-changed:
		case <-ctx.Done():
			return "", ctx.Err()
		case <-f.c.Done():
			return "", f.c.Err()
		}
	}
}

// typedAnswers asks each question in turn, then asks to send.
func (f *flow) typedAnswers(ctx context.Context, qs []holdover.Question, check func() error) ([]holdover.Answer, error) {
	for {
		answers := make([]holdover.Answer, 0, len(qs))
		for i, q := range qs {
			f.showQuestion(i, len(qs), q)
			for {
				fmt.Fprint(f.out, "> ")
				line, err := f.readLine(ctx, check)
				if err != nil {
					return nil, err
				}
				a, err := ParseLine(q, line)
				if err == nil {
					answers = append(answers, a)
					break
				}
				fmt.Fprintln(f.out, Describe(err))
			}
		}
		fmt.Fprintln(f.out, "Your answers:")
		f.showAnswers(qs, answers)
		fmt.Fprint(f.out, "Send? [Y/n] ")
		line, err := f.readLine(ctx, check)
		if err != nil {
			return nil, err
		}
		if yes(line) {
			return answers, nil
		}
		fmt.Fprintln(f.out, "Answer again.")
	}
}

// list prints one line per open or continued call and returns them in
// that order.
func (f *flow) list() []Entry {
	entries := f.s.Entries()
	if len(entries) == 0 {
		fmt.Fprintf(f.out, "Session %s has no open or continued questions.\n", f.s.ID())
		return nil
	}
	fmt.Fprintf(f.out, "Session %s:\n", f.s.ID())
	for i, e := range entries {
		name := e.CallID
		if name == "" {
			name = "(no call id)"
		}
		fmt.Fprintf(f.out, "  %d) %s  %s — %s\n", i+1, name, statusOf(e), questionsLine(e.Questions()))
	}
	return entries
}

// statusOf says where an entry stands, in the web tool row's words.
func statusOf(e Entry) string {
	var s string
	switch {
	case e.Call != nil && e.Call.Status == projection.Continued && e.Call.Queued != nil:
		s = "continued · answer sent, waiting for the agent"
	case e.Call != nil && e.Call.Status == projection.Continued:
		s = "continued · work continued, answer still available"
	case e.Request != nil && e.Request.answered():
		s = "open · answer sent"
	case e.Request != nil && e.Request.Timed:
		s = "open · waiting for your answer"
	case e.Request != nil:
		s = "open · waiting for your answer, no time limit"
	default:
		s = "open · not connected to this Client"
	}
	if e.Call != nil && e.Call.ParentCallID != "" {
		s += " · run_code sub-call of " + e.Call.ParentCallID
	}
	return s
}

func questionsLine(qs []holdover.Question) string {
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = q.Question
	}
	return strings.Join(texts, " | ")
}

func (f *flow) showQuestion(i, n int, q holdover.Question) {
	fmt.Fprintf(f.out, "\nQuestion %d of %d (%s): %s\n", i+1, n, q.ID, q.Question)
	if q.Header != "" {
		fmt.Fprintf(f.out, "  %s\n", q.Header)
	}
	for line := range strings.SplitSeq(strings.TrimRight(q.Detail, "\n"), "\n") {
		if line != "" {
			fmt.Fprintf(f.out, "    %s\n", line)
		}
	}
	for j, o := range q.Options {
		if o.Description != "" {
			fmt.Fprintf(f.out, "  %d) %s — %s\n", j+1, o.Label, o.Description)
		} else {
			fmt.Fprintf(f.out, "  %d) %s\n", j+1, o.Label)
		}
	}
	switch {
	case len(q.Options) == 0:
		fmt.Fprintln(f.out, "Type your answer; Enter skips.")
	case q.MultiSelect:
		fmt.Fprintln(f.out, "Type option numbers (several: 1,3), or your own answer; Enter skips.")
	default:
		fmt.Fprintln(f.out, "Type an option number, or your own answer; Enter skips.")
	}
}

func (f *flow) showAnswers(qs []holdover.Question, answers []holdover.Answer) {
	for _, q := range qs {
		text := "(no answer)"
		for _, a := range answers {
			if a.ID == q.ID {
				text = answerText(a)
			}
		}
		fmt.Fprintf(f.out, "  %s: %s\n", q.ID, text)
	}
}

func answerText(a holdover.Answer) string {
	if a.Skipped() {
		return "(skipped)"
	}
	parts := append([]string(nil), a.Selected...)
	if a.Custom != "" {
		parts = append(parts, strconv.Quote(a.Custom))
	}
	return strings.Join(parts, ", ")
}

// Describe renders an error as the terminal shows it: its code, then its
// message.
func Describe(err error) string {
	w := holdover.Wire(err)
	return string(w.Code) + ": " + w.Message
}

// workContinued is what the web card says once the call has continued.
const workContinued = "Work continued — you can still answer"

// seconds is whole seconds left, rounded up, as the web countdown shows them.
func seconds(ms int64) int64 { return max(0, (ms+999)/1000) }

func yes(line string) bool {
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "", "y", "yes":
		return true
	}
	return false
}

func ended(r *Request) bool {
	select {
	case <-r.Ended():
		return true
	default:
		return false
	}
}

// sameAnswers reports whether two batches say the same, reading a missing
// selection as an empty one.
func sameAnswers(a, b []holdover.Answer) bool {
	norm := func(as []holdover.Answer) []holdover.Answer {
		out := make([]holdover.Answer, len(as))
		for i, x := range as {
			if x.Selected == nil {
				x.Selected = []string{}
			}
			out[i] = x
		}
		return out
	}
	return reflect.DeepEqual(norm(a), norm(b))
}
