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

// Logger returns a structured logger writing to w.
func (c LogConfig) Logger(w io.Writer) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: c.Level}
	switch c.Format {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", c.Format)
}

// Err is the log attribute of err: its message only. Errors built with
// the error library carry stack traces that slog would print in full.
func Err(err error) slog.Attr {
	if err == nil {
		return slog.String("err", "")
	}
	return slog.String("err", err.Error())
}
