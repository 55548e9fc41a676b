// Package pipeline runs an ordered parallel map over the chunks of a
// table: one producer reads chunks in order, a pool of workers transforms
// them concurrently, and one consumer receives the results strictly in
// input order. It is the shape of every streaming stage (encrypt, perturb,
// decrypt, …): reading and writing are sequential, the mechanism in
// between is per-row and so per-chunk parallel (issue 11, item 1).
//
// Memory is bounded: at most Options.InFlight chunks exist at once, from
// the call to next that makes one to the return of emit that consumes it,
// so a caller may keep exactly InFlight reusable buffers in a free list and
// never allocate per chunk. The first error in input order (of next, work
// or emit) stops the run and is returned; Run returns only after every goroutine it
// started has exited.
//
// Work must not depend on which worker runs it or when: randomness is drawn
// from streams keyed by the chunk's rows (pkg/rng.Keyed), never from a
// shared generator, so the output is the same whatever GOMAXPROCS and the
// chunk size.
package pipeline

import (
	"context"
	"runtime"
	"sync"
)

// ChunkRows is the most rows of one chunk in the commands that cut tables
// into chunks for Run (encrypt; perturb's and decrypt's are BatchChunkRows,
// four of them). 16 Ki rows make a
// chunk's hand-off (~1 µs) negligible while the chunks in flight, with
// the input batches they hold, stay within a few tens of MB (64 Ki-row
// chunks took encrypt's CSV path from 89 to 181 MB peak RSS). Chunks are
// then a quarter of an output batch (table.DefaultBatchSize), which a
// Rebatcher joins with one copy. It is a variable so that tests can show
// that a command's output does not depend on it.
var ChunkRows = 16 * 1024

// Options size a run. Zero values choose defaults.
type Options struct {
	// Workers is the number of goroutines running work; 0 means
	// runtime.GOMAXPROCS(0).
	Workers int
	// InFlight bounds the chunks alive at once (read, queued, being
	// worked on, or waiting for their turn to be emitted); 0 means
	// Workers + 2: one per worker, one being read and one being written.
	InFlight int
}

// Resolve returns o with its defaults filled in.
func (o Options) Resolve() Options {
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.InFlight <= 0 {
		o.InFlight = o.Workers + 2
	}
	return o
}

// job is one chunk on its way from producer to consumer.
type job[In, Out any] struct {
	in   In
	out  Out
	err  error
	done chan struct{} // closed when out/err are set
}

// Run calls next until it reports no more chunks (ok false), applies work
// to each chunk on opts.Workers goroutines, and calls emit with the results
// in the order next produced the chunks. next and emit are each called from
// one goroutine at a time (next from a producer goroutine, emit from the
// caller's), so they may use a reader and a writer without locks. work is
// called concurrently and must not share mutable state between chunks.
//
// Errors are taken in input order: the error returned is that of the
// earliest chunk whose next, work or emit failed (or ctx's error), so a run
// over bad data reports the same error at any GOMAXPROCS. It ends the run:
// no further chunk is read, pending chunks are dropped unemitted, and Run
// returns after all its goroutines have exited.
func Run[In, Out any](ctx context.Context, opts Options, next func() (In, bool, error), work func(In) (Out, error), emit func(Out) error) error {
	opts = opts.Resolve()
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		errOnce  sync.Once
		firstErr error
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}

	tokens := make(chan struct{}, opts.InFlight) // one per live chunk
	jobs := make(chan *job[In, Out], opts.InFlight)
	order := make(chan *job[In, Out], opts.InFlight) // the consumer's queue, in input order
	var wg sync.WaitGroup
	complete := false     // next reported the end; read after wg.Wait
	var read, emitted int // chunks next gave, and emitted; read after wg.Wait

	// Producer: a token, then a chunk, then it goes to both queues. Both
	// have room for InFlight jobs and at most InFlight exist, so the
	// sends never block.
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(order)
		defer close(jobs)
		for {
			select {
			case tokens <- struct{}{}:
			case <-ctx.Done():
				return
			}
			in, ok, err := next()
			if err != nil {
				// In line with the chunks before it, so that errors are
				// reported in input order whatever the timing.
				j := &job[In, Out]{err: err, done: make(chan struct{})}
				close(j.done)
				order <- j
				return
			}
			if !ok {
				complete = true
				return
			}
			read++
			j := &job[In, Out]{in: in, done: make(chan struct{})}
			jobs <- j
			order <- j
		}
	}()

	for range opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if ctx.Err() == nil {
					j.out, j.err = work(j.in)
				} else {
					j.err = ctx.Err()
				}
				close(j.done)
			}
		}()
	}

	// Consumer: in input order, wait for each job and emit it.
	for j := range order {
		if ctx.Err() != nil {
			break
		}
		select {
		case <-j.done:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		if j.err != nil {
			fail(j.err)
			break
		}
		if err := emit(j.out); err != nil {
			fail(err)
			break
		}
		emitted++
		<-tokens
	}
	// Unblock the producer (it may wait for a token) and let the workers
	// finish the jobs already queued; their results are dropped.
	cancel()
	for range order {
	}
	wg.Wait()
	// Every goroutine has exited: firstErr is final and safe to read.
	errOnce.Do(func() {})
	if firstErr == nil && (!complete || emitted < read) {
		// Cancelled from outside before every chunk was emitted (maybe
		// after next reported the end).
		return parent.Err()
	}
	return firstErr
}
