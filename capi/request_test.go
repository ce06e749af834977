package main

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/gdsload/gdsload/shards/iterator"
	"github.com/gdsload/gdsload/shards/webdataset"
)

// Any request document either decodes into options that are in range or
// is refused as invalid; nothing panics.
func FuzzLoadRequest(f *testing.F) {
	f.Add([]byte(`{"path":"m.safetensors","device":"cuda:1","gpu_path":"gds","direct":"off","workers":4,"chunk_size":1048576}`))
	f.Add([]byte(`{"path":"x","device":"cuda:99999999999999999999"}`))
	f.Add([]byte(`{"path":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		var req loadRequest
		if err := decodeRequest(doc, &req); err != nil {
			if statusOf(err) != statusInvalid {
				t.Fatalf("decode error %v is not invalid", err)
			}
			return
		}
		o, err := parseLoad(req)
		if err != nil {
			if statusOf(err) != statusInvalid {
				t.Fatalf("parse error %v is not invalid", err)
			}
			return
		}
		if o.dev.id < 0 || o.lopts.Workers < 0 || o.lopts.Workers > 1024 || o.lopts.ChunkSize < 0 || o.lopts.ChunkSize > 1<<30 {
			t.Fatalf("out-of-range options accepted: %+v", o)
		}
	})
}

// decodeSample reads gdsload.h's sample record, as the Python package does.
func decodeSample(t *testing.T, b []byte) iterator.Sample {
	t.Helper()
	r := bytes.NewReader(b)
	var head struct {
		Version                uint32
		Epoch, Position, Index int64
		Padding                uint8
	}
	if err := binary.Read(r, binary.LittleEndian, &head); err != nil || head.Version != sampleLayout {
		t.Fatalf("record header %+v: %v", head, err)
	}
	str := func() string {
		var n uint32
		if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
			t.Fatal(err)
		}
		s := make([]byte, n)
		if _, err := r.Read(s); err != nil && n > 0 {
			t.Fatal(err)
		}
		return string(s)
	}
	s := iterator.Sample{Epoch: head.Epoch, Position: head.Position, Index: head.Index, Padding: head.Padding == 1, Key: str(), Shard: str()}
	var nf uint32
	binary.Read(r, binary.LittleEndian, &nf)
	for range nf {
		ext := str()
		var n uint64
		binary.Read(r, binary.LittleEndian, &n)
		data := make([]byte, n)
		r.Read(data)
		s.Fields = append(s.Fields, webdataset.Field{Ext: ext, Data: data})
	}
	if r.Len() != 0 {
		t.Fatalf("%d bytes left after the record", r.Len())
	}
	return s
}

func TestSampleRecordRoundTrip(t *testing.T) {
	in := &iterator.Sample{Key: "k/ünï", Shard: "shard-0001.tar", Index: 7, Epoch: 3, Position: 1 << 40, Padding: true,
		Fields: []webdataset.Field{{Ext: "jpg", Data: []byte{0xff, 0xd8, 0}}, {Ext: "seg.png", Data: nil}, {Ext: "cls", Data: []byte("12")}}}
	p, n, err := encodeSample(in)
	if err != nil {
		t.Fatal(err)
	}
	out := decodeSample(t, sampleBytes(p, n))
	if out.Key != in.Key || out.Shard != in.Shard || out.Index != in.Index || out.Epoch != in.Epoch || out.Position != in.Position || !out.Padding || len(out.Fields) != 3 {
		t.Fatalf("round trip: %+v, want %+v", out, in)
	}
	for i, f := range in.Fields {
		if out.Fields[i].Ext != f.Ext || !bytes.Equal(out.Fields[i].Data, f.Data) {
			t.Errorf("field %d: %+v, want %+v", i, out.Fields[i], f)
		}
	}
}
