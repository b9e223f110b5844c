package tools

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
)

// ToolExecutor is a backend that runs tool calls.
type ToolExecutor interface {
	// Kind is the kind of tools this executor handles.
	Kind() ToolKind
	// CanExecute reports whether this executor handles the tool.
	CanExecute(def Definition) bool
	// Execute runs one call. A returned error is fed back to the model as
	// an is_error result; it never fails the response.
	Execute(ctx context.Context, call ToolCall) (*ToolResult, error)
}

// ErrClientExecuted is returned by FunctionExecutor.Execute: function tools
// run on the client, never on the server.
var ErrClientExecuted = errors.New("function tools are executed by the client")

// FunctionExecutor is the built-in executor of client-executed function
// tools. It claims every function tool so the loop knows to pause with
// requires_action, and refuses to execute them.
type FunctionExecutor struct{}

// Kind returns KindFunction.
func (FunctionExecutor) Kind() ToolKind { return KindFunction }

// CanExecute reports whether def is a function tool.
func (FunctionExecutor) CanExecute(def Definition) bool { return def.Kind == KindFunction }

// Execute always fails with ErrClientExecuted.
func (FunctionExecutor) Execute(context.Context, ToolCall) (*ToolResult, error) {
	return nil, ErrClientExecuted
}

// Lifecycle is implemented by hosted tools that hold resources.
type Lifecycle interface {
	Initialize(ctx context.Context) error
	Shutdown(ctx context.Context) error
}

// Registry holds the hosted tools by name. The zero value is not usable;
// use NewRegistry.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]Hosted
	life  map[string]Lifecycle
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{tools: map[string]Hosted{}, life: map[string]Lifecycle{}}
}

// Register adds a hosted tool; a duplicate name is an error. When lc is
// non-nil its Initialize and Shutdown run with the registry's.
func (r *Registry) Register(h Hosted, lc Lifecycle) error {
	if h.Definition.Name == "" || h.Handler == nil {
		return fmt.Errorf("tools: hosted tool needs a name and a handler")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.tools[h.Definition.Name]; dup {
		return fmt.Errorf("tools: hosted tool %q registered twice", h.Definition.Name)
	}
	h.Definition.Kind = KindHosted
	r.tools[h.Definition.Name] = h
	if lc != nil {
		r.life[h.Definition.Name] = lc
	}
	return nil
}

// Get returns the named tool.
func (r *Registry) Get(name string) (Hosted, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	h, ok := r.tools[name]
	return h, ok
}

// Lookup returns the named tool's definition.
func (r *Registry) Lookup(name string) (Definition, bool) {
	h, ok := r.Get(name)
	return h.Definition, ok
}

// List returns every definition, sorted by name.
func (r *Registry) List() []Definition {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Definition, 0, len(r.tools))
	for _, h := range r.tools {
		out = append(out, h.Definition)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Initialize initializes every tool with a lifecycle.
func (r *Registry) Initialize(ctx context.Context) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for name, lc := range r.life {
		if err := lc.Initialize(ctx); err != nil {
			return fmt.Errorf("tools: initialize %s: %w", name, err)
		}
	}
	return nil
}

// Shutdown shuts every tool with a lifecycle down, returning all errors.
func (r *Registry) Shutdown(ctx context.Context) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var errs []error
	for name, lc := range r.life {
		if err := lc.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("tools: shutdown %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// LocalExecutor runs the registry's hosted tools in-process.
type LocalExecutor struct {
	Registry *Registry
}

// Kind returns KindHosted.
func (LocalExecutor) Kind() ToolKind { return KindHosted }

// CanExecute reports whether def is a hosted tool in the registry.
func (e LocalExecutor) CanExecute(def Definition) bool {
	if def.Kind != KindHosted {
		return false
	}
	_, ok := e.Registry.Get(def.Name)
	return ok
}

// Execute runs the tool's handler. A handler error becomes an is_error
// result; a panic is recovered into one.
func (e LocalExecutor) Execute(ctx context.Context, call ToolCall) (*ToolResult, error) {
	h, ok := e.Registry.Get(call.Name)
	if !ok {
		return nil, fmt.Errorf("unknown hosted tool %q", call.Name)
	}
	return RunHandler(ctx, h.Handler, call), nil
}

// RunHandler runs a handler, turning its error or panic into an is_error result.
func RunHandler(ctx context.Context, h Handler, call ToolCall) (res *ToolResult) {
	defer func() {
		if p := recover(); p != nil {
			res = &ToolResult{CallID: call.ID, Output: fmt.Sprintf("tool %s panicked: %v", call.Name, p), IsError: true}
		}
	}()
	out, err := h(ctx, call)
	if err != nil {
		return &ToolResult{CallID: call.ID, Output: err.Error(), IsError: true}
	}
	return &ToolResult{CallID: call.ID, Output: out}
}
