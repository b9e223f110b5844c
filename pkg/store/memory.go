package store

import (
	"container/list"
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/tenant"
)

// Memory defaults.
const (
	// DefaultMemoryMaxEntries bounds a Memory store without MaxEntries.
	DefaultMemoryMaxEntries = 10000
	// DefaultMemoryTTL is the retention of a Memory store without TTL.
	DefaultMemoryTTL = 24 * time.Hour
	// DefaultMemoryMaxBytes bounds the bytes held by a Memory store without
	// MaxBytes (256 MiB).
	DefaultMemoryMaxBytes = 256 << 20
)

// MemoryConfig configures NewMemory. The zero value works.
type MemoryConfig struct {
	// MaxEntries bounds the number of records (default 10000); when full,
	// Create evicts the oldest record of the tenant holding the most
	// records.
	MaxEntries int
	// MaxBytes bounds the bytes the records and their events hold, as
	// measured by their Go values (default DefaultMemoryMaxBytes). A write
	// that would pass it evicts other records first, each time the oldest
	// of the tenant holding the most bytes; a record larger than MaxBytes
	// by itself is refused with a *TooLargeError.
	MaxBytes int64
	// TTL is the retention of records stored without ExpiresAt (default 24h).
	TTL time.Duration
}

// Memory is a ResponseStore in process memory: bounded by entries and by
// bytes, with expiry, keyed by (tenant, id), safe for concurrent use.
//
// The bounds are shared fairly between tenants: when one is reached, the
// record evicted is the oldest of the tenant holding the most (bytes, or
// records), never the record being written. A tenant that holds no more
// than its fair share (the bound divided by the tenants holding records)
// is therefore never evicted by another tenant's writes: while the store
// is over its bound, the tenant holding the most holds more than that
// share. Choosing the tenant scans the tenants holding records, once per
// eviction. It keeps its own copies of the
// Response struct, its Lambent field and the record's slices and maps, so
// a caller that changes its Record (or a Record returned by Get) after the
// call does not change what is stored. Items and content parts are values and are shared;
// stored records are treated as immutable.
//
// Expired records are absent on every read and are removed lazily: when
// read, and from the oldest end of the store on every Create. It is also
// the store.EventLog of background responses: their events live and go
// with the record; and the store.ConversationStore of conversations
// (memconv.go), bounded apart from the responses.
type Memory struct {
	maxEntries int
	maxBytes   int64
	ttl        time.Duration

	mu      sync.Mutex
	entries map[memKey]*list.Element // values are *memEntry
	order   *list.List               // oldest first
	bytes   int64                    // sum of the entries' recSize+evSize
	tenants map[string]*memTenant    // the tenants holding entries
	seq     uint64                   // creations so far

	// conversations are the store's conversations (memconv.go).
	conversations *memConversations
}

type memKey struct{ tenant, id string }

type memEntry struct {
	key memKey
	rec Record // ExpiresAt always set
	// created holds the copy of the created record's response, until an
	// Update replaces it.
	created responseCopy
	events  []Event
	recSize int64 // recordBytes(&rec)
	evSize  int64 // sum of the events' eventBytes
	seq     uint64
	// own is the entry's element in its tenant's order (its value is
	// the entry's element in Memory.order).
	own *list.Element
}

// memTenant is what one tenant holds.
type memTenant struct {
	order *list.List // its entries' elements in Memory.order, oldest first
	bytes int64      // sum of its entries' recSize+evSize
}

var (
	_ ResponseStore = (*Memory)(nil)
	_ SizeChecker   = (*Memory)(nil)
	_ InProcess     = (*Memory)(nil)
)

// InProcess reports true: the store's calls wait on nothing but its lock.
func (m *Memory) InProcess() bool { return true }

// NewMemory returns an empty memory store.
func NewMemory(cfg MemoryConfig) *Memory {
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = DefaultMemoryMaxEntries
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMemoryMaxBytes
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultMemoryTTL
	}
	return &Memory{
		maxEntries: cfg.MaxEntries,
		maxBytes:   cfg.MaxBytes,
		ttl:        cfg.TTL,
		entries:    make(map[memKey]*list.Element),
		order:      list.New(),
		tenants:    make(map[string]*memTenant),

		conversations: newMemConversations(),
	}
}

// Len returns the number of records held, expired ones not yet swept included.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}

// Bytes returns the bytes the store's records and events hold, as
// MaxBytes counts them.
func (m *Memory) Bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes
}

