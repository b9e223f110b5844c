package wait

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSleepEnded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep on an ended context = true, want false")
	}
}

func TestSleepCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() { done <- Sleep(ctx, time.Hour) }()
	cancel()
	if <-done {
		t.Fatal("Sleep cut short by cancel = true, want false")
	}
}

func TestSleepPassed(t *testing.T) {
	if !Sleep(context.Background(), 0) {
		t.Fatal("Sleep(0) = false, want true")
	}
}

func TestExponential(t *testing.T) {
	for _, c := range []struct {
		base, ceiling time.Duration
		n             int
		want          time.Duration
	}{
		{100, 2000, 0, 100},
		{100, 2000, 1, 200},
		{100, 2000, 4, 1600},
		{100, 2000, 5, 2000},
		{100, 2000, 1 << 30, 2000},
		{3000, 2000, 0, 2000},
		{0, 2000, 10, 0},
		{time.Second, 1<<63 - 1, 70, 1<<63 - 1},
	} {
		if got := Exponential(c.base, c.ceiling, c.n); got != c.want {
			t.Errorf("Exponential(%v, %v, %d) = %v, want %v", c.base, c.ceiling, c.n, got, c.want)
		}
	}
}

func TestEqualJitter(t *testing.T) {
	for _, d := range []time.Duration{-5, 0, 1} {
		if got := EqualJitter(d); got != d {
			t.Errorf("EqualJitter(%v) = %v, want it unchanged", d, got)
		}
	}
	for _, d := range []time.Duration{2, 3, 7, time.Second} {
		for range 200 {
			if got := EqualJitter(d); got < d/2 || got > d {
				t.Fatalf("EqualJitter(%v) = %v, want within [%v, %v]", d, got, d/2, d)
			}
		}
	}
	// Both ends are reached: for d = 3, {1, 2, 3}.
	seen := map[time.Duration]bool{}
	for range 1000 {
		seen[EqualJitter(3)] = true
	}
	if len(seen) != 3 {
		t.Fatalf("EqualJitter(3) gave %v, want each of 1, 2, 3", seen)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{" 2 ", 2 * time.Second, true},
		{"1.5", 1500 * time.Millisecond, true},
		{"1e10", math.MaxInt64, true},
		{"99999999999999999999", math.MaxInt64, true},
		{"1e400", math.MaxInt64, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"-3", 0, false},
		{"-1e400", 0, false},
		{"Inf", 0, false},
		{"+Infinity", 0, false},
		{"NaN", 0, false},
		{"", 0, false},
		{"soon", 0, false},
	} {
		if got, ok := RetryAfter(c.v, now); got != c.want || ok != c.ok {
			t.Errorf("RetryAfter(%q) = %v, %v; want %v, %v", c.v, got, ok, c.want, c.ok)
		}
	}
}
