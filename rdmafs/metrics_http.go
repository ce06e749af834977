package rdmafs

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// ServeMetrics serves MetricsHandler at http://ADDR/metrics on a listener
// of its own on addr (port 0 picks one), apart from the data port, logs
// where, and returns the address bound. stop shuts it down.
func (s *Server) ServeMetrics(addr string) (bound net.Addr, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.MetricsHandler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics listener failed", "err", err)
		}
	}()
	s.log.Info("metrics at http://" + ln.Addr().String() + "/metrics")
	return ln.Addr(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	}, nil
}
