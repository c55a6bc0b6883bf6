package askuser_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/askuser"
)

// questionService is the consumer side of askuser.Asker: it records every
// request the tool makes and replies with a scripted outcome. The real
// service, on NATS, is tested in its own package.
type questionService struct {
	// outcome scripts the reply to both calls; nil skips every question.
	// For Ask only the answers and the error count.
	outcome func(ctx context.Context, qs []holdover.Question) (holdover.Outcome, error)

	mu    sync.Mutex
	asks  []holdover.AskRequest
	timed []holdover.AskTimedRequest
}

func (s *questionService) Ask(ctx context.Context, req holdover.AskRequest) ([]holdover.Answer, error) {
	s.mu.Lock()
	s.asks = append(s.asks, req)
	s.mu.Unlock()
	out, err := s.reply(ctx, req.Questions)
	return out.Answers, err
}

func (s *questionService) AskTimed(ctx context.Context, req holdover.AskTimedRequest) (holdover.Outcome, error) {
	s.mu.Lock()
	s.timed = append(s.timed, req)
	s.mu.Unlock()
	return s.reply(ctx, req.Questions)
}

func (s *questionService) reply(ctx context.Context, qs []holdover.Question) (holdover.Outcome, error) {
	if s.outcome == nil {
		return holdover.Outcome{Answers: skipAll(qs)}, nil
	}
	return s.outcome(ctx, qs)
}

// requests returns copies of what the tool asked so far.
func (s *questionService) requests() ([]holdover.AskRequest, []holdover.AskTimedRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]holdover.AskRequest(nil), s.asks...), append([]holdover.AskTimedRequest(nil), s.timed...)
}

// requireNothingAsked checks that a rejected call never reached the service.
func (s *questionService) requireNothingAsked(t testing.TB) {
	t.Helper()
	asks, timed := s.requests()
	require.Empty(t, asks, "blocking asks")
	require.Empty(t, timed, "timed asks")
}

func skipAll(qs []holdover.Question) []holdover.Answer {
	out := make([]holdover.Answer, len(qs))
	for i, q := range qs {
		out[i] = holdover.Answer{ID: q.ID}
	}
	return out
}

func answering(answers ...holdover.Answer) func(context.Context, []holdover.Question) (holdover.Outcome, error) {
	return func(context.Context, []holdover.Question) (holdover.Outcome, error) {
		return holdover.Outcome{Answers: answers}, nil
	}
}

func pendingOutcome(context.Context, []holdover.Question) (holdover.Outcome, error) {
	return holdover.Outcome{Pending: true}, nil
}

func failing(err error) func(context.Context, []holdover.Question) (holdover.Outcome, error) {
	return func(context.Context, []holdover.Question) (holdover.Outcome, error) {
		return holdover.Outcome{}, err
	}
}

// newTool registers a tool over a fresh recording service.
func newTool(t testing.TB, cfg askuser.Config) (*askuser.Tool, *questionService) {
	t.Helper()
	svc := &questionService{}
	tool, err := askuser.New(cfg, svc)
	require.NoError(t, err)
	return tool, svc
}

var (
	liveRoot = &holdover.AgentRef{Instance: "agent-1", Epoch: 3}
	timed    = askuser.Config{Mode: askuser.ModeTimed}
)

// call is a tool call from the live root with the given arguments.
func call(callID, args string) askuser.Call {
	return askuser.Call{Session: "s-1", CallID: callID, Agent: liveRoot, Arguments: []byte(args)}
}

// oneQuestion is the arguments of a one-question call, with extra
// top-level members appended (such as `,"timeout":30`).
func oneQuestion(extra string) string {
	return `{"questions":[{"id":"db","question":"Which database?","options":[{"label":"Postgres (Recommended)"},{"label":"SQLite"}]}]` + extra + `}`
}
