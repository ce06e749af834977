package main

/*
#include "internal.h"
*/
import "C"

import (
	"context"
	"encoding/json"
)

// sharesRequest is gdsload_checkpoint_shares's request (gdsload.h): per
// rank, the names of the tensors it wants.
type sharesRequest struct {
	Handle uint64     `json:"checkpoint"`
	Wants  [][]string `json:"wants"`
}

type shareView struct {
	Tensors []string `json:"tensors"`
	Bytes   int64    `json:"bytes"`
}

type sharesResult struct {
	Shares []shareView `json:"shares"`
}

// shares plans which rank reads which tensors of an opened checkpoint
// (checkpoint.Checkpoint.Shares).
func (l *library) shares(_ context.Context, req sharesRequest) ([]byte, error) {
	c := opened.get(req.Handle)
	if c == nil {
		return nil, requestError{"no such checkpoint (closed, or never opened)"}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if opened.get(req.Handle) == nil {
		return nil, requestError{"no such checkpoint (closed, or never opened)"}
	}
	sh, err := c.ck.Shares(req.Wants)
	if err != nil {
		return nil, requestError{err.Error()}
	}
	res := sharesResult{Shares: make([]shareView, len(sh))}
	for i, s := range sh {
		res.Shares[i] = shareView{Tensors: s.Tensors, Bytes: s.Bytes}
		if s.Tensors == nil {
			res.Shares[i].Tensors = []string{}
		}
	}
	return json.Marshal(res)
}

//export gdsload_checkpoint_shares
func gdsload_checkpoint_shares(request *C.char, job *C.uint64_t, errOut **C.char) C.gdsload_status {
	return startJob(request, job, errOut, lib.shares)
}
