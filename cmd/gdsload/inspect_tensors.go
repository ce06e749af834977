package main

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gdsload/gdsload/shards/npy"
	"github.com/gdsload/gdsload/shards/safetensors"
)

// errNotTensorFile is returned by inspectTensorFile for files that are not
// .safetensors or .npy, so the caller can try other inspectors.
var errNotTensorFile = errors.New("not a tensor file: the name does not end in .safetensors or .npy")

// safetensorsReport is the --json form of an inspected safetensors file.
type safetensorsReport struct {
	Format     string              `json:"format"` // "safetensors"
	Tensors    []tensorEntryReport `json:"tensors"`
	Metadata   map[string]string   `json:"metadata"`
	DataOffset int64               `json:"data_offset"` // file offset of the data region
	Bytes      int64               `json:"bytes"`       // length of the data region
}

// tensorEntryReport is one tensor of a safetensorsReport, in file order.
type tensorEntryReport struct {
	Name        string   `json:"name"`
	Dtype       string   `json:"dtype"`
	Shape       []int64  `json:"shape"`
	Bytes       int64    `json:"bytes"`
	DataOffsets [2]int64 `json:"data_offsets"` // relative to data_offset, as in the header
}

// npyReport is the --json form of an inspected .npy file.
type npyReport struct {
	Format       string  `json:"format"`  // "npy"
	Version      string  `json:"version"` // "1.0", "2.0" or "3.0"
	Dtype        string  `json:"dtype"`   // the descr, e.g. "<f4"
	FortranOrder bool    `json:"fortran_order"`
	Shape        []int64 `json:"shape"`
	DataOffset   int64   `json:"data_offset"`
	Bytes        int64   `json:"bytes"` // length of the data
}

// inspectTensorFile validates the header of a .safetensors or .npy file and
// returns a JSON-able report (*safetensorsReport or *npyReport) and the same
// as human-readable text. It reads only the header. Other extensions give
// (nil, "", errNotTensorFile); invalid files give the format package's error,
// which names the file, the offset and the failed check.
func inspectTensorFile(path string) (any, string, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".safetensors":
		return inspectSafetensors(path)
	case ".npy":
		return inspectNPY(path)
	}
	return nil, "", errNotTensorFile
}

func inspectSafetensors(path string) (any, string, error) {
	f, err := safetensors.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	h := f.Header
	rep := &safetensorsReport{
		Format: "safetensors", Tensors: make([]tensorEntryReport, len(h.Tensors)),
		Metadata: map[string]string{}, DataOffset: h.DataOffset, Bytes: h.DataLen,
	}
	for k, v := range h.Metadata {
		rep.Metadata[k] = v
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: safetensors, %d tensors, %d data bytes at offset %d\n", path, len(h.Tensors), h.DataLen, h.DataOffset)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDTYPE\tSHAPE\tBYTES\tDATA_OFFSETS")
	for i, t := range h.Tensors {
		rep.Tensors[i] = tensorEntryReport{Name: t.Name, Dtype: t.Dtype, Shape: jsonShape(t.Shape), Bytes: t.Bytes(), DataOffsets: [2]int64{t.Begin, t.End}}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%d\t[%d, %d)\n", t.Name, t.Dtype, t.Shape, t.Bytes(), t.Begin, t.End)
	}
	tw.Flush()
	if len(h.Metadata) > 0 {
		b.WriteString("metadata:\n")
		tw = tabwriter.NewWriter(&b, 0, 4, 1, ' ', 0)
		for _, k := range slices.Sorted(maps.Keys(h.Metadata)) {
			fmt.Fprintf(tw, "  %s\t= %s\n", k, h.Metadata[k])
		}
		tw.Flush()
	}
	return rep, b.String(), nil
}

func inspectNPY(path string) (any, string, error) {
	h, err := npy.ParseFile(path)
	if err != nil {
		return nil, "", err
	}
	rep := &npyReport{
		Format: "npy", Version: fmt.Sprintf("%d.%d", h.Version[0], h.Version[1]), Dtype: h.Descr,
		FortranOrder: h.FortranOrder, Shape: jsonShape(h.Shape), DataOffset: h.DataOffset, Bytes: h.DataLen,
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: npy %s\n", path, rep.Version)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "dtype\t%s\n", h.Descr)
	fmt.Fprintf(tw, "fortran_order\t%t\n", h.FortranOrder)
	fmt.Fprintf(tw, "shape\t%v\n", h.Shape)
	fmt.Fprintf(tw, "bytes\t%d at offset %d\n", h.DataLen, h.DataOffset)
	tw.Flush()
	return rep, b.String(), nil
}

// jsonShape makes a scalar's shape encode as [] rather than null.
func jsonShape(s []int64) []int64 {
	if s == nil {
		return []int64{}
	}
	return s
}
