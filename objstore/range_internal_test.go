package objstore

import "testing"

func TestParseContentRange(t *testing.T) {
	cases := []struct {
		in                 string
		first, last, total int64
		ok                 bool
	}{
		{"bytes 0-9/10", 0, 9, 10, true},
		{"bytes 5-5/100", 5, 5, 100, true},
		{"bytes 0-9/*", 0, 0, 0, false},
		{"bytes 9-0/10", 0, 0, 0, false},
		{"bytes 0-10/10", 0, 0, 0, false},
		{"bytes -1-9/10", 0, 0, 0, false},
		{"bytes 0-9", 0, 0, 0, false},
		{"0-9/10", 0, 0, 0, false},
		{"", 0, 0, 0, false},
		{"bytes 0-99999999999999999999/1", 0, 0, 0, false},
	}
	for _, c := range cases {
		f, l, tot, ok := parseContentRange(c.in)
		if ok != c.ok || f != c.first || l != c.last || tot != c.total {
			t.Errorf("parseContentRange(%q) = %d, %d, %d, %v; want %d, %d, %d, %v", c.in, f, l, tot, ok, c.first, c.last, c.total, c.ok)
		}
	}
}

// FuzzParseContentRange: an accepted Content-Range is a non-empty span
// inside the total.
func FuzzParseContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-9/10", "bytes 1-1/2", "bytes 0-0/*", "bytes a-b/c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		first, last, total, ok := parseContentRange(s)
		if ok && (first < 0 || last < first || total <= last) {
			t.Fatalf("parseContentRange(%q) accepted %d-%d/%d", s, first, last, total)
		}
	})
}

func TestJitter(t *testing.T) {
	for n := 1; n < 100; n++ {
		if d := jitter(n); d <= 0 || d > backoffMax+1e6 {
			t.Fatalf("jitter(%d) = %v, outside (0, %v]", n, d, backoffMax)
		}
	}
}
