package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"runtime"
	"time"
)

// xcore prints how fast this machine hands data from one core to the
// other: blocks of 512 KiB (the CSV sink's block) written on one thread
// and read on another, 16 in rotation, as a stage's goroutines pass rows
// and output blocks. On the 2-vCPU machine the benchmarks run on it
// swings between ~3 and ~34 GB/s from minute to minute (the host moves
// the vCPUs, and a cache line then crosses between caches far apart); in
// the slow state the same 10M-row decrypt -> CSV took 0.64–0.88 s on 2
// cores against 0.40 s in the fast one (0.79 s on 1 core either way),
// the functions that write into memory last read on the other core
// (CSV formatting, dictionary decoding) running ~3.6 times slower. A
// 2-core speedup is only comparable between runs at similar xcore.
func xcore(args []string) error {
	fs := flag.NewFlagSet("xcore", flag.ContinueOnError)
	rounds := fs.Int("rounds", 4000, "blocks handed over")
	if err := fs.Parse(args); err != nil {
		return err
	}
	two, err := handOff(*rounds, true)
	if err != nil {
		return err
	}
	one, err := handOff(*rounds, false)
	if err != nil {
		return err
	}
	fmt.Printf("# core-to-core hand-off: %.1f GB/s (same core: %.1f GB/s)\n", two, one)
	return nil
}

// handOff writes rounds blocks on this goroutine and reads each on
// another, and returns the bytes per second in GB/s. With apart, each
// goroutine is locked to an OS thread of its own and GOMAXPROCS is at
// least 2, so they run on two cores when two are free; without, both run
// on one (GOMAXPROCS 1).
func handOff(rounds int, apart bool) (float64, error) {
	const blocks, size = 16, 512 << 10
	procs := 1
	if apart {
		procs = max(2, runtime.GOMAXPROCS(0))
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	free, full := make(chan []byte, blocks), make(chan []byte, blocks)
	for range blocks {
		free <- make([]byte, size)
	}
	src := make([]byte, size)
	bad := make(chan error, 1)
	go func() {
		if apart {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
		}
		var err error
		for b := range full {
			// The marker the writer set: the block's bytes came across.
			if i := bytes.IndexByte(b, 1); err == nil && i != int(b[size-1])<<8 {
				err = errors.New("xcore: a block arrived without the bytes written into it")
			}
			free <- b
		}
		bad <- err
	}()
	if apart {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	start := time.Now()
	for r := range rounds {
		b := <-free
		copy(b, src)
		k := r % 256
		b[k<<8], b[size-1] = 1, byte(k)
		full <- b
	}
	close(full)
	if err := <-bad; err != nil {
		return 0, err
	}
	return float64(rounds) * size / time.Since(start).Seconds() / 1e9, nil
}
