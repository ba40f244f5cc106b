package core

import "slices"

// Attribute aliases: the transform columns have a public name (what clients, population and
// the hierarchy model speak of) and a storage name (what the stage keeps and what attribute
// discovery reports). Every entry point that takes an attribute resolves an alias to its
// storage name first, so both names address one column: one set of rows, one floor, one
// change history and one set of overlap checks (docs/architecture.md, "Attribute aliases").
const (
	AttrLocalMatrix           = "omni:fabric:localMatrix"
	AttrFabricResetXformStack = "omni:fabric:resetXformStack"
)

// attributeAliases pairs each public name with its storage name (a slice: the names are
// interned in this order, so token numbers do not depend on map iteration).
var attributeAliases = [][2]string{
	{AttrXform, AttrLocalMatrix},
	{AttrResetXformStack, AttrFabricResetXformStack},
}

// AttributeAliases is the alias table as (public name, storage name) pairs, a copy in the
// table's order: bindings that speak of both names use it rather than a table of their own
// (USD export turns a storage name back into its USD transform, docs/export.md).
func AttributeAliases() [][2]string { return slices.Clone(attributeAliases) }

// aliasTokens maps the token of each public name to the token of its storage name (the
// names are interned when the stage is made, so the lookup needs no dictionary call).
type aliasTokens map[uint64]uint64

func newAliasTokens(s *Stage) aliasTokens {
	out := aliasTokens{}
	for _, pair := range attributeAliases {
		out[s.builtinToken(pair[0])] = s.builtinToken(pair[1])
	}
	return out
}

// canonicalAttr is the token of the column attribute tok addresses: its storage name's for
// an alias, tok itself otherwise.
func (s *Stage) canonicalAttr(tok uint64) uint64 {
	if storage, ok := s.aliases[tok]; ok {
		return storage
	}
	return tok
}

// canonicalAttrs is attrs with every alias resolved (a new slice; attrs is left as it is).
func (s *Stage) canonicalAttrs(attrs []uint64) []uint64 {
	out := make([]uint64, len(attrs))
	for i, a := range attrs {
		out[i] = s.canonicalAttr(a)
	}
	return out
}
