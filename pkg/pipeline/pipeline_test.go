package pipeline

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// counter produces the chunks 0, 1, …, n−1 and counts live chunks.
type counter struct {
	n, i     int
	live     atomic.Int64
	maxLive  atomic.Int64
	failAt   int // next fails at this chunk when ≥ 0
	nextErrs error
}

func (c *counter) next() (int, bool, error) {
	if c.i == c.failAt {
		return 0, false, c.nextErrs
	}
	if c.i == c.n {
		return 0, false, nil
	}
	c.i++
	l := c.live.Add(1)
	for {
		m := c.maxLive.Load()
		if l <= m || c.maxLive.CompareAndSwap(m, l) {
			break
		}
	}
	return c.i - 1, true, nil
}

func TestRunEmitsInInputOrderWithBoundedChunks(t *testing.T) {
	for _, opts := range []Options{{Workers: 1, InFlight: 1}, {Workers: 4, InFlight: 3}, {Workers: 8}, {}} {
		c := &counter{n: 500, failAt: -1}
		var got []int
		err := Run(context.Background(), opts, c.next,
			func(i int) (string, error) {
				// uneven work, so later chunks often finish first
				if i%7 == 0 {
					time.Sleep(50 * time.Microsecond)
				}
				return fmt.Sprint(i * i), nil
			},
			func(s string) error {
				var v int
				fmt.Sscan(s, &v)
				got = append(got, v)
				c.live.Add(-1)
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 500 {
			t.Fatalf("%+v: %d results, want 500", opts, len(got))
		}
		for i, v := range got {
			if v != i*i {
				t.Fatalf("%+v: result %d is %d, want %d (out of order)", opts, i, v, i*i)
			}
		}
		if max, bound := c.maxLive.Load(), int64(opts.Resolve().InFlight); max > bound {
			t.Fatalf("%+v: %d chunks alive at once, bound %d", opts, max, bound)
		}
	}
}

func TestRunReturnsFirstErrorAndLeaksNoGoroutine(t *testing.T) {
	boom := errors.New("boom")
	before := runtime.NumGoroutine()
	cases := []struct {
		name string
		run  func() error
	}{
		{"work", func() error {
			c := &counter{n: 1000, failAt: -1}
			return Run(context.Background(), Options{Workers: 4}, c.next,
				func(i int) (int, error) {
					if i == 37 {
						return 0, boom
					}
					return i, nil
				},
				func(int) error { return nil })
		}},
		{"emit", func() error {
			c := &counter{n: 1000, failAt: -1}
			return Run(context.Background(), Options{Workers: 4}, c.next,
				func(i int) (int, error) { return i, nil },
				func(i int) error {
					if i == 10 {
						return boom
					}
					return nil
				})
		}},
		{"next", func() error {
			c := &counter{n: 1000, failAt: 20, nextErrs: boom}
			return Run(context.Background(), Options{Workers: 4}, c.next,
				func(i int) (int, error) { return i, nil },
				func(int) error { return nil })
		}},
	}
	for _, tc := range cases {
		if err := tc.run(); !errors.Is(err, boom) {
			t.Errorf("%s: err = %v, want boom", tc.name, err)
		}
	}
	// Run waits for its goroutines; allow the runtime a moment to reap.
	for range 100 {
		if runtime.NumGoroutine() <= before {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%d goroutines before, %d after: Run leaked", before, runtime.NumGoroutine())
}

func TestRunEmitsNothingAfterAnError(t *testing.T) {
	boom := errors.New("boom")
	c := &counter{n: 1000, failAt: -1}
	var emitted []int
	err := Run(context.Background(), Options{Workers: 3, InFlight: 5}, c.next,
		func(i int) (int, error) {
			if i == 50 {
				return 0, boom
			}
			return i, nil
		},
		func(i int) error { emitted = append(emitted, i); return nil })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if len(emitted) != 50 || emitted[49] != 49 {
		t.Fatalf("emitted %d chunks (last %v), want exactly 0..49", len(emitted), emitted[len(emitted)-1:])
	}
}

func TestRunHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &counter{n: 1 << 30, failAt: -1}
	n := 0
	err := Run(ctx, Options{Workers: 2}, c.next,
		func(i int) (int, error) { return i, nil },
		func(int) error {
			if n++; n == 100 {
				cancel()
			}
			return nil
		})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestRunCancelledAfterTheLastChunkIsReadFails: a run cancelled from
// outside once next has reported the end, but before every chunk was
// emitted, returns the context's error, not nil (it returned nil, with the
// last chunks never emitted).
func TestRunCancelledAfterTheLastChunkIsReadFails(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	i := 0
	next := func() (int, bool, error) {
		if i == 3 {
			close(ended)
			return 0, false, nil
		}
		i++
		return i, true, nil
	}
	emitted := 0
	err := Run(ctx, Options{Workers: 2, InFlight: 8}, next,
		func(i int) (int, error) { return i, nil },
		func(int) error {
			if emitted++; emitted == 1 {
				<-ended // every chunk is read
				cancel()
			}
			return nil
		})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v after %d of 3 chunks emitted, want context.Canceled", err, emitted)
	}
}

func TestRunEmptyInput(t *testing.T) {
	c := &counter{n: 0, failAt: -1}
	err := Run(context.Background(), Options{}, c.next,
		func(i int) (int, error) { t.Error("work called"); return i, nil },
		func(int) error { t.Error("emit called"); return nil })
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkRunOverhead is the cost per chunk of the pipeline itself.
func BenchmarkRunOverhead(b *testing.B) {
	c := &counter{n: b.N, failAt: -1}
	err := Run(context.Background(), Options{}, c.next,
		func(i int) (int, error) { return i, nil },
		func(int) error { return nil })
	if err != nil {
		b.Fatal(err)
	}
}

func TestRunReportsTheEarliestErrorInInputOrder(t *testing.T) {
	// Chunk 3's work is slow and fails; chunk 8's fails at once. The error
	// must be chunk 3's, every time.
	for range 20 {
		c := &counter{n: 100, failAt: -1}
		err := Run(context.Background(), Options{Workers: 4, InFlight: 10}, c.next,
			func(i int) (int, error) {
				switch i {
				case 3:
					time.Sleep(2 * time.Millisecond)
					return 0, fmt.Errorf("chunk 3")
				case 8:
					return 0, fmt.Errorf("chunk 8")
				}
				return i, nil
			},
			func(int) error { return nil })
		if err == nil || err.Error() != "chunk 3" {
			t.Fatalf("err = %v, want chunk 3's", err)
		}
	}
	// A read error after a chunk whose work fails: the chunk's error.
	c := &counter{n: 100, failAt: 5, nextErrs: errors.New("read")}
	err := Run(context.Background(), Options{Workers: 2}, c.next,
		func(i int) (int, error) {
			if i == 2 {
				time.Sleep(2 * time.Millisecond)
				return 0, fmt.Errorf("chunk 2")
			}
			return i, nil
		},
		func(int) error { return nil })
	if err == nil || err.Error() != "chunk 2" {
		t.Fatalf("err = %v, want chunk 2's", err)
	}
}
