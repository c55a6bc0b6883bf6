// Package agentproc assembles an agent runtime process, shared by
// `holdover agent` and the demo agent of `holdover dev`.
//
// It only chooses a model and wires the runtime; the agent loop lives in
// package runtime.
package agentproc

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/askuser"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/runtime"
	"github.com/holdover-dev/holdover/runtime/model"
	"github.com/holdover-dev/holdover/runtime/model/openai"
	"github.com/holdover-dev/holdover/runtime/model/scripted"
	"github.com/holdover-dev/holdover/sessionlog"
	"github.com/holdover-dev/holdover/streams"
)

// Config configures an agent process.
type Config struct {
	// Session is served from the start (with Prompt when its log is
	// empty); empty serves only resume requests.
	Session string
	Prompt  string
	// PromptConn queues Prompt. A prompt is a user's message in the
	// Session's inbox, which agent credentials may not write (package
	// auth): with them, give a connection that may (admin's). Nil queues
	// it on the agent's own connection.
	PromptConn *nats.Conn
	// Pool joins the resume pool, so an answer to a Session nobody runs
	// brings it back here (D7).
	Pool bool
	// Script is a scripted model's text; empty uses OpenAI.
	Script string
	// OpenAI configures an OpenAI-compatible Chat Completions model.
	OpenAI openai.Config
	// Ask configures ask_user_question.
	Ask      askuser.Config
	System   string
	Instance string
	// ReleaseBound is how long the runtime's root lease outlives its
	// connection: how soon an answer notices the process died (D7).
	ReleaseBound time.Duration
	Logger       *slog.Logger
	// Metrics receives the runtime's collectors; nil keeps them private.
	Metrics *ops.Metrics
}

// ReadScript reads a scripted model's file.
func ReadScript(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", holdover.Newf(holdover.CodeBadRequest, "script: %v", err)
	}
	return string(data), nil
}

// Component checks cfg and returns the runtime as one component of
// [ops.Run]: it serves cfg.Session and, with Pool, resume requests, until
// its context ends. It is ready once it is the Session's live root and
// in the pool.
func Component(nc *nats.Conn, cfg Config) (ops.Component, error) {
	root, child, err := models(cfg)
	if err != nil {
		return ops.Component{}, err
	}
	if cfg.Session == "" && !cfg.Pool {
		return ops.Component{}, holdover.New(holdover.CodeBadRequest, "an agent serves a Session, the resume pool, or both")
	}
	rcfg := runtime.Config{
		Conn: nc, Model: root, ChildModel: child, System: cfg.System,
		Ask: cfg.Ask, Instance: cfg.Instance, ReleaseBound: cfg.ReleaseBound, Logger: cfg.Logger, Metrics: cfg.Metrics,
		Session: cfg.Session,
	}
	if cfg.PromptConn == nil {
		cfg.PromptConn = nc
	}
	return ops.Component{Name: "agent", Run: func(ctx context.Context, ready func()) error {
		if !cfg.Pool {
			if err := queuePrompt(ctx, nc, cfg); err != nil {
				return err
			}
			return runtime.Run(ctx, rcfg, ready)
		}
		rt, err := runtime.New(ctx, rcfg)
		if err != nil {
			return err
		}
		defer rt.Close()
		stop, err := rt.ServePool(ctx)
		if err != nil {
			return err
		}
		defer stop()
		if cfg.Session != "" {
			if err := startSession(ctx, nc, rt, cfg); err != nil {
				return err
			}
		}
		ready()
		<-ctx.Done()
		return nil
	}}, nil
}

// startSession runs cfg.Session in rt and queues the prompt when the
// Session is new.
func startSession(ctx context.Context, nc *nats.Conn, rt *runtime.Runtime, cfg Config) error {
	if err := queuePrompt(ctx, nc, cfg); err != nil {
		return err
	}
	_, err := rt.Start(ctx, cfg.Session)
	return err
}

// queuePrompt queues cfg.Prompt on cfg.PromptConn when the Session's log
// (read on the agent's nc) is empty. The prompt's fixed message id makes a
// quick restart's second prompt a duplicate the inbox drops, not a second
// message; the agent splices it whenever it reads its inbox.
func queuePrompt(ctx context.Context, nc *nats.Conn, cfg Config) error {
	if cfg.Prompt == "" || cfg.Session == "" {
		return nil
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return holdover.Wrap(err, holdover.CodeInternal, "jetstream")
	}
	stream, err := js.Stream(ctx, streams.SessionsStream)
	if err != nil {
		return holdover.Wrap(err, holdover.CodeInternal, "find the Session logs")
	}
	last, err := sessionlog.New(js, stream).Last(ctx, cfg.Session)
	if err != nil || last > 0 {
		return err
	}
	promptJS, err := jetstream.New(cfg.PromptConn)
	if err != nil {
		return holdover.Wrap(err, holdover.CodeInternal, "jetstream")
	}
	_, err = runtime.Steer(ctx, promptJS, cfg.Session, "prompt-"+cfg.Session, cfg.Prompt)
	return err
}

func models(cfg Config) (root, child model.Model, err error) {
	if cfg.Script != "" {
		s, err := scripted.Parse(cfg.Script)
		if err != nil {
			return nil, nil, err
		}
		return s.Model(), s.Child(), nil
	}
	m, err := openai.New(cfg.OpenAI)
	if err != nil {
		return nil, nil, err
	}
	return m, m, nil
}
