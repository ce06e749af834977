package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/gdsload/gdsload/cufile"
	"github.com/gdsload/gdsload/loader"
	"github.com/gdsload/gdsload/rdmafs"
	"github.com/gdsload/gdsload/shards/checkpoint"
	"github.com/gdsload/gdsload/shards/safetensors"
)

func TestStatusOf(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("checkpoint x: %w", err) }
	for _, tc := range []struct {
		err  error
		want status
	}{
		{nil, statusOK},
		{wrap(context.Canceled), statusCanceled},
		{wrap(fs.ErrNotExist), statusNotFound},
		{wrap(rdmafs.ErrNotFound), statusNotFound},
		{wrap(fs.ErrPermission), statusPermission},
		{wrap(rdmafs.ErrAuth), statusPermission},
		{wrap(&safetensors.Error{Kind: safetensors.ErrInvalidJSON, Offset: 8}), statusInvalid},
		{wrap(&safetensors.Error{Kind: safetensors.ErrRead, Err: errors.New("EIO")}), statusIO},
		{wrap(&safetensors.Error{Kind: safetensors.ErrRead, Err: fs.ErrNotExist}), statusNotFound},
		{wrap(checkpoint.ErrWeightMap), statusInvalid},
		{wrap(checkpoint.ErrURLDestination), statusInvalid},
		{requestError{"bad"}, statusInvalid},
		{wrap(cufile.ErrUnavailable), statusUnavailable},
		{errors.New("disk on fire"), statusIO},
	} {
		if got := statusOf(tc.err); got != tc.want {
			t.Errorf("statusOf(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// TestErrnoOf: the system error number travels with the error, so the
// caller raises ENOSPC, ENOTDIR or EISDIR rather than a bare EIO.
func TestErrnoOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want syscall.Errno
	}{
		{fmt.Errorf("creating x: %w", &fs.PathError{Op: "open", Path: "f/x", Err: syscall.ENOTDIR}), syscall.ENOTDIR},
		{fmt.Errorf("renaming a to b: %w", &os.LinkError{Op: "rename", Old: "a", New: "b", Err: syscall.EISDIR}), syscall.EISDIR},
		{fmt.Errorf("save x: %w", &loader.NoSpaceError{Dir: "/d", Needed: 10, Err: syscall.ENOSPC}), syscall.ENOSPC},
		{errors.New("disk on fire"), 0},
		{nil, 0},
	} {
		if got := errnoOf(tc.err); got != int(tc.want) {
			t.Errorf("errnoOf(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestParseRequests(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want device
		ok   bool
	}{
		{"", device{}, true}, {"cpu", device{}, true}, {"cuda", device{gpu: true}, true},
		{"cuda:3", device{gpu: true, id: 3}, true}, {"gpu:1", device{gpu: true, id: 1}, true},
		{"cuda:-1", device{}, false}, {"tpu", device{}, false}, {"cuda:x", device{}, false},
	} {
		got, err := parseDevice(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("parseDevice(%q) = %+v, %v", tc.in, got, err)
		}
	}
	if m, err := parseDirect("off"); err != nil || m != loader.DirectOff {
		t.Errorf("parseDirect(off) = %v, %v", m, err)
	}
	if _, err := parseDirect("maybe"); statusOf(err) != statusInvalid {
		t.Errorf("parseDirect(maybe): %v", err)
	}
	if p, err := parseGPUPath("gds"); err != nil || p != loader.RouteGDS {
		t.Errorf("parseGPUPath(gds) = %v, %v", p, err)
	}
	var req loadRequest
	if err := decodeRequest([]byte(`{"path":"x","devcie":"cpu"}`), &req); statusOf(err) != statusInvalid {
		t.Errorf("a misspelled field must be refused, got %v", err)
	}
	if err := decodeRequest([]byte(`{"path":"x","workers":2}`), &req); err != nil || req.Workers != 2 {
		t.Errorf("decodeRequest: %+v, %v", req, err)
	}
	if _, err := parseLoad(loadRequest{Workers: 5000}); statusOf(err) != statusInvalid {
		t.Errorf("5000 workers accepted: %v", err)
	}
}
