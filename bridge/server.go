package bridge

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/holdover-dev/holdover"
	"github.com/holdover-dev/holdover/events"
	"github.com/holdover-dev/holdover/ops"
)

// instructions tell the host's model what the server is for.
const instructions = `Holdover lets you ask the user questions without blocking on them. ` +
	`ask_user_question waits at most its timeout; when it returns pending, go on with work that does not depend on the answer. ` +
	`A late answer reaches you later as a user message of kind "answer_to_pending_question" ` +
	`(added to your context by a hook, appended to your next ask_user_question result, or returned by pending_answers).`

// Server serves a bridge's tools over MCP, one Holdover Session per host
// session. SessionFor names the Session of an MCP session; two MCP
// sessions of one server named to the same Session are refused, as two
// hosts are by the live-root rules.
type Server struct {
	b          *Bridge
	sessionFor func(*mcp.ServerSession) string
	srv        *mcp.Server

	mu    sync.Mutex
	hosts map[string]*slot // by Holdover Session id
}

// slot is one Holdover Session this server serves, opened at its host
// session's first tool call, or at start (Preopen).
type slot struct {
	owner *mcp.ServerSession // nil: opened at start, for the first host session to come
	once  sync.Once
	host  *Host
	err   error
}

// NewServer returns the MCP server of b. version is the server's version
// as hosts see it.
func NewServer(b *Bridge, version string, sessionFor func(*mcp.ServerSession) string) *Server {
	s := &Server{b: b, sessionFor: sessionFor, hosts: map[string]*slot{}}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "holdover", Title: "Holdover timed user questions", Version: version},
		&mcp.ServerOptions{Instructions: instructions, Logger: b.log})
	tools := b.Tools()
	s.srv.AddTool(mcpTool(tools[0]), s.callAsk)
	s.srv.AddTool(mcpTool(tools[1]), s.callPending)
	return s
}

// MCP is the SDK server, to run on a transport.
func (s *Server) MCP() *mcp.Server { return s.srv }

func mcpTool(t events.ToolSchema) *mcp.Tool {
	return &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
}

// Preopen opens Session sid before its host session is connected, when
// the Session is known at start (stdio serves one host session), so a host
// restarted after a kill repairs the calls it left as it starts, before
// its model calls anything. Opening can wait for a dead host's lease to
// end, so it runs aside; a failure is logged and the first tool call tries
// again and reports it.
func (s *Server) Preopen(ctx context.Context, sid string) {
	sl := &slot{}
	s.mu.Lock()
	if s.hosts[sid] != nil {
		s.mu.Unlock()
		return
	}
	s.hosts[sid] = sl
	s.mu.Unlock()
	go func() {
		if _, err := s.open(ctx, sid, sl, nil); err != nil {
			s.b.log.Warn("open the host's Session at start; its first tool call tries again", "session", sid, ops.Err(err))
		}
	}()
}

// host returns the Host of ss's Session, opening it if it is not open.
func (s *Server) host(ctx context.Context, ss *mcp.ServerSession) (*Host, error) {
	sid := s.sessionFor(ss)
	s.mu.Lock()
	sl := s.hosts[sid]
	if sl == nil {
		sl = &slot{owner: ss}
		s.hosts[sid] = sl
	}
	if sl.owner == nil {
		sl.owner = ss // the host session of a Session opened at start
	}
	owner := sl.owner
	s.mu.Unlock()
	if owner != ss {
		return nil, holdover.Newf(holdover.CodeConflict,
			"session %s is already served by another host session of this server: two hosts may not serve one Session; give each its own Session", sid)
	}
	return s.open(ctx, sid, sl, ss)
}

// open opens sl's Session once; ss, when known, releases it as it ends.
// A failed open leaves the slot, so the next call tries again.
func (s *Server) open(ctx context.Context, sid string, sl *slot, ss *mcp.ServerSession) (*Host, error) {
	sl.once.Do(func() {
		sl.host, sl.err = s.b.Open(ctx, sid)
		if sl.err != nil || ss == nil {
			return // a Session opened at start is released by Close
		}
		go func() {
			_ = ss.Wait()
			s.release(sid, sl)
		}()
	})
	if sl.err != nil {
		s.mu.Lock()
		if s.hosts[sid] == sl {
			delete(s.hosts, sid) // the next call tries again
		}
		s.mu.Unlock()
	}
	return sl.host, sl.err
}

func (s *Server) release(sid string, sl *slot) {
	s.mu.Lock()
	if s.hosts[sid] == sl {
		delete(s.hosts, sid)
	}
	s.mu.Unlock()
	if sl.host != nil {
		sl.host.Release(context.Background())
	}
}

// Close releases every Session the server serves.
func (s *Server) Close() {
	s.mu.Lock()
	slots := s.hosts
	s.hosts = map[string]*slot{}
	s.mu.Unlock()
	for _, sl := range slots {
		if sl.host != nil {
			sl.host.Release(context.Background())
		}
	}
}

func (s *Server) callAsk(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	h, err := s.host(ctx, req.Session)
	if err != nil {
		return toolError(err), nil
	}
	out, err := h.Ask(ctx, req.Params.Arguments)
	if err != nil {
		return toolError(err), nil
	}
	res := result(out.Result)
	for _, d := range out.Late {
		res.Content = append(res.Content, &mcp.TextContent{Text: d.Text()})
	}
	return res, nil
}

func (s *Server) callPending(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	h, err := s.host(ctx, req.Session)
	if err != nil {
		return toolError(err), nil
	}
	late, err := h.PendingAnswers(ctx)
	if err != nil {
		h.lg.Warn("pending_answers failed; the replies stay queued", ops.Err(err))
		return toolError(err), nil
	}
	if len(late) == 0 {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: NoAnswersText}}}, nil
	}
	res := &mcp.CallToolResult{}
	for _, d := range late {
		res.Content = append(res.Content, &mcp.TextContent{Text: d.Text()})
	}
	return res, nil
}

// ToolErrorContent is the structured content of a tool error: Holdover's
// code and message, beside the text "CODE: message" the model reads.
type ToolErrorContent struct {
	Error holdover.Error `json:"error"`
}

// result renders a tool result: a failure is an MCP tool error carrying
// Holdover's code.
func result(r holdover.ToolResult) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r.Text}}, IsError: r.IsError}
	if r.IsError {
		res.StructuredContent = ToolErrorContent{Error: holdover.Error{Code: r.Code, Message: r.Text}}
	}
	return res
}

func toolError(err error) *mcp.CallToolResult {
	w := holdover.Wire(err)
	return result(holdover.ToolResult{Text: string(w.Code) + ": " + w.Message, IsError: true, Code: w.Code})
}
