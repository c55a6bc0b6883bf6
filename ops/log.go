package ops

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
)

// LogConfig chooses the format and level of a process's logs.
type LogConfig struct {
	// Format is "text" (the default, for people) or "json" (for collectors).
	Format string
	Level  slog.Level
}

// RegisterFlags adds --log-format and --log-level to fs.
func (c *LogConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Format, "log-format", "text", "log format: text or json")
	fs.TextVar(&c.Level, "log-level", slog.LevelInfo, "log level: debug, info, warn or error")
}

// Logger returns a structured logger writing to w. Every error it logs,
// under any key, shows its chain (see [Err]); at debug level also its stack.
func (c LogConfig) Logger(w io.Writer) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: c.Level, ReplaceAttr: ReplaceErrors(c.Level)}
	switch c.Format {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", c.Format)
}

// Err is the log attribute of err under the key "err". Any handler prints
// its chain, each layer's message followed by its cause's, as err.Error()
// gives it ("append event: publish: nats: timeout"), and never the stack
// the error library records: a text handler would print that in full with
// every warning. A logger made by [LogConfig.Logger] at debug level prints
// the stack too.
func Err(err error) slog.Attr {
	if err == nil {
		return slog.String("err", "")
	}
	return slog.Any("err", chain{err})
}

// chain is a logged error that formats as its message chain whatever the
// verb, so %+v (what slog's text handler uses) prints no stack.
type chain struct{ err error }

func (c chain) Error() string              { return c.err.Error() }
func (c chain) Unwrap() error              { return c.err }
func (c chain) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, c.err.Error()) }

// ReplaceErrors is a [slog.HandlerOptions] ReplaceAttr for a handler at
// level: it writes every error-valued attribute, logged with [Err] or
// plainly as "err", err, as its chain; at debug level as a group of the
// chain (msg) and the stack of where the error was made (stack, %+v).
func ReplaceErrors(level slog.Level) func(groups []string, a slog.Attr) slog.Attr {
	debug := level <= slog.LevelDebug
	return func(_ []string, a slog.Attr) slog.Attr {
		if a.Value.Kind() != slog.KindAny {
			return a
		}
		err, ok := a.Value.Any().(error)
		if !ok {
			return a
		}
		if c, ok := err.(chain); ok {
			err = c.err
		}
		if !debug {
			return slog.String(a.Key, err.Error())
		}
		return slog.Group(a.Key, slog.String("msg", err.Error()), slog.String("stack", fmt.Sprintf("%+v", err)))
	}
}
