package main

/*
#include "internal.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gdsload/gdsload/shards/checkpoint"
	"github.com/gdsload/gdsload/shards/safetensors"
)

// sharesRequest is gdsload_checkpoint_shares's request (gdsload.h): per
// rank, the requests it wants, as gdsload_checkpoint_fetch takes them.
type sharesRequest struct {
	Handle uint64        `json:"checkpoint"`
	MaxGap int64         `json:"max_gap"`
	Wants  [][]fetchItem `json:"wants"`
}

type readView struct {
	Name  string `json:"name"`
	Want  int    `json:"want"`
	Bytes int64  `json:"bytes"`
}

type shareView struct {
	Reads []readView `json:"reads"`
	Bytes int64      `json:"bytes"`
}

type sharesResult struct {
	Shares []shareView `json:"shares"`
}

// shares plans which rank reads what of an opened checkpoint
// (checkpoint.Checkpoint.Shares).
func (l *library) shares(_ context.Context, req sharesRequest) ([]byte, error) {
	c, release, err := opened.use(req.Handle)
	if err != nil {
		return nil, err
	}
	defer release()
	if req.MaxGap < 0 {
		return nil, requestError{fmt.Sprintf("max_gap %d: want 0 (the default) or more bytes", req.MaxGap)}
	}
	wants := make([][]checkpoint.Request, len(req.Wants))
	for r, list := range req.Wants {
		wants[r] = make([]checkpoint.Request, len(list))
		for i, it := range list {
			wants[r][i].Name = it.Name
			if it.Slice != nil {
				wants[r][i].Slice = make([]safetensors.DimSlice, len(it.Slice))
				for d, s := range it.Slice {
					wants[r][i].Slice[d] = safetensors.DimSlice{Start: s[0], Step: s[1], Count: s[2]}
				}
			}
		}
	}
	sh, err := c.ck.Shares(wants, checkpoint.FetchOptions{MaxGap: req.MaxGap})
	if err != nil { // an unknown name, a selection outside its tensor: the request's fault
		return nil, requestError{err.Error()}
	}
	res := sharesResult{Shares: make([]shareView, len(sh))}
	for i, s := range sh {
		res.Shares[i] = shareView{Reads: make([]readView, len(s.Reads)), Bytes: s.Bytes}
		for j, rd := range s.Reads {
			res.Shares[i].Reads[j] = readView{Name: rd.Name, Want: rd.Want, Bytes: rd.Bytes}
		}
	}
	return json.Marshal(res)
}

//export gdsload_checkpoint_shares
func gdsload_checkpoint_shares(request *C.char, job *C.uint64_t, errOut **C.char) C.gdsload_status {
	return startJob(request, job, errOut, lib.shares)
}
