// Package progress reports how far a long run has got, on stderr, only when
// stderr is a terminal: cron jobs and pipelines stay quiet.
package progress

import (
	"fmt"
	"io"
	"time"
)

// Meter prints "tool: label 1.2M rows (350k rows/s)" on one line, redrawn
// at most every interval. A nil *Meter does nothing, so callers need no
// checks.
type Meter struct {
	w        io.Writer
	label    string
	start    time.Time
	last     time.Time
	rows     int64
	interval time.Duration
	drawn    bool
}

// New returns a meter writing to w, or nil when enabled is false (stderr is
// not a terminal).
func New(w io.Writer, enabled bool, label string) *Meter {
	if !enabled || w == nil {
		return nil
	}
	now := time.Now()
	return &Meter{w: w, label: label, start: now, last: now, interval: 250 * time.Millisecond}
}

// Add counts rows processed and redraws when the interval has passed.
func (m *Meter) Add(rows int64) {
	if m == nil {
		return
	}
	m.rows += rows
	if now := time.Now(); now.Sub(m.last) >= m.interval {
		m.last = now
		m.draw(now)
	}
}

// Done draws the final count and ends the line, if anything was drawn.
func (m *Meter) Done() {
	if m == nil || !m.drawn {
		return
	}
	m.draw(time.Now())
	fmt.Fprintln(m.w)
}

func (m *Meter) draw(now time.Time) {
	m.drawn = true
	rate := float64(m.rows) / now.Sub(m.start).Seconds()
	fmt.Fprintf(m.w, "\r%s %s rows (%s rows/s)   ", m.label, Human(float64(m.rows)), Human(rate))
}

// Human formats a count as 950, 12.3k, 4.56M, 1.2G.
func Human(x float64) string {
	switch {
	case x >= 1e9:
		return fmt.Sprintf("%.3gG", x/1e9)
	case x >= 1e6:
		return fmt.Sprintf("%.3gM", x/1e6)
	case x >= 1e4:
		return fmt.Sprintf("%.3gk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}
