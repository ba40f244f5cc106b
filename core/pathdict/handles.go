package pathdict

import "sync/atomic"

// Handle layout. A handle is index | kind<<kindShift | dictionary number<<numberShift, with the
// top bit clear (handles stay positive as int64). The index counts up from 1 within one kind of
// one dictionary, so a stage's paths stay dense (core's prim set keeps them as a bitset over
// the index); the kind and the number make handles of different kinds or dictionaries differ.
const (
	indexBits   = 41
	kindShift   = indexBits
	kindBits    = 2
	numberShift = kindShift + kindBits
	numberBits  = 20
	indexMask   = 1<<indexBits - 1
	rootIndex   = 1
)

// IndexMask keeps the index part of a handle: two handles of one kind of one dictionary differ
// exactly in it.
const IndexMask = indexMask

type kind uint64

const (
	kindToken kind = 1
	kindPath  kind = 2
	kindList  kind = 3
)

func (k kind) String() string {
	switch k {
	case kindToken:
		return "token"
	case kindPath:
		return "path"
	default:
		return "path list"
	}
}

// lastNumber numbers dictionaries (1, 2, ...; after 2^20-1 it starts over, so handles of two
// dictionaries made that far apart can coincide; they are only ever meant to catch mistakes).
var lastNumber atomic.Uint64

// tags are the high bits of each kind of handle of one dictionary.
type tags struct{ number, token, path, list uint64 }

func newTags() tags {
	n := (lastNumber.Add(1)-1)%(1<<numberBits-1) + 1
	base := n << numberShift
	return tags{
		number: n,
		token:  base | uint64(kindToken)<<kindShift,
		path:   base | uint64(kindPath)<<kindShift,
		list:   base | uint64(kindList)<<kindShift,
	}
}

// index is the index of handle h if its high bits are tag.
func (t tags) index(h, tag uint64) (uint64, bool) {
	return h & indexMask, h&^indexMask == tag
}

// notFound is the error for a handle that is not a live want of this dictionary, saying why
// when the handle shows it: another kind of handle, or another dictionary's.
func (d *Dictionary) notFound(h uint64, want kind) error {
	msg := "Token " + itoa(h) + " was not found"
	switch want {
	case kindPath:
		msg = "Prim path handle was not found in this dictionary: " + itoa(h)
	case kindList:
		msg = "Path list handle was not found: " + itoa(h)
	}
	k, n := kind(h>>kindShift&(1<<kindBits-1)), h>>numberShift
	switch {
	case h == 0 || k == 0 || n == 0 || n >= 1<<numberBits:
	case n != d.tags.number:
		msg += " (it is a " + k.String() + " of another stage's path dictionary)"
	case k != want:
		msg += " (it is a " + k.String() + " handle, not a " + want.String() + ")"
	}
	return errorf(msg)
}

// Number is this dictionary's number (its handles carry it).
func (d *Dictionary) Number() uint64 { return d.tags.number }