// CheckSize returns a *TooLargeError when rec alone holds more than
// MaxBytes, which Create and Update refuse.
func (m *Memory) CheckSize(rec *Record) error {
	if err := CheckRecord(rec); err != nil {
		return err
	}
	return m.fits(recordBytes(rec))
}

func (m *Memory) fits(size int64) error {
	if size > m.maxBytes {
		return &TooLargeError{Size: size, Limit: m.maxBytes}
	}
	return nil
}

// Create stores a copy of rec as version 0 (setting rec.Version to 0 and
// rec.ExpiresAt to the stored expiry); ErrConflict when a live record has
// its id.
func (m *Memory) Create(ctx context.Context, rec *Record) error {
	if err := CheckRecord(rec); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: create %s: %w", rec.Response.ID, err)
	}
	now := time.Now()
	e := &memEntry{key: memKey{tenant.From(ctx), rec.Response.ID}}
	e.rec = e.created.record(rec)
	e.recSize = recordBytes(&e.rec)
	if err := m.fits(e.recSize); err != nil {
		return fmt.Errorf("store: create %s: %w", e.key.id, err)
	}
	e.rec.Version = 0
	rec.Version = 0
	if e.rec.ExpiresAt.IsZero() {
		e.rec.ExpiresAt = now.Add(m.ttl)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.entries[e.key]; ok {
		if live(el, now) {
			return fmt.Errorf("store: create %s: %w", e.key.id, ErrConflict)
		}
		m.remove(el)
	}
	m.sweep(now)
	for len(m.entries) >= m.maxEntries {
		m.remove(m.victim(nil, func(t *memTenant) int64 { return int64(t.order.Len()) }))
	}
	m.add(e)
	rec.ExpiresAt = e.rec.ExpiresAt
	return nil
}

// Get returns a copy of the record; ErrNotFound when absent or expired.
func (m *Memory) Get(ctx context.Context, id string) (*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, err := m.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	rec := copyRecord(&el.Value.(*memEntry).rec)
	return &rec, nil
}

// Holds reports whether the store holds a live record id (of ctx's
// tenant), without copying it.
func (m *Memory) Holds(ctx context.Context, id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, err := m.lookup(ctx, id)
	return err == nil
}

