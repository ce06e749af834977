// Package humanize reads and writes the quantities people type and read:
// byte counts with binary units ("4MiB", "1.5 GiB") and counted nouns
// ("1 file", "2 files").
package humanize

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ParseBytes reads a byte count: a plain number, or one with a binary
// suffix (K, M, G, T, optionally followed by "i", "iB" or "B"; all powers
// of 1024, as dd and fio read them), case-insensitive. Negative counts and
// counts over 2^62 are refused.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	t = strings.TrimSuffix(t, "B")
	t = strings.TrimSuffix(t, "I")
	mult := int64(1)
	if t != "" {
		switch t[len(t)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:len(t)-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("size %q: want a byte count such as 4194304, 4M or 4MiB", s)
	}
	return n * mult, nil
}

// Bytes writes a byte count with a binary unit: "512 B", "1.5 MiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// Count writes n and the noun, plural unless n is 1: "1 file", "0 files",
// "3 samples". The plural adds "s", which is right for the nouns gdsload
// counts (files, samples, shards, tensors, chunks, runs).
func Count[T ~int | ~int64](n T, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// CountedReasons states each distinct reason once, in sorted order, with
// how many of files it concerns: "O_DIRECT refused by ramfs (3 of 5 files)".
func CountedReasons(counts map[string]int, files int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s (%d of %s)", k, counts[k], Count(files, "file"))
	}
	return strings.Join(parts, "; ")
}
