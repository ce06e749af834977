package main

import (
	"bufio"
	"io"
	"strconv"
	"strings"

	"github.com/gdsload/gdsload/loader"
)

// writeSums writes a line per file with its digest under c, in the order
// given; files without one are left out. The digest of a whole file is
// written as GNU coreutils' sha256sum writes it, "DIGEST  NAME", so that
// `sha256sum -c` checks the files it names: a name holding a backslash, a
// newline or a carriage return is written escaped (\\, \n, \r) on a line
// that begins with a backslash. The digest of part of a file (Partial, such
// as a checkpoint's data region) is labelled with its byte range instead,
// "sha256 of bytes [OFFSET, END)  DIGEST  NAME", a line sha256sum -c
// reports as improperly formatted rather than as a file that failed.
func writeSums(w io.Writer, files []loader.FileResult, c loader.Checksum) error {
	bw := bufio.NewWriter(w)
	for _, f := range files {
		d := f.Digest(c)
		if d == "" {
			continue
		}
		name, escaped := escapeSumName(f.Name)
		switch {
		case f.Partial:
			bw.WriteString(string(c) + " of bytes [" + strconv.FormatInt(f.Offset, 10) + ", " + strconv.FormatInt(f.Offset+f.Bytes, 10) + ")  ")
		case escaped:
			bw.WriteByte('\\')
		}
		bw.WriteString(d + "  " + name + "\n")
	}
	return bw.Flush()
}

// escapeSumName returns name as a checksum line holds it, escaped as
// coreutils' md5sum family escapes it, and whether it had to be.
func escapeSumName(name string) (string, bool) {
	if !strings.ContainsAny(name, "\\\n\r") {
		return name, false
	}
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`).Replace(name), true
}
