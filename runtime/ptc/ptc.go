// Package ptc runs programmatic tool calls: a JavaScript program, written
// by the model, that calls the agent's tools as functions. It is the engine
// behind the run_code tool.
//
// The package owns the JavaScript sandbox (goja): the functions a program
// sees, its output and its time limit. It never runs a tool itself and never
// records anything: each call goes to the [Dispatch] function its caller
// supplies, which runs the tool and records the sub-call (tool/ptc-dispatch).
// A program has no file, network or process access; it reaches the world
// only through the tools it is given.
package ptc

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dop251/goja"
	"github.com/jonboulle/clockwork"

	"github.com/holdover-dev/holdover"
)

// Dispatch runs tool name with JSON arguments on behalf of the program.
// ctx ends when the program's time runs out.
type Dispatch func(ctx context.Context, name string, args json.RawMessage) holdover.ToolResult

// Options bound a program.
type Options struct {
	// Tools are the tool names the program may call. Each is also a
	// function of the global `tools` object: tools.sleep({ms: 10}).
	Tools []string
	// Timeout bounds the program's run time, tool calls included. 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// Clock measures the timeout; nil is the real clock.
	Clock clockwork.Clock
}

// DefaultTimeout is the run time of a program when Options names none.
const DefaultTimeout = 5 * time.Minute

// MaxOutputBytes bounds what a program prints; the rest is cut.
const MaxOutputBytes = 64 << 10

// Run runs program and returns what it printed with console.log, followed
// by its completion value when that is not undefined. A program that
// throws, does not parse or runs out of time fails with BAD_REQUEST and
// the output it printed before.
func Run(ctx context.Context, program string, dispatch Dispatch, opts Options) (string, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	clock := opts.Clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	vm := goja.New()
	vm.SetFieldNameMapper(goja.TagFieldNameMapper("json", true))
	out := &output{}
	s := &sandbox{vm: vm, ctx: ctx, dispatch: dispatch, out: out, allowed: map[string]bool{}}
	if err := s.install(opts.Tools); err != nil {
		return "", err
	}

	// Interrupt stops the program at its next instruction; cancelling ctx
	// ends a tool call that is blocking it meanwhile.
	var (
		mu     sync.Mutex
		reason string
	)
	stop := func(why string) {
		mu.Lock()
		if reason == "" {
			reason = why
		}
		mu.Unlock()
		vm.Interrupt(why)
		cancel()
	}
	timer := clock.AfterFunc(timeout, func() { stop(fmt.Sprintf("the program ran past its %s time limit", timeout)) })
	defer timer.Stop()
	go func() {
		<-ctx.Done()
		stop("the run was cancelled")
	}()

	value, err := vm.RunString(program)
	if err != nil {
		// When the limit or a cancellation stopped the program, that is the
		// reason, whatever a cancelled tool call made the program throw.
		mu.Lock()
		why := reason
		mu.Unlock()
		if why == "" {
			why = describe(err)
		}
		return out.String(), holdover.Newf(holdover.CodeBadRequest, "run_code: %s", why)
	}
	if value != nil && !goja.IsUndefined(value) {
		out.line(s.show(value))
	}
	return out.String(), nil
}

// describe renders a thrown value or a syntax error without Go internals.
func describe(err error) string {
	if ex, ok := err.(*goja.Exception); ok {
		return ex.Value().String()
	}
	return err.Error()
}

// sandbox is the global environment of one program.
type sandbox struct {
	vm       *goja.Runtime
	ctx      context.Context
	dispatch Dispatch
	out      *output
	allowed  map[string]bool
}

// install defines callTool, tools.<name> and console.log.
func (s *sandbox) install(names []string) error {
	tools := s.vm.NewObject()
	for _, name := range names {
		s.allowed[name] = true
		if err := tools.Set(name, func(call goja.FunctionCall) goja.Value {
			return s.call(name, call.Argument(0))
		}); err != nil {
			return holdover.Wrapf(err, holdover.CodeInternal, "define tools.%s", name)
		}
	}
	console := s.vm.NewObject()
	if err := console.Set("log", func(call goja.FunctionCall) goja.Value {
		parts := make([]string, len(call.Arguments))
		for i, a := range call.Arguments {
			parts[i] = s.show(a)
		}
		s.out.line(strings.Join(parts, " "))
		return goja.Undefined()
	}); err != nil {
		return holdover.Wrap(err, holdover.CodeInternal, "define console.log")
	}
	for name, v := range map[string]any{
		"tools":   tools,
		"console": console,
		"callTool": func(call goja.FunctionCall) goja.Value {
			return s.call(call.Argument(0).String(), call.Argument(1))
		},
	} {
		if err := s.vm.Set(name, v); err != nil {
			return holdover.Wrapf(err, holdover.CodeInternal, "define %s", name)
		}
	}
	return nil
}

// call runs one tool call for the program. The result's text comes back as
// a value (parsed when it is JSON); a failed call throws an Error whose
// code property is the tool's error code.
func (s *sandbox) call(name string, args goja.Value) goja.Value {
	if !s.allowed[name] {
		panic(s.vm.NewTypeError(fmt.Sprintf("there is no tool %q here; the tools are: %s", name, strings.Join(s.names(), ", "))))
	}
	raw := json.RawMessage(`{}`)
	if args != nil && !goja.IsUndefined(args) && !goja.IsNull(args) {
		data, err := json.Marshal(args.Export())
		if err != nil {
			panic(s.vm.NewTypeError(fmt.Sprintf("the arguments of %s are not JSON: %v", name, err)))
		}
		raw = data
	}
	res := s.dispatch(s.ctx, name, raw)
	if res.IsError {
		e, err := s.vm.New(s.vm.Get("Error"), s.vm.ToValue(res.Text))
		if err != nil {
			panic(s.vm.NewTypeError(res.Text))
		}
		_ = e.Set("code", string(res.Code)) // setting a property of a fresh Error cannot fail
		_ = e.Set("tool", name)
		panic(e)
	}
	var parsed any
	if json.Unmarshal([]byte(res.Text), &parsed) == nil {
		return s.vm.ToValue(parsed)
	}
	return s.vm.ToValue(res.Text)
}

func (s *sandbox) names() []string { return slices.Sorted(maps.Keys(s.allowed)) }

// show renders a value for output: strings as they are, everything else
// as JSON where it has a JSON form.
func (s *sandbox) show(v goja.Value) string {
	if v == nil || goja.IsUndefined(v) {
		return "undefined"
	}
	if str, ok := v.Export().(string); ok {
		return str
	}
	data, err := json.Marshal(v.Export())
	if err != nil {
		return v.String()
	}
	return string(data)
}

// output collects a program's printed lines up to MaxOutputBytes.
type output struct {
	b   strings.Builder
	cut bool
}

func (o *output) line(s string) {
	if o.cut {
		return
	}
	if o.b.Len()+len(s)+1 > MaxOutputBytes {
		o.b.WriteString("… (output cut at 64 KiB)\n")
		o.cut = true
		return
	}
	o.b.WriteString(s)
	o.b.WriteByte('\n')
}

func (o *output) String() string { return strings.TrimSuffix(o.b.String(), "\n") }
