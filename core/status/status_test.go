package status

import (
	"errors"
	"fmt"
	"testing"
)

// leafOOM stands for an allocation error of a leaf package (core/buffer) that cannot import
// this one.
type leafOOM struct{}

func (leafOOM) Error() string     { return "cannot allocate 8 bytes" }
func (leafOOM) OutOfMemory() bool { return true }

func TestCodeOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Code
	}{
		{nil, OK},
		{Errorf(NotFound, "x"), NotFound},
		{fmt.Errorf("wrapped: %w", Errorf(Timeout, "x")), Timeout},
		{leafOOM{}, OutOfMemory},
		{fmt.Errorf("copy: %w", leafOOM{}), OutOfMemory},
		{errors.New("plain"), Internal},
	} {
		if got := CodeOf(tc.err); got != tc.want {
			t.Errorf("CodeOf(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if got := MessageOf(leafOOM{}); got != "cannot allocate 8 bytes" {
		t.Errorf("MessageOf = %q", got)
	}
}

func TestMalformedIsAnInvalidArgument(t *testing.T) {
	err := fmt.Errorf("decode: %w", Malformedf("index_map and mask are mutually exclusive"))
	if CodeOf(err) != InvalidArgument || !IsMalformed(err) {
		t.Fatalf("CodeOf %v, IsMalformed %v", CodeOf(err), IsMalformed(err))
	}
	if IsMalformed(Errorf(InvalidArgument, "x")) || IsMalformed(errors.New("x")) || IsMalformed(nil) {
		t.Fatal("only Malformedf errors are malformed")
	}
}
