package rdmafs

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gdsload/gdsload/rdmafs/wire"
)

// Client talks to one rdmafs server over a fixed number of connections.
// Connections lost are redialed (and re-authenticated) on demand. A Client
// is safe for concurrent use.
type Client struct {
	cfg   clientConfig
	addr  string
	slots []*slot
	next  atomic.Uint32
	// maxRead is the smallest MaxRead any server connection announced.
	maxRead atomic.Int64
	// devReg is how the latest ReadAtDevice registered GPU memory.
	devReg atomic.Pointer[DeviceRegistration]
	closed atomic.Bool
	// stop is closed by Close to interrupt backoff sleeps.
	stop     chan struct{}
	stopOnce sync.Once
}

// slot holds one connection and redials it when it is gone.
type slot struct {
	mu sync.Mutex
	cc *clientConn
}

// Dial connects to the server at addr (host:port) and authenticates every
// connection. Errors wrap ErrAuth, ErrServerGone or ErrProtocol, or are an
// option's refusal of its value.
func Dial(ctx context.Context, addr string, opts ...Option) (*Client, error) {
	cfg, err := newClientConfig(opts)
	if err != nil {
		return nil, err
	}
	cl := &Client{cfg: cfg, addr: addr, stop: make(chan struct{})}
	cl.slots = make([]*slot, cfg.conns)
	errs := make([]error, cfg.conns)
	var wg sync.WaitGroup
	for i := range cl.slots {
		cl.slots[i] = &slot{}
		wg.Go(func() { _, errs[i] = cl.slots[i].get(ctx, cl) })
	}
	wg.Wait()
	if err := firstErr(errs); err != nil {
		cl.Close()
		return nil, err
	}
	return cl, nil
}

func firstErr(errs []error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// get returns the slot's live connection, dialing a new one if needed.
func (s *slot) get(ctx context.Context, cl *Client) (*clientConn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cl.closed.Load() {
		return nil, ErrClosed
	}
	if s.cc != nil && s.cc.usable() {
		return s.cc, nil
	}
	// A draining connection keeps serving its outstanding calls and is closed
	// by the server; new calls go to a fresh one.
	s.cc = nil
	cc, err := dialConn(ctx, &cl.cfg, cl.addr)
	if err != nil {
		return nil, err
	}
	s.cc = cc
	for {
		old := cl.maxRead.Load()
		mr := int64(cc.welcome.MaxRead)
		if (old != 0 && old <= mr) || cl.maxRead.CompareAndSwap(old, mr) {
			break
		}
	}
	return cc, nil
}

// Close closes every connection. Calls in progress fail with ErrClosed or
// ErrServerGone.
func (cl *Client) Close() error {
	cl.closed.Store(true)
	cl.stopOnce.Do(func() { close(cl.stop) })
	for _, s := range cl.slots {
		s.mu.Lock()
		if s.cc != nil {
			s.cc.kill(ErrClosed)
		}
		s.mu.Unlock()
	}
	return nil
}

// retry runs fn on a connection, retrying failures that wrap ErrServerGone
// with exponential backoff until the retry deadline. Every rdmafs request
// is idempotent, so a retry is always safe.
func (cl *Client) retry(ctx context.Context, fn func(*clientConn) error) error {
	deadline := time.Now().Add(cl.cfg.retryDeadline)
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		if cl.closed.Load() {
			return ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		s := cl.slots[int(cl.next.Add(1))%len(cl.slots)]
		cc, err := s.get(ctx, cl)
		if err == nil {
			err = fn(cc)
		}
		if err == nil || !retryable(err) || ctx.Err() != nil {
			if cl.closed.Load() && err != nil {
				return fmt.Errorf("%w: %v", ErrClosed, err)
			}
			return err
		}
		if time.Now().Add(backoff).After(deadline) {
			return fmt.Errorf("%w (gave up after %d attempts over %v retry deadline)", err, attempt, cl.cfg.retryDeadline)
		}
		cl.cfg.log.Debug("rdmafs retrying", "attempt", attempt, "err", err, "backoff", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		case <-cl.stop:
			return ErrClosed
		}
		backoff = min(2*backoff, time.Second)
	}
}

// replyErr turns an ERROR reply into an *Error, or checks the reply type.
func replyErr(c *call, want wire.Type, op, name string, off int64) error {
	if c.typ == wire.TypeError {
		m, err := wire.DecodeError(c.payload)
		if err != nil {
			return &Error{Op: op, Name: name, Offset: off, Err: fmt.Errorf("%w: %v", ErrProtocol, err)}
		}
		return &Error{Op: op, Name: name, Offset: off, Code: m.Code, Msg: m.Message, Err: codeErr(m.Code)}
	}
	if c.typ != want {
		return &Error{Op: op, Name: name, Offset: off, Msg: fmt.Sprintf("expected %s, got %s", want, c.typ), Err: ErrProtocol}
	}
	return nil
}

// FileInfo describes a remote file or directory. It implements fs.FileInfo.
type FileInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
	id    FileID
	hasID bool
}

// FileID is what a server reports, besides size and times, of the version
// of a file it serves: its status change time, which any write, truncate,
// chmod or utimes moves (so a rewrite that keeps size and modification
// time, or sets the modification time back, still shows), and its device
// and inode on the server, which differ once the name was replaced by a
// rename. Servers from before file identities report none.
type FileID struct {
	Ctime    time.Time
	Dev, Ino uint64
}

// FileID returns the file's identity on the server, and false when the
// server did not report one (a server from before file identities).
func (fi FileInfo) FileID() (FileID, bool) { return fi.id, fi.hasID }

