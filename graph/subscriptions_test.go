package graph

import "testing"

func TestRecent(t *testing.T) {
	for _, tc := range []struct {
		name string
		seqs []int64
		want []bool
	}{
		{"in order", []int64{1, 2, 3}, []bool{true, true, true}},
		{"the latest again", []int64{1, 2, 2}, []bool{true, true, false}},
		{"an older one again", []int64{5, 6, 7, 5, 6}, []bool{true, true, true, false, false}},
		{"a new one below the highest", []int64{5, 7, 6, 6}, []bool{true, true, true, false}},
		{"a replay of a run", []int64{1, 2, 3, 4, 2, 3, 4, 5}, []bool{true, true, true, true, false, false, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r recent
			for i, seq := range tc.seqs {
				if got := r.first(seq); got != tc.want[i] {
					t.Errorf("seq %d (#%d): first = %v, want %v", seq, i, got, tc.want[i])
				}
			}
		})
	}
	// Only the last len(ring) are remembered.
	var r recent
	for seq := int64(1); seq <= 2000; seq++ {
		r.first(seq)
	}
	if !r.first(2000 - int64(len(r.ring))) { // just before the ring's oldest
		t.Error("a number older than the ring was taken for a repeat")
	}
	if r.first(2000) {
		t.Error("the latest number was taken as new")
	}
}
