package policy

// rankHeap hands out candidates best first. A heap instead of a sort:
// Select usually stops at the first few, so ranking 100,000 tags costs
// O(n) to build plus O(log n) per candidate taken.
type rankHeap struct {
	entries []entry
	better  func(a, b *entry) bool
	idx     []int32
}

func (h *rankHeap) init() {
	h.idx = make([]int32, len(h.entries))
	for i := range h.idx {
		h.idx[i] = int32(i)
	}
	for i := len(h.idx)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *rankHeap) len() int { return len(h.idx) }

// pop removes and returns the index of the best remaining entry.
func (h *rankHeap) pop() int {
	top := h.idx[0]
	last := len(h.idx) - 1
	h.idx[0] = h.idx[last]
	h.idx = h.idx[:last]
	h.down(0)
	return int(top)
}

func (h *rankHeap) first(i, j int) bool {
	return h.better(&h.entries[h.idx[i]], &h.entries[h.idx[j]])
}

func (h *rankHeap) down(i int) {
	n := len(h.idx)
	for {
		best := i
		if l := 2*i + 1; l < n && h.first(l, best) {
			best = l
		}
		if r := 2*i + 2; r < n && h.first(r, best) {
			best = r
		}
		if best == i {
			return
		}
		h.idx[i], h.idx[best] = h.idx[best], h.idx[i]
		i = best
	}
}
