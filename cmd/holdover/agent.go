package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/holdover-dev/holdover/askuser"
	"github.com/holdover-dev/holdover/cmd/internal/agentproc"
	"github.com/holdover-dev/holdover/lease"
	"github.com/holdover-dev/holdover/ops"
	"github.com/holdover-dev/holdover/runtime/model/openai"
)

const agentSummary = "run an agent runtime for a Session and/or the resume pool"

// runAgent runs one agent runtime process against NATS: a scripted model
// from --script, or an OpenAI-compatible model from --model-url and
// friends (defaults from OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL).
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		natsCfg ops.NATSConfig
		logCfg  ops.LogConfig
		cfg     agentproc.Config
		script  string
		metrics string
	)
	cfg.OpenAI = openai.FromEnv(os.Getenv)
	fs := newFlags("agent", "", agentSummary, stderr)
	natsCfg.RegisterFlags(fs)
	logCfg.RegisterFlags(fs)
	fs.StringVar(&cfg.Session, "session", "", "Session to serve from the start")
	fs.StringVar(&cfg.Prompt, "prompt", "", "first user message of a new Session")
	promptCreds := fs.String("prompt-creds", "", "NATS credentials that may queue --prompt, a user's message (admin's; agent credentials may not); default --creds")
	fs.BoolVar(&cfg.Pool, "pool", true, "take resume requests for Sessions nobody runs (D7)")
	fs.StringVar(&script, "script", "", "file of a scripted model (see runtime/model/scripted); empty uses the OpenAI-compatible model")
	fs.StringVar(&cfg.OpenAI.BaseURL, "model-url", cfg.OpenAI.BaseURL, "Chat Completions API root, e.g. https://api.deepseek.com/v1 (env OPENAI_BASE_URL)")
	fs.StringVar(&cfg.OpenAI.Model, "model", cfg.OpenAI.Model, "model name (env OPENAI_MODEL)")
	fs.StringVar(&cfg.Ask.Mode, "ask-mode", askuser.ModeLegacy, "ask_user_question mode: legacy (blocking) or timed")
	fs.Int64Var(&cfg.Ask.DefaultTimeout, "ask-timeout", askuser.DefaultTimeout, "default timeout in seconds of a timed question (-1 waits until answered)")
	fs.StringVar(&cfg.System, "system", "", "system prompt")
	fs.DurationVar(&cfg.ReleaseBound, "release-bound", lease.DefaultReleaseBound,
		"how long the root lease outlives this process's connection: how soon an answer resumes its Sessions elsewhere after it dies (D7)")
	fs.StringVar(&metrics, "metrics-addr", "", "address of /metrics and /healthz (the resume and discard requests refused for their origin); empty serves none")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("agent takes no arguments, got %q", fs.Args())}
	}
	logger, err := logCfg.Logger(stderr)
	if err != nil {
		return usageError{err.Error()}
	}
	if script != "" {
		if cfg.Script, err = agentproc.ReadScript(script); err != nil {
			return err
		}
	}
	cfg.Logger = logger
	nc, _, err := natsCfg.Connect("holdover-agent", logger)
	if err != nil {
		return err
	}
	defer nc.Close()
	if *promptCreds != "" && cfg.Prompt != "" {
		promptCfg := natsCfg
		promptCfg.Creds = *promptCreds
		pc, _, err := promptCfg.Connect("holdover-agent-prompt", logger)
		if err != nil {
			return err
		}
		defer pc.Close()
		cfg.PromptConn = pc
	}
	cfg.Metrics = ops.NewMetrics()
	agent, err := agentproc.Component(nc, cfg)
	if err != nil {
		return err
	}
	components := []ops.Component{ops.NATSConnection(nc), agent}
	if metrics != "" {
		components = append(components, ops.HTTPServer("metrics", metrics, ops.Handler(cfg.Metrics, ops.NATSConnected(nc)), logger))
	}
	return ops.Run(ctx, logger, components...)
}
