package tools

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/lambent/lambent/pkg/tooldef"
)

// Lifecycle is implemented by hosted tools that hold resources.
type Lifecycle interface {
	Initialize(ctx context.Context) error
	Shutdown(ctx context.Context) error
}

// Registry holds the hosted tools that run in-process, by name: a Catalog
// of them and their ToolExecutor. The zero value is not usable; use
// NewRegistry.
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

// Lookup returns the named tool's definition and the registry as its
// executor (Catalog).
func (r *Registry) Lookup(name string) (tooldef.ToolDefinition, ToolExecutor, bool) {
	h, ok := r.Get(name)
	if !ok {
		return tooldef.ToolDefinition{}, nil, false
	}
	return h.Definition, r, true
}

// List returns every definition, sorted by name.
func (r *Registry) List() []tooldef.ToolDefinition {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]tooldef.ToolDefinition, 0, len(r.tools))
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

// Execute runs the named tool's handler in-process (ToolExecutor). A
// handler error becomes an is_error result; a panic is recovered into one.
func (r *Registry) Execute(ctx context.Context, call ToolCall) (*ToolResult, error) {
	h, ok := r.Get(call.Name)
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
