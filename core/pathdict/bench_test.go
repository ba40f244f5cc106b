package pathdict

import (
	"fmt"
	"testing"
)

// benchPaths are n distinct prim paths: flat ("/bench/p7", the shape of the Python benches)
// or nested like a scene (64 bodies under each environment).
func benchPaths(n int, nested bool) []string {
	strs := make([]string, n)
	for i := range strs {
		if nested {
			strs[i] = fmt.Sprintf("/World/env%d/body%d", i/64, i%64)
		} else {
			strs[i] = fmt.Sprintf("/bench/p%d", i)
		}
	}
	return strs
}

// BenchmarkCreateListFromStrings interns n new paths into a fresh dictionary per iteration; the
// ns/path metric must stay flat as n grows (the cost is linear in the paths).
func BenchmarkCreateListFromStrings(b *testing.B) {
	for _, shape := range []string{"flat", "nested"} {
		for _, n := range []int{250_000, 1_000_000, 4_000_000} {
			benchCreateList(b, shape, n)
		}
	}
}

func benchCreateList(b *testing.B, shape string, n int) {
	strs := benchPaths(n, shape == "nested")
	b.Run(fmt.Sprintf("%s/paths=%d", shape, n), func(b *testing.B) {
		for b.Loop() {
			if _, err := New().CreateListFromStrings(strs); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/path")
	})
}
