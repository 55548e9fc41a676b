//go:build unix

package cli

import (
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/pramkit/pramkit/pkg/table"
)

// handleSignals makes an interrupted run leave no partial output behind.
// On SIGINT or SIGTERM it removes the run's temporary files (half-written
// rows or keys) and ends the process with the same signal, restored to its
// default action, so that a shell sees the usual status (130, 143). It also
// asks for SIGPIPE, which turns a write to a closed stdout pipe
// (`encrypt … | head -1`) from a silent death, which would skip every
// clean-up, into an EPIPE error that the command returns like any other
// (its deferred Aborts remove its files) and Run reports quietly. Only
// SIGKILL can still leave a ".NAME.pramkit-partial-*" file. The returned
// function undoes it when the command is done.
func handleSignals() (stop func()) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGPIPE)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-ch:
				if sig == syscall.SIGPIPE {
					continue // the write that caused it fails with EPIPE
				}
				table.RemovePartialFiles()
				signal.Reset(sig)
				syscall.Kill(syscall.Getpid(), sig.(syscall.Signal))
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}

// isBrokenPipe reports an error from writing to a reader that went away.
func isBrokenPipe(err error) bool { return errors.Is(err, syscall.EPIPE) }
