package column

// keyStore holds each row's sealed state. While every row is in the same state (the common
// case: whole-column writes sealed together) it stores that state once instead of per row.
type keyStore struct {
	n       int
	uniform key   // the state of every row while states is nil
	states  []key // per row, once rows differ
}

func (k *keyStore) len() int { return k.n }

func (k *keyStore) get(r int32) key {
	if k.states == nil {
		return k.uniform
	}
	return k.states[r]
}

func (k *keyStore) materialize() {
	k.states = make([]key, k.n, k.n+k.n/4+1)
	for i := range k.states {
		k.states[i] = k.uniform
	}
}

func (k *keyStore) set(r int32, v key) {
	if k.states == nil {
		if v == k.uniform {
			return
		}
		k.materialize()
	}
	k.states[r] = v
}

// add appends a row in state v.
func (k *keyStore) add(v key) {
	if k.states == nil {
		if k.n == 0 {
			k.uniform = v
		}
		if v == k.uniform {
			k.n++
			return
		}
		k.materialize()
	}
	k.states = append(k.states, v)
	k.n++
}

// setAll puts every row in state v.
func (k *keyStore) setAll(v key) {
	k.states, k.uniform = nil, v
}

// anyNotVisible reports whether some row's sealed version is missing or a tombstone.
func (k *keyStore) anyNotVisible() bool {
	if k.states == nil {
		return k.n > 0 && !k.uniform.visible()
	}
	for _, s := range k.states {
		if !s.visible() {
			return true
		}
	}
	return false
}