// Name returns the base name (for List) or the name asked (for Stat).
func (fi FileInfo) Name() string { return fi.name }

// Size returns the length in bytes.
func (fi FileInfo) Size() int64 { return fi.size }

// Mode returns the file mode bits as the server reported them.
func (fi FileInfo) Mode() fs.FileMode { return fi.mode }

// ModTime returns the modification time.
func (fi FileInfo) ModTime() time.Time { return fi.mtime }

// IsDir reports whether the entry is a directory.
func (fi FileInfo) IsDir() bool { return fi.mode.IsDir() }

// Sys returns nil.
func (fi FileInfo) Sys() any { return nil }

func toInfo(name string, w wire.FileInfo) FileInfo {
	if w.Name != "" {
		name = w.Name
	}
	fi := FileInfo{name: name, size: int64(min(w.Size, 1<<62)), mode: fs.FileMode(w.Mode), mtime: time.Unix(0, w.Mtime)}
	if w.HasID {
		fi.hasID = true
		fi.id = FileID{Ctime: time.Unix(0, w.Ctime), Dev: w.Dev, Ino: w.Ino}
	}
	return fi
}

// checkID refuses a reply whose file identities do not match what the
// connection's WELCOME granted: a server that granted them sends them in
// every STAT_OK and LIST_OK, and one that did not sends none.
func (cc *clientConn) checkID(op, name string, has bool) error {
	if granted := cc.welcome.Flags&wire.FlagFileID != 0; has != granted {
		return &Error{Op: op, Name: name, Err: ErrProtocol,
			Msg: fmt.Sprintf("reply carries file identities: %v, but the server granted them: %v", has, granted)}
	}
	return nil
}

// Stat returns metadata for name, relative to the export root.
func (cl *Client) Stat(ctx context.Context, name string) (FileInfo, error) {
	var fi FileInfo
	err := cl.retry(ctx, func(cc *clientConn) error {
		c, err := cc.roundTrip(ctx, wire.TypeStat, wire.Stat{Name: name}.Append(nil), nil)
		if err != nil {
			return err
		}
		if err := replyErr(c, wire.TypeStatOK, "stat", name, 0); err != nil {
			return err
		}
		w, err := wire.DecodeFileInfo(c.payload)
		if err != nil {
			return &Error{Op: "stat", Name: name, Err: fmt.Errorf("%w: %v", ErrProtocol, err)}
		}
		if err := cc.checkID("stat", name, w.HasID); err != nil {
			return err
		}
		fi = toInfo(name, w)
		return nil
	})
	return fi, err
}

// List returns the entries of directory dir ("" or "." for the export
// root), sorted by name. Symbolic links are reported as links.
func (cl *Client) List(ctx context.Context, dir string) ([]FileInfo, error) {
	var out []FileInfo
	var cursor uint32
	for {
		var page wire.ListOK
		err := cl.retry(ctx, func(cc *clientConn) error {
			c, err := cc.roundTrip(ctx, wire.TypeList, wire.List{Cursor: cursor, Name: dir}.Append(nil), nil)
			if err != nil {
				return err
			}
			if err := replyErr(c, wire.TypeListOK, "list", dir, 0); err != nil {
				return err
			}
			page, err = wire.DecodeListOK(c.payload)
			if err != nil {
				return &Error{Op: "list", Name: dir, Err: fmt.Errorf("%w: %v", ErrProtocol, err)}
			}
			return cc.checkID("list", dir, page.HasID)
		})
		if err != nil {
			return nil, err
		}
		for _, e := range page.Entries {
			// Entries are names within dir: anything that could climb out
			// of it, or name it, is a lying server.
			if e.Name == "" || e.Name == "." || e.Name == ".." || strings.ContainsAny(e.Name, "/\x00") {
				return nil, &Error{Op: "list", Name: dir, Msg: fmt.Sprintf("server listed an entry named %q", e.Name), Err: ErrProtocol}
			}
			out = append(out, toInfo("", e))
		}
		if !page.More {
			return out, nil
		}
		if page.Next <= cursor {
			return nil, &Error{Op: "list", Name: dir, Msg: "server returned a cursor that does not advance", Err: ErrProtocol}
		}
		cursor = page.Next
	}
}

// Open stats name and returns a handle for reading it. Opening holds no
// server state: the file is read by name, so a File survives reconnects.
func (cl *Client) Open(ctx context.Context, name string) (*File, error) {
	fi, err := cl.Stat(ctx, name)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, &Error{Op: "open", Name: name, Msg: "is a directory", Err: ErrInvalid}
	}
	return &File{cl: cl, name: name, info: fi}, nil
}

// OpenInfo returns a handle for name described by fi, as this client's
// List or Stat reported it (a FileInfo), without another round trip:
// opening the files of a listed directory costs no request per file. fi
// must describe a regular file. It has the shape of vfs.InfoOpener's and
// objstore.Bucket's OpenInfo.
func (cl *Client) OpenInfo(ctx context.Context, name string, fi fs.FileInfo) (*File, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	info, ok := fi.(FileInfo)
	if !ok {
		return nil, &Error{Op: "open", Name: name, Msg: fmt.Sprintf("not described by an rdmafs listing (a %T)", fi), Err: ErrInvalid}
	}
	if !info.Mode().IsRegular() {
		return nil, &Error{Op: "open", Name: name, Msg: "not a regular file", Err: ErrInvalid}
	}
	return &File{cl: cl, name: name, info: info}, nil
}
