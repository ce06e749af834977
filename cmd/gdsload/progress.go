package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether w is a terminal, so progress goes only where a
// person watches.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// progress draws a one-line bar with throughput and ETA on a terminal. Add
// is safe from many goroutines; Stop erases the line.
type progress struct {
	w     io.Writer
	label string
	total atomic.Int64
	done  atomic.Int64
	start time.Time
	stop  chan struct{}
	wg    sync.WaitGroup
}

// startProgress returns nil (a valid, silent progress) when w is not a
// terminal.
func startProgress(w io.Writer, label string, total int64) *progress {
	if !isTerminal(w) {
		return nil
	}
	p := &progress{w: w, label: label, start: time.Now(), stop: make(chan struct{})}
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

func (p *progress) Add(n int64) {
	if p != nil {
		p.done.Add(n)
	}
}

// SetTotal changes the byte count the bar goes to.
func (p *progress) SetTotal(n int64) {
	if p != nil {
		p.total.Store(n)
	}
}

func (p *progress) draw() {
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
		formatBytes(done), formatBytes(total), formatBytes(int64(rate)), eta)
}

func (p *progress) Stop() {
	if p == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	fmt.Fprint(p.w, "\r\033[K")
}
