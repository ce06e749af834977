// Package progress draws a one-line progress bar, with throughput and an
// estimate of the time left, where a person watches: on a terminal only.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gdsload/gdsload/internal/humanize"
)

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Bar draws a one-line bar with throughput and ETA on a terminal. Add is
// safe from many goroutines; Stop erases the line. A nil *Bar is valid and
// silent.
type Bar struct {
	w     io.Writer
	label string
	total atomic.Int64
	done  atomic.Int64
	start time.Time
	stop  chan struct{}
	wg    sync.WaitGroup
}

// Start draws a bar for total bytes on w, redrawn five times a second
// until Stop; it returns nil (a valid, silent bar) when w is not a
// terminal.
func Start(w io.Writer, label string, total int64) *Bar {
	if !IsTerminal(w) {
		return nil
	}
	p := &Bar{w: w, label: label, start: time.Now(), stop: make(chan struct{})}
	p.total.Store(total)
	p.wg.Go(func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.draw()
			}
		}
	})
	return p
}

// Add counts n more bytes done.
func (p *Bar) Add(n int64) {
	if p != nil {
		p.done.Add(n)
	}
}

// SetTotal changes the byte count the bar goes to.
func (p *Bar) SetTotal(n int64) {
	if p != nil {
		p.total.Store(n)
	}
}

func (p *Bar) draw() {
	done, total := p.done.Load(), p.total.Load()
	el := time.Since(p.start).Seconds()
	rate := float64(done) / max(el, 1e-9)
	frac := 1.0
	if total > 0 {
		frac = min(1, float64(done)/float64(total))
	}
	const width = 30
	bar := strings.Repeat("#", int(frac*width)) + strings.Repeat(".", width-int(frac*width))
	eta := "--"
	if rate > 0 && total > done {
		eta = (time.Duration(float64(total-done) / rate * float64(time.Second))).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\r%s [%s] %5.1f%% %s/%s %s/s ETA %s   ", p.label, bar, frac*100,
		humanize.Bytes(done), humanize.Bytes(total), humanize.Bytes(int64(rate)), eta)
}

// Stop stops drawing and erases the line.
func (p *Bar) Stop() {
	if p == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	fmt.Fprint(p.w, "\r\033[K")
}
