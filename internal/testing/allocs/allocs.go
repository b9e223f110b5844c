// Package allocs measures what a piece of code allocates, for tests that
// bound the memory a hostile input may cost.
package allocs

import "runtime"

// Bytes is how many bytes f allocates on the heap (the heap's total
// allocations across f, after a garbage collection before it).
func Bytes(f func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
