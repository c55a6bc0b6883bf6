package askuser_test

import (
	"context"
	"strings"
	"testing"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/askuser"
)

// FuzzCall feeds arbitrary argument bytes to both modes. Whatever the
// model sends, the tool must not panic, must only ask the service for
// validated questions with a valid wait, and must return either an answer
// batch for those questions, the pending object for this call, or a
// structured error.
func FuzzCall(f *testing.F) {
	for _, seed := range []string{
		oneQuestion(""),
		oneQuestion(`,"timeout":30`),
		oneQuestion(`,"timeout":-1`),
		oneQuestion(`,"timeout":0`),
		oneQuestion(`,"timeout":1.5`),
		oneQuestion(`,"timeout":2147483`),
		oneQuestion(`,"timeout":2147484`),
		oneQuestion(`,"timeout":"60"`),
		oneQuestion(`,"timeout":null`),
		oneQuestion(`,"extra":1`),
		planReview + `}`,
		planReview + `,"timeout":60}`,
		`{"questions":[{"id":"q","question":"A?"},{"id":"q","question":"B?"}]}`,
		`{"questions":[{"id":"a","question":"A?","multiSelect":true,"options":[{"label":"x"},{"label":"y (Recommended)"}]},{"id":"b","question":"B?"}],"timeout":4}`,
		`{"questions":[]}`,
		`{}`,
		`null`,
		``,
		`{"questions":[{"id":"q","question":"Q?"}]} trailing`,
		"\xff\xfe",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		for _, mode := range []string{askuser.ModeLegacy, askuser.ModeTimed} {
			svc := &questionService{outcome: pendingOnEvenCount}
			tool, err := askuser.New(askuser.Config{Mode: mode, DefaultTimeout: 7}, svc)
			if err != nil {
				t.Fatal(err)
			}
			c := call("call_f", string(args))
			res := tool.Call(t.Context(), c)
			asks, timedAsks := svc.requests()
			checkRequests(t, mode, asks, timedAsks)

			switch {
			case res.IsError:
				if res.Code == "" || !strings.HasPrefix(res.Text, string(res.Code)+": ") {
					t.Fatalf("mode %s: unstructured error %+v", mode, res)
				}
				if res.Code == holdover.CodeInternal {
					t.Fatalf("mode %s: bad input must not be an internal error: %q", mode, res.Text)
				}
			case len(asks)+len(timedAsks) != 1:
				t.Fatalf("mode %s: a result %q without exactly one service call", mode, res.Text)
			default:
				if p, ok := holdover.ParsePending(res.Text); ok {
					if mode != askuser.ModeTimed || len(timedAsks) != 1 || p.CallID != c.CallID {
						t.Fatalf("mode %s: pending %q for the wrong call or path", mode, res.Text)
					}
					break
				}
				batch, err := holdover.ParseBatch([]byte(res.Text))
				if err != nil {
					t.Fatalf("mode %s: result %q is neither pending nor answers: %v", mode, res.Text, err)
				}
				qs := askedQuestions(asks, timedAsks)
				if err := holdover.ValidateBatch(qs, batch.Answers); err != nil {
					t.Fatalf("mode %s: answers %q do not match the questions: %v", mode, res.Text, err)
				}
			}
		}
	})
}

// pendingOnEvenCount skips every question; a timed wait for an even number
// of questions ends pending instead, so the fuzzer reaches both results.
func pendingOnEvenCount(_ context.Context, qs []holdover.Question) (holdover.Outcome, error) {
	return holdover.Outcome{Answers: skipAll(qs), Pending: len(qs)%2 == 0}, nil
}

// checkRequests asserts what may reach the service: validated questions,
// unkeyed requests only in legacy mode, keyed ones with a valid wait in timed mode.
func checkRequests(t *testing.T, mode string, asks []holdover.AskRequest, timedAsks []holdover.AskTimedRequest) {
	t.Helper()
	for _, req := range asks {
		if err := holdover.ValidateQuestions(req.Questions); err != nil {
			t.Fatalf("mode %s: asked invalid questions: %v", mode, err)
		}
		if err := holdover.ValidateIntent(req.Intent, req.Questions); err != nil {
			t.Fatalf("mode %s: asked with an invalid intent: %v", mode, err)
		}
		if (req.CallID != "") != (mode == askuser.ModeTimed) {
			t.Fatalf("mode %s: blocking ask keyed %q", mode, req.CallID)
		}
	}
	for _, req := range timedAsks {
		if mode != askuser.ModeTimed {
			t.Fatalf("mode %s: a timed ask", mode)
		}
		if err := holdover.ValidateQuestions(req.Questions); err != nil {
			t.Fatalf("asked invalid questions: %v", err)
		}
		if req.TimeoutMs < 1000 || req.TimeoutMs > holdover.MaxTimeoutSeconds*1000 || req.TimeoutMs%1000 != 0 || req.CallID == "" || req.Agent == nil {
			t.Fatalf("invalid timed request %+v", req)
		}
	}
}

func askedQuestions(asks []holdover.AskRequest, timedAsks []holdover.AskTimedRequest) []holdover.Question {
	if len(asks) == 1 {
		return asks[0].Questions
	}
	return timedAsks[0].Questions
}