// Update replaces the record if its stored status is expect, its stored
// version is rec.Version and store.UpdateAllowed(expect,
// rec.Response.Status); else ErrConflict (ErrNotFound when absent). On
// success the stored version and rec.Version are incremented, and
// rec.ExpiresAt is the stored expiry: a zero one restarts the retention.
func (m *Memory) Update(ctx context.Context, rec *Record, expect api.Status) error {
	if err := CheckRecord(rec); err != nil {
		return err
	}
	id := rec.Response.ID
	cp := copyRecord(rec)
	recSize := recordBytes(&cp)
	now := time.Now()
	if cp.ExpiresAt.IsZero() {
		cp.ExpiresAt = now.Add(m.ttl)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	el, err := m.lookup(ctx, id)
	if err != nil {
		return err
	}
	e := el.Value.(*memEntry)
	if cur := e.rec.Response.Status; cur != expect {
		return fmt.Errorf("store: update %s: status is %s, not %s: %w", id, cur, expect, ErrConflict)
	}
	if next := cp.Response.Status; !UpdateAllowed(expect, next) {
		return fmt.Errorf("store: update %s: status %s cannot become %s: %w", id, expect, next, ErrConflict)
	}
	if e.rec.Version != rec.Version {
		return fmt.Errorf("store: update %s: version is %d, not %d: %w", id, e.rec.Version, rec.Version, ErrConflict)
	}
	if err := m.fits(recSize + e.evSize); err != nil {
		return fmt.Errorf("store: update %s: %w", id, err)
	}
	cp.Version = rec.Version + 1
	e.rec = cp
	// Nothing refers to the created copy any more: what it refers to goes.
	e.created = responseCopy{}
	rec.Version, rec.ExpiresAt = cp.Version, cp.ExpiresAt
	m.resize(el, recSize, e.evSize)
	return nil
}

// Delete removes the record; ErrNotFound when absent or expired.
func (m *Memory) Delete(ctx context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, err := m.lookup(ctx, id)
	if err != nil {
		return err
	}
	m.remove(el)
	return nil
}

// ListInputItems pages through the record's Input (see PageItems).
func (m *Memory) ListInputItems(ctx context.Context, id string, opts api.ListOptions) (*ItemPage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, err := m.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	page, err := PageItems(el.Value.(*memEntry).rec.Input, opts)
	if err != nil {
		return nil, fmt.Errorf("store: list input items of %s: %w", id, err)
	}
	return page, nil
}

var _ EventLog = (*Memory)(nil)

// AppendEvents stores events of the record id (a repeated Seq replaces the
// earlier event); ErrNotFound when the record is absent.
func (m *Memory) AppendEvents(ctx context.Context, id string, events []Event) error {
	return m.appendEvents(ctx, id, events, func(*Record) error { return nil })
}

var _ ClaimedEventLog = (*Memory)(nil)

// AppendEventsClaimed is AppendEvents when the record's job is under
// claim; else ErrLeaseLost, and nothing is stored. The expiry is the
// record's own.
func (m *Memory) AppendEventsClaimed(ctx context.Context, id, claim string, _ time.Time, events []Event) error {
	return m.appendEvents(ctx, id, events, func(rec *Record) error {
		if rec.Job == nil || rec.Job.Claim != claim {
			return fmt.Errorf("store: append events of %s: %w", id, ErrLeaseLost)
		}
		return nil
	})
}

// appendEvents is AppendEvents when check, given the stored record (the
// lock held), returns nil.
func (m *Memory) appendEvents(ctx context.Context, id string, events []Event, check func(*Record) error) error {
	events = slices.Clone(events)
	var added int64
	for i := range events {
		events[i].Data = slices.Clone(events[i].Data)
		added += eventBytes(events[i])
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	el, err := m.lookup(ctx, id)
	if err != nil {
		return err
	}
	e := el.Value.(*memEntry)
	if err := check(&e.rec); err != nil {
		return err
	}
	// The check counts events this batch replaces twice: it errs on the
	// safe side.
	if err := m.fits(e.recSize + e.evSize + added); err != nil {
		return fmt.Errorf("store: append events of %s: %w", id, err)
	}
	evSize := e.evSize + added
	for _, ev := range events {
		i, found := slices.BinarySearchFunc(e.events, ev.Seq, func(x Event, seq int64) int { return cmpInt(x.Seq, seq) })
		if found {
			evSize -= eventBytes(e.events[i])
			e.events[i] = ev
		} else {
			e.events = slices.Insert(e.events, i, ev)
		}
	}
	m.resize(el, e.recSize, evSize)
	return nil
}

// Events returns the record's events with Seq > after, in order.
func (m *Memory) Events(ctx context.Context, id string, after int64) ([]Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, err := m.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	evs := el.Value.(*memEntry).events
	i, found := slices.BinarySearchFunc(evs, after, func(x Event, seq int64) int { return cmpInt(x.Seq, seq) })
	if found {
		i++
	}
	return slices.Clone(evs[i:]), nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// lookup finds the live entry of (ctx's tenant, id), removing it when
// expired. m.mu must be held.
func (m *Memory) lookup(ctx context.Context, id string) (*list.Element, error) {
	el, ok := m.entries[memKey{tenant.From(ctx), id}]
	if !ok {
		return nil, fmt.Errorf("store: %s: %w", id, ErrNotFound)
	}
	if !live(el, time.Now()) {
		m.remove(el)
		return nil, fmt.Errorf("store: %s: %w", id, ErrNotFound)
	}
	return el, nil
}

// sweep removes expired entries from the oldest end until it meets a live
// one. Entries expire in creation order unless callers set ExpiresAt; those
// that do not are removed when read or when they reach the oldest end.
// m.mu must be held.
func (m *Memory) sweep(now time.Time) {
	for el := m.order.Front(); el != nil && !live(el, now); el = m.order.Front() {
		m.remove(el)
	}
}

// add stores the new entry e (its recSize counted, no events) and evicts
// others while the store holds too much. m.mu must be held.
func (m *Memory) add(e *memEntry) {
	m.seq++
	e.seq = m.seq
	el := m.order.PushBack(e)
	m.entries[e.key] = el
	t := m.tenants[e.key.tenant]
	if t == nil {
		t = &memTenant{order: list.New()}
		m.tenants[e.key.tenant] = t
	}
	e.own = t.order.PushBack(el)
	t.bytes += e.recSize
	m.bytes += e.recSize
	m.shrink(el)
}

func (m *Memory) remove(el *list.Element) {
	e := el.Value.(*memEntry)
	delete(m.entries, e.key)
	m.order.Remove(el)
	m.bytes -= e.recSize + e.evSize
	t := m.tenants[e.key.tenant]
	t.order.Remove(e.own)
	t.bytes -= e.recSize + e.evSize
	if t.order.Len() == 0 {
		delete(m.tenants, e.key.tenant)
	}
}

// resize sets the sizes of el's entry and evicts others while the store
// holds too much. m.mu must be held.
func (m *Memory) resize(el *list.Element, recSize, evSize int64) {
	e := el.Value.(*memEntry)
	d := recSize + evSize - e.recSize - e.evSize
	m.bytes += d
	m.tenants[e.key.tenant].bytes += d
	e.recSize, e.evSize = recSize, evSize
	m.shrink(el)
}

// shrink evicts entries other than keep while the store holds more than
// maxBytes, each time the oldest of the tenant holding the most bytes.
// keep alone never does (fits was checked). m.mu must be held.
func (m *Memory) shrink(keep *list.Element) {
	for m.bytes > m.maxBytes {
		el := m.victim(keep, func(t *memTenant) int64 { return t.bytes })
		if el == nil {
			return
		}
		m.remove(el)
	}
}

// victim is the entry to evict: the oldest entry other than keep of the
// tenant holding the most by held (the older entry between tenants holding
// as much); nil when keep is the only entry. m.mu must be held.
func (m *Memory) victim(keep *list.Element, held func(*memTenant) int64) *list.Element {
	var (
		best     *list.Element
		bestHeld int64
	)
	for _, t := range m.tenants {
		own := t.order.Front()
		if own.Value.(*list.Element) == keep {
			if own = own.Next(); own == nil {
				continue
			}
		}
		el := own.Value.(*list.Element)
		h := held(t)
		if best == nil || h > bestHeld || h == bestHeld && el.Value.(*memEntry).seq < best.Value.(*memEntry).seq {
			best, bestHeld = el, h
		}
	}
	return best
}

func live(el *list.Element, now time.Time) bool {
	return now.Before(el.Value.(*memEntry).rec.ExpiresAt)
}

// copyRecord copies rec deeply enough that neither side can change the
// other through the Response struct, its pointers, slices and maps, or the
// record's item slices. Items are copied by value; the response's
// Lambent field is copied deeply. It allocates the copy
// of the response with those of its usage and completed_at (see
// responseCopy.record) and the three item slices in one array.
func copyRecord(rec *Record) Record {
	return new(responseCopy).record(rec)
}

// responseCopy holds the copy of a record's response and of the pointer
// fields every finished response has (usage, completed_at, the Lambent
// field and its timing): one allocation rather than five (a memEntry
// holds the one of its Create).
type responseCopy struct {
	resp        api.Response
	usage       api.Usage
	completedAt int64
	lambent     api.LambentInfo
	timing      api.Timing
}

// record copies rec as copyRecord does, its response into c.
func (c *responseCopy) record(rec *Record) Record {
	c.resp = *rec.Response
	r := &c.resp
	r.Tools = slices.Clone(r.Tools)
	r.Metadata = maps.Clone(r.Metadata)
	r.ToolChoice.Tools = slices.Clone(r.ToolChoice.Tools)
	if r.CompletedAt != nil {
		c.completedAt = *r.CompletedAt
		r.CompletedAt = &c.completedAt
	}
	if r.Usage != nil {
		c.usage = *r.Usage
		r.Usage = &c.usage
	}
	if r.Lambent != nil {
		c.copyLambent(r.Lambent)
		r.Lambent = &c.lambent
	}
	r.IncompleteDetails = clonePtr(r.IncompleteDetails)
	r.PreviousResponseID = clonePtr(r.PreviousResponseID)
	r.Instructions = clonePtr(r.Instructions)
	r.Error = clonePtr(r.Error)
	r.Reasoning = clonePtr(r.Reasoning)
	r.MaxOutputTokens = clonePtr(r.MaxOutputTokens)
	r.MaxToolCalls = clonePtr(r.MaxToolCalls)
	r.SafetyIdentifier = clonePtr(r.SafetyIdentifier)
	r.PromptCacheKey = clonePtr(r.PromptCacheKey)
	r.Conversation = clonePtr(r.Conversation)
	r.AccessPrograms = clonePtr(r.AccessPrograms)
	var input, history []api.Item
	input, history, r.Output = cloneItems(rec.Input, rec.Context, r.Output)
	return Record{
		Response:  r,
		Input:     input,
		Context:   history,
		Cut:       rec.Cut,
		Rendered:  rec.Rendered,
		ExpiresAt: rec.ExpiresAt,
		Version:   rec.Version,
		Job:       clonePtr(rec.Job),
	}
}

// copyLambent copies l deeply into c.lambent (its timing into c.timing).
func (c *responseCopy) copyLambent(l *api.LambentInfo) {
	c.lambent = *l
	cl := &c.lambent
	if l.Attempts != nil {
		cl.Attempts = slices.Clone(l.Attempts)
		for i := range cl.Attempts {
			cl.Attempts[i].Errors = slices.Clone(cl.Attempts[i].Errors)
		}
	}
	cl.Cancelled = clonePtr(l.Cancelled)
	cl.HookErrors = slices.Clone(l.HookErrors)
	cl.Usage = clonePtr(l.Usage)
	if l.Timing != nil {
		c.timing = *l.Timing
		cl.Timing = &c.timing
	}
	cl.UnservedTools = slices.Clone(l.UnservedTools)
}

// cloneItems clones a, b and c into one new array, each clone's capacity
// its length (so that appending to one never writes over the next). A nil
// slice stays nil, an empty one empty.
func cloneItems(a, b, c []api.Item) (_, _, _ []api.Item) {
	buf := make([]api.Item, 0, len(a)+len(b)+len(c))
	clone := func(s []api.Item) []api.Item {
		if s == nil {
			return nil
		}
		if len(s) == 0 {
			return []api.Item{} // not s[:0:0], which would keep s's array
		}
		buf = append(buf, s...)
		return buf[len(buf)-len(s) : len(buf) : len(buf)]
	}
	return clone(a), clone(b), clone(c)
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// eventBytes is what one stored event holds.
func eventBytes(ev Event) int64 {
	return sizeOf(reflect.ValueOf(ev))
}

// sizeOf estimates the bytes v holds: its own size and, recursively, what
// its pointers, slices, maps, strings and interfaces refer to. It walks
// every field, so no client-given value escapes the count; data shared
// between references is counted for each.
func sizeOf(v reflect.Value) int64 {
	return int64(v.Type().Size()) + refBytes(v)
}

// refBytes is the part of sizeOf outside v itself. A time.Time's Location
// is shared by all times and not counted. Values that cannot refer to
// anything (numbers, booleans, nil pointers, empty strings and slices)
// are skipped without a call: a record is mostly such fields.
func refBytes(v reflect.Value) int64 {
	var n int64
	switch v.Kind() {
	case reflect.String:
		n = int64(v.Len())
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			n = sizeOf(v.Elem())
		}
	case reflect.Slice:
		if v.Cap() == 0 {
			return 0
		}
		et := v.Type().Elem()
		n = int64(v.Cap()) * int64(et.Size())
		if !scalar(et.Kind()) {
			for i := range v.Len() {
				n += refBytes(v.Index(i))
			}
		}
	case reflect.Array:
		if !scalar(v.Type().Elem().Kind()) {
			for i := range v.Len() {
				n += refBytes(v.Index(i))
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			n += sizeOf(it.Key()) + sizeOf(it.Value())
		}
	case reflect.Struct:
		if v.Type() == timeType {
			return 0
		}
		for i := range v.NumField() {
			f := v.Field(i)
			switch k := f.Kind(); {
			case scalar(k):
			case k == reflect.String:
				n += int64(f.Len())
			case (k == reflect.Pointer || k == reflect.Interface || k == reflect.Slice || k == reflect.Map) && f.IsNil():
			default:
				n += refBytes(f)
			}
		}
	}
	return n
}

var timeType = reflect.TypeFor[time.Time]()

// scalar reports whether values of kind k hold no references.
func scalar(k reflect.Kind) bool {
	switch k {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	}
	return false
}

var _ RunSignals = (*Memory)(nil)

// MarkRunning does nothing: Poll reads the record itself, without a copy.
func (m *Memory) MarkRunning(context.Context, string, time.Time) error { return nil }

// RequestCancel does nothing: the caller has marked the record, which
// Poll reads.
func (m *Memory) RequestCancel(context.Context, string, time.Time) error { return nil }

// Follow does nothing: Poll reports every run as followed, since
// appending events to memory costs nothing.
func (m *Memory) Follow(context.Context, string, time.Time, time.Time) error { return nil }

// Poll reports the record's cancel request (or its cancelled status) and
// expiry without copying it, and the run as always followed; ErrNotFound
// when it is absent or expired.
func (m *Memory) Poll(ctx context.Context, id string) (RunSignal, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, err := m.lookup(ctx, id)
	if err != nil {
		return RunSignal{}, err
	}
	rec := &el.Value.(*memEntry).rec
	return RunSignal{
		Cancel:        rec.Response.Status == api.StatusCancelled || rec.Job != nil && rec.Job.CancelRequested,
		ExpiresAt:     rec.ExpiresAt,
		FollowedUntil: rec.ExpiresAt,
	}, nil
}
