//go:build unix

package cli

import (
	"errors"
	"os"
	"os/signal"
	"syscall"
	"time"

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
// SIGKILL can still leave a ".NAME.pramkit-partial-*" file. A signal the
// process was started with ignored (SIGINT for a background job of a
// non-interactive shell) stays ignored, as POSIX tools do. The returned
// function undoes it when the command is done.
func handleSignals() (stop func()) {
	ch := make(chan os.Signal, 4)
	sigs := []os.Signal{syscall.SIGPIPE}
	for _, sig := range []os.Signal{syscall.SIGINT, syscall.SIGTERM} {
		if !signal.Ignored(sig) {
			sigs = append(sigs, sig)
		}
	}
	signal.Notify(ch, sigs...)
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
				n := sig.(syscall.Signal)
				syscall.Kill(syscall.Getpid(), n)
				// Not reached unless the default action was changed
				// meanwhile: end the process the way a shell reports it.
				time.Sleep(time.Second)
				os.Exit(128 + int(n))
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
