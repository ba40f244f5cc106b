package pathdict

import (
	"fmt"
	"runtime"
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

// BenchmarkPathMemory reports the Go heap a dictionary holds per interned path for a scene's
// shape (100k meshes under 100 groups, each with its own last token: docs/architecture.md
// "Memory").
func BenchmarkPathMemory(b *testing.B) {
	const n = 100_000
	strs := make([]string, n)
	for i := range strs {
		strs[i] = fmt.Sprintf("/World/G%d/M%d", i/1000, i)
	}
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		d := New()
		if _, _, err := d.InternPaths(strs); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, "B/path")
		runtime.KeepAlive(d)
	}
	runtime.KeepAlive(strs)
}
