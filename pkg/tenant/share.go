package tenant

// MayQueue reports whether a tenant holding held of the places of a queue
// shared by the tenants, of capacity places of which total are held (its
// own among them), may take one more: while held+total < capacity, that
// is while it would hold less than half of the room the other tenants
// leave. Alone, a tenant gets half of the queue; each tenant bursting
// besides it gets half of what is left, so that no number of bursting
// tenants fills the queue for the next one before every place is taken
// by a tenant of its own (two halves filled it before).
func MayQueue(held, total, capacity int) bool { return held+total < capacity }
